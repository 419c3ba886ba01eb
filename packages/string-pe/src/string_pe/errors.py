"""Errors raised by string-pe: every bad input fails fast with a message naming the field and what is allowed."""

from __future__ import annotations

from icml25.errors import UserInputError


class PositionEncodingError(UserInputError):
    """Bad input to a position encoding, attention layer, model or data generator (a :class:`ValueError`)."""
