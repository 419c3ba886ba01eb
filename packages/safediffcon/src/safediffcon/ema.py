"""The released code's exponential moving average of the weights, as an explicit option of InfFT.

The released InfFT (paper note, audit "Only the first InfFT update ever reaches the evaluated model") fine-tunes
and samples the *online* network but calibrates and evaluates an EMA copy whose update rule (the one of the
``ema-pytorch`` package with the released settings) is:

* ``update()`` is called after every optimiser step; only calls whose 0-based counter ``k`` is a multiple of
  ``update_every`` (10) act;
* an acting call with ``k <= update_after_step`` (100) *copies* the online weights;
* later acting calls move the copy, ``ema <- d ema + (1 - d) online``, with the warmed-up decay
  ``d = min(beta, 1 - (1 + e)^(-2/3))``, ``e = k - update_after_step - 1`` (``d = 0`` for ``e <= 0``).

So with the released 2 (or 5) InfFT updates the evaluated model is the online model after exactly one step.
Written from that description; no code of either project is reused.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from safediffcon.errors import SafediffconError


class ReleasedEMA:
    """EMA copy ``model`` of an online network, updated by :meth:`update` with the released rule (module doc)."""

    def __init__(self, online: nn.Module, *, beta: float = 0.995, update_every: int = 10,
                 update_after_step: int = 100):
        if not 0.0 <= beta < 1.0:
            raise SafediffconError(f"ema beta must be in [0, 1), got {beta!r}")
        if not isinstance(update_every, int) or update_every < 1:
            raise SafediffconError(f"ema update_every must be an integer >= 1, got {update_every!r}")
        self.beta, self.update_every, self.update_after_step = float(beta), update_every, int(update_after_step)
        self.model = copy.deepcopy(online)
        self.model.requires_grad_(False)
        self.calls = 0

    def decay(self, k: int) -> float:
        """Decay of the acting call ``k`` (0 = copy)."""
        e = k - self.update_after_step - 1
        if k <= self.update_after_step or e <= 0:
            return 0.0
        return min(self.beta, 1.0 - (1.0 + e) ** (-2.0 / 3.0))

    @torch.no_grad()
    def update(self, online: nn.Module) -> bool:
        """One call after an optimiser step; returns whether it changed the copy."""
        k = self.calls
        self.calls += 1
        if k % self.update_every:
            return False
        d = self.decay(k)
        for pe, po in zip(self.model.parameters(), online.parameters()):
            pe.mul_(d).add_(po.detach(), alpha=1.0 - d)
        for be, bo in zip(self.model.buffers(), online.buffers()):
            be.copy_(bo)
        return True
