"""Errors of sggm: all derive from icml25's UserInputError (exit 2 with one `error:` line)."""

from icml25.errors import UserInputError


class SggmError(UserInputError):
    """Bad input to sggm."""
