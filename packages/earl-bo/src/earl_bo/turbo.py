"""TuRBO-1 (Eriksson et al., NeurIPS 2019): trust-region Thompson sampling, the behaviour policy of EARL-BO's
off-policy stage and a baseline.

State machine (defaults of botorch's TuRBO tutorial): the side length ``L`` of the trust region doubles after
``success_tolerance`` consecutive improvements (capped at ``length_max``), halves after ``failure_tolerance``
consecutive failures, and a restart is flagged when ``L < length_min``. The region is centred at the incumbent, its
sides scaled by the GP lengthscales ``w_i = l_i / (prod_j l_j)^(1/d)``::

    lb = clip(x* - w L / 2, 0, 1),   ub = clip(x* + w L / 2, 0, 1)

Candidates are Sobol points in the region where only a random subset of coordinates (probability ``min(20/d, 1)``)
moves away from the incumbent; the query is the argmax of one posterior draw over them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass
class TurboState:
    """Trust-region state of TuRBO-1 (in the unit cube, maximisation)."""

    dim: int
    length: float = 0.8
    length_min: float = 0.5 ** 7
    length_max: float = 1.6
    success_counter: int = 0
    success_tolerance: int = 10
    failure_counter: int = 0
    failure_tolerance: int = 0
    best_value: float = -math.inf
    restart: bool = False

    def __post_init__(self) -> None:
        if self.failure_tolerance <= 0:
            self.failure_tolerance = max(4, self.dim)

    def update(self, y_next: float) -> TurboState:
        """Count a success when ``y_next`` beats the best by ``1e-3 |best|``; resize; flag a restart."""
        if y_next > self.best_value + 1e-3 * abs(self.best_value):
            self.success_counter += 1
            self.failure_counter = 0
        else:
            self.success_counter = 0
            self.failure_counter += 1
        if self.success_counter == self.success_tolerance:
            self.length = min(2.0 * self.length, self.length_max)
            self.success_counter = 0
        elif self.failure_counter == self.failure_tolerance:
            self.length /= 2.0
            self.failure_counter = 0
        self.best_value = max(self.best_value, float(y_next))
        if self.length < self.length_min:
            self.restart = True
        return self


def trust_region(center: torch.Tensor, lengthscale: torch.Tensor, length: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Bounds ``(lb, ub)`` of the trust region around ``center [..., d]`` (unit cube)."""
    w = lengthscale.to(center) / lengthscale.to(center).mean()
    w = w / w.prod().pow(1.0 / w.numel())
    return (center - w * length / 2).clamp(0, 1), (center + w * length / 2).clamp(0, 1)


def candidates(center: torch.Tensor, lengthscale: torch.Tensor, length: float, *, n: int,
               generator: torch.Generator) -> torch.Tensor:
    """``n`` TuRBO candidates around each ``center [B, d]`` -> ``[B, n, d]`` (Sobol points, perturbation mask)."""
    from torch.quasirandom import SobolEngine

    b, d = center.shape
    lb, ub = trust_region(center, lengthscale, length)  # [B, d]
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
    sobol = SobolEngine(d, scramble=True, seed=seed).draw(n * b).to(center).reshape(b, n, d)
    pert = lb.unsqueeze(1) + (ub - lb).unsqueeze(1) * sobol
    prob = min(20.0 / d, 1.0)
    # the draws come from the CPU ``generator`` (the same stream on every device), then move to ``center``'s device
    mask = torch.rand(b, n, d, generator=generator, dtype=center.dtype) <= prob
    none = mask.sum(-1) == 0  # at least one coordinate moves
    if none.any():
        idx = torch.randint(0, d, (int(none.sum()),), generator=generator)
        mask[none, idx] = True
    mask = mask.to(center.device)
    return torch.where(mask, pert, center.unsqueeze(1).expand(b, n, d))
