"""Errors raised by kea on bad input; all derive from :class:`icml25.errors.UserInputError` (exit 2, one line)."""

from __future__ import annotations

from icml25.errors import UserInputError


class KEAError(UserInputError):
    """Base class of every user-facing kea error."""


class KEAConfigError(KEAError):
    """Invalid configuration of a KEA/SAC component (the message names the field and the allowed values)."""
