"""Errors raised by focoop on bad input (all are ``ValueError`` subclasses, so the CLI prints ``error: ...``)."""

from __future__ import annotations

from icml25.errors import UserInputError


class FOCoOpConfigError(UserInputError):
    """A configuration value or an input array is invalid; the message names the field and what is allowed."""
