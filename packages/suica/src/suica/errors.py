"""Errors raised by suica for bad input (all are ``ValueError`` subclasses, so the CLI prints ``error: ...``)."""

from __future__ import annotations

from icml25.errors import UserInputError


class SUICAInputError(UserInputError):
    """Bad user input: the message names the field and what is allowed."""


class ExtrapolationError(SUICAInputError):
    """Query coordinates lie outside the training frame and ``allow_extrapolation`` was not set."""
