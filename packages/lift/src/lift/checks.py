"""Argument checks of lift that need no torch, so the CLI refuses bad input before the ~4 s torch import.

Every check raises :class:`lift.errors.LiftConfigError` (a ``ValueError``) naming the argument as given in ``name``
(a Python name such as ``lr``, or a flag such as ``--lr`` when the CLI calls it).
"""

from __future__ import annotations

import math
from typing import Any

from lift.errors import LiftConfigError

__all__ = ["check_int", "check_hparams", "check_budget", "flag"]


def flag(name: str) -> str:
    """The CLI flag of a config field: ``update_interval`` -> ``--update-interval``."""
    return "--" + name.replace("_", "-")


def _is_real(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def check_int(value: Any, name: str, *, low: int, high: int | None = None) -> int:
    """``value`` must be an int (not a bool) in ``[low, high]``; returns it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise LiftConfigError(f"{name} must be an int, got {value!r}")
    if value < low or (high is not None and value > high):
        rng = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise LiftConfigError(f"{name} must be {rng}; got {value}")
    return value


def check_hparams(lr: Any, betas: Any, eps: Any, weight_decay: Any, *, flags: bool = False) -> None:
    """AdamW hyper-parameters: lr, eps, weight_decay finite and >= 0; betas a pair in [0, 1). ``flags``: name them
    as CLI flags (``--lr``)."""
    n = flag if flags else (lambda s: s)
    # a torch.Tensor lr is not an int/float, so it is refused here too (the optimizer needs a Python number)
    if not _is_real(lr) or not math.isfinite(lr) or lr < 0:
        raise LiftConfigError(f"{n('lr')} must be a finite number >= 0; got {lr!r}")
    try:
        b1, b2 = betas
        ok = all(_is_real(b) and 0.0 <= b < 1.0 for b in (b1, b2))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise LiftConfigError(f"{n('betas')} must be a pair (beta1, beta2) with each in [0, 1); got {betas!r}")
    if not _is_real(eps) or not math.isfinite(eps) or eps < 0:
        raise LiftConfigError(f"{n('eps')} must be a finite number >= 0; got {eps!r}")
    if not _is_real(weight_decay) or not math.isfinite(weight_decay) or weight_decay < 0:
        raise LiftConfigError(f"{n('weight_decay')} must be a finite number >= 0; got {weight_decay!r}")


def check_budget(budget_rank: Any, density: Any, *, flags: bool = False) -> None:
    """Exactly one of ``budget_rank`` (an int >= 1) and ``density`` (a number in (0, 1])."""
    n = flag if flags else (lambda s: s)
    if (budget_rank is None) == (density is None):
        raise LiftConfigError(f"give exactly one of {n('budget_rank')} (LoRA-equivalent rank r_b >= 1) or "
                              f"{n('density')} in (0, 1]")
    if budget_rank is not None:
        check_int(budget_rank, n("budget_rank"), low=1)
    elif not _is_real(density) or not math.isfinite(density) or not 0.0 < float(density) <= 1.0:
        raise LiftConfigError(f"{n('density')} must be a number in (0, 1]; got {density!r}")
