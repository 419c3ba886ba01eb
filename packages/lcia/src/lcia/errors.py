"""Errors of lcia: all derive from icml25's UserInputError (exit 2 with one `error:` line)."""

from icml25.errors import UserInputError


class LciaError(UserInputError):
    """Bad input to lcia."""
