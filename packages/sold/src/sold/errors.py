"""Errors of sold: all derive from icml25's UserInputError (exit 2 with one `error:` line)."""

from icml25.errors import UserInputError


class SoldError(UserInputError):
    """Bad input to sold."""
