"""Errors of private-robust-align: all derive from icml25's UserInputError (exit 2 with one `error:` line)."""

from icml25.errors import UserInputError


class PrivateRobustAlignError(UserInputError):
    """Bad input to private-robust-align."""
