"""Errors of k2ie: all derive from icml25's UserInputError (exit 2 with one `error:` line)."""

from icml25.errors import UserInputError


class K2ieError(UserInputError):
    """Bad input to k2ie (the message names the field and what is allowed)."""
