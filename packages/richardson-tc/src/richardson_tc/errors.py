"""Errors of richardson-tc: all derive from icml25's UserInputError (exit 2 with one `error:` line)."""

from icml25.errors import UserInputError


class RichardsonTcError(UserInputError):
    """Bad input to richardson-tc (the message names the field and what is allowed)."""
