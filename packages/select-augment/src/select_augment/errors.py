"""Errors of select-augment: all derive from icml25's UserInputError (exit 2 with one `error:` line)."""

from icml25.errors import UserInputError


class SelectAugmentError(UserInputError):
    """Bad input to select-augment."""
