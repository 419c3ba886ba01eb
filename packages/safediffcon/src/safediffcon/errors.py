"""Errors of safediffcon: all derive from icml25's UserInputError (exit 2 with one `error:` line)."""

from icml25.errors import UserInputError


class SafediffconError(UserInputError):
    """Bad input to safediffcon."""
