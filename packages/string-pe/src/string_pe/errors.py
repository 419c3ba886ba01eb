"""Errors raised by string-pe: every bad input fails fast with a message naming the field and what is allowed."""

from __future__ import annotations


class PositionEncodingError(ValueError):
    """Bad input to a position encoding, attention layer, model or data generator (a :class:`ValueError`)."""
