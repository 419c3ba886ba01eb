"""Errors of sggm: all derive from icml25's UserInputError (exit 2 with one `error:` line)."""

from __future__ import annotations

import math

from icml25.errors import UserInputError


class SggmError(UserInputError):
    """Bad input to sggm (a graph, a schedule, a time grid, a covariance): names the field and what is allowed."""


def check_time_grid(*, n_steps: int, T: float, t_min: float) -> None:
    """Refuse ``N < 1``, ``T <= 0`` (or not finite) and ``t_min`` outside ``(0, T)``."""
    if isinstance(n_steps, bool) or not isinstance(n_steps, int) or n_steps < 1:
        raise SggmError(f"n_steps must be an integer >= 1, got {n_steps!r}")
    if not (isinstance(T, (int, float)) and math.isfinite(T) and T > 0):
        raise SggmError(f"T must be a finite number > 0, got {T!r}")
    if not (isinstance(t_min, (int, float)) and math.isfinite(t_min) and 0 < t_min < T):
        raise SggmError(f"t_min must lie in (0, T) = (0, {T}), got {t_min!r}")
