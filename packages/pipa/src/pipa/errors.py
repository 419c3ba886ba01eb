"""Errors raised by pipa on bad input; all derive from :class:`icml25.errors.UserInputError` (exit 2, one line)."""

from __future__ import annotations

from icml25.errors import UserInputError


class PIPAError(UserInputError):
    """Bad input to a PIPA loss, dataset or trainer."""
