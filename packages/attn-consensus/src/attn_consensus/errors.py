"""Errors of attn-consensus: all derive from icml25's UserInputError (exit 2 with one `error:` line)."""

from icml25.errors import UserInputError


class AttnConsensusError(UserInputError):
    """Bad input to attn-consensus."""
