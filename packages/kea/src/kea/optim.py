"""A minimal Adam (Kingma & Ba, 2015) with the exact update of ``torch.optim.Adam`` (no weight decay/amsgrad).

Why not ``torch.optim.Adam``: every ``torch.optim`` step goes through ``torch._disable_dynamo``, whose first call
imports ``torch._dynamo`` (several CPU-seconds per process, ~25 s wall on a loaded 2-core machine) and adds a
wrapper on every step. KEA takes tens of thousands of tiny steps in several worker processes, so this 30-line
version (same formulas, ``torch._foreach`` kernels) is used instead. Update, with g the gradient and t the step:

    m ← β₁m + (1−β₁)g     v ← β₂v + (1−β₂)g²     θ ← θ − (lr/(1−β₁ᵗ)) · m / (√v/√(1−β₂ᵗ) + ε)
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch


class Adam:
    """``Adam(params, *, lr, betas=(0.9, 0.999), eps=1e-8)`` with ``zero_grad`` and ``step`` like torch's."""

    def __init__(self, params: Iterable[torch.nn.Parameter], *, lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        self.params = [p for p in params]
        if not lr > 0:
            raise ValueError(f"lr must be > 0, got {lr!r}")
        self.lr, self.betas, self.eps = float(lr), betas, float(eps)
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.t = 0

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        idx = [i for i, p in enumerate(self.params) if p.grad is not None]
        if not idx:
            return
        self.t += 1
        b1, b2 = self.betas
        ps = [self.params[i] for i in idx]
        gs = [self.params[i].grad for i in idx]
        ms = [self.m[i] for i in idx]
        vs = [self.v[i] for i in idx]
        torch._foreach_lerp_(ms, gs, 1 - b1)
        torch._foreach_mul_(vs, b2)
        torch._foreach_addcmul_(vs, gs, gs, 1 - b2)
        bias1, bias2 = 1 - b1 ** self.t, 1 - b2 ** self.t
        denom = torch._foreach_sqrt(vs)
        torch._foreach_div_(denom, math.sqrt(bias2))
        torch._foreach_add_(denom, self.eps)
        torch._foreach_addcdiv_(ps, ms, denom, -self.lr / bias1)
