"""Errors raised by habi on bad input; all derive from :class:`icml25.errors.UserInputError` (exit 2, one line)."""

from __future__ import annotations

from icml25.errors import UserInputError


class HabiError(UserInputError):
    """Base class of every user-facing habi error."""


class HabiConfigError(HabiError):
    """An option or a model configuration is out of range (the message names the field)."""


class DataError(HabiError):
    """The offline data set is malformed (missing keys, NaN/inf, wrong sizes, empty, actions out of range)."""
