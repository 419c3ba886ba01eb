"""Errors of earl-bo: all derive from icml25's UserInputError (exit 2 with one `error:` line)."""

from icml25.errors import UserInputError


class EarlBoError(UserInputError):
    """Bad input to earl-bo."""
