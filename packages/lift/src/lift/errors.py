"""Errors raised by lift for bad input (all are ``ValueError`` subclasses, so the CLI prints them cleanly)."""

from __future__ import annotations

from icml25.errors import UserInputError


class LiftConfigError(UserInputError):
    """An invalid hyper-parameter or input (the message names the field and what is allowed)."""


class MaskError(LiftConfigError):
    """A mask of the wrong shape, dtype or cardinality, or a weight a mask cannot be computed for."""
