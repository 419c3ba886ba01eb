"""Errors of pes: all derive from icml25's UserInputError (exit 2 with one `error:` line)."""

from icml25.errors import UserInputError


class PesError(UserInputError):
    """Bad input to pes (the message names the field and what is allowed)."""
