"""Errors of sold: all derive from icml25's UserInputError (exit 2 with one `error:` line)."""

from __future__ import annotations

import math

from icml25.errors import UserInputError


class SoldError(UserInputError):
    """Bad input to sold."""


def check_unit_interval(name: str, value: float) -> float:
    """γ, λ and friends: a finite number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0.0 <= value <= 1.0:
        raise SoldError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def check_heads(name: str, dim: int, heads: int) -> None:
    """A token width must split evenly over the attention heads."""
    if heads < 1 or dim % heads != 0:
        raise SoldError(f"{name} ({dim}) must be divisible by the number of heads ({heads})")


def check_context(min_context: int, max_context: int, horizon: int | None = None,
                  seq_len: int | None = None) -> None:
    """``1 <= min_context <= max_context`` and sequences of at least ``max_context + horizon`` steps."""
    if min_context < 1:
        raise SoldError(f"min_context must be >= 1, got {min_context}")
    if min_context > max_context:
        raise SoldError(f"min_context ({min_context}) must be <= max_context ({max_context})")
    if horizon is not None and horizon < 1:
        raise SoldError(f"horizon must be >= 1, got {horizon}")
    if seq_len is not None and horizon is not None and seq_len < max_context + horizon:
        raise SoldError(f"sequence length ({seq_len}) must be >= max_context + horizon "
                        f"({max_context} + {horizon} = {max_context + horizon})")
