"""Intrinsic rewards of KEA (Yang et al., ICML 2025, Sec. 3): RND and NovelD, with running normalisation.

RND (Burda et al., 2019): a frozen random target ``f̄`` and a trained predictor ``f̂`` (both MLPs
``obs_dim → 16 → 32 → feat_dim=16``, orthogonal init, as in the official code). The raw novelty of a state is

    e(s) = mean_j (f̂(s)_j − f̄(s)_j)²                       e: (B,)

normalised with an exponential running mean/std (momentum m, :class:`EMARunningMeanStd`) and clipped:

    z(s) = clip((e(s) − μ) / (σ_e + 1e-8), −c, c)            c = ``ir_clip`` = 2

``z`` is KEA's switching statistic (the standard agent acts where ``z(s_{t+1}) > σ``) and RND's intrinsic reward.
The statistics are updated only on the collected stream; minibatch recomputation reads them without updating.

NovelD (Zhang et al., 2021, Eq. 3): the novelty difference of a transition, gated by the episodic first visit,
never negative:

    r_NovelD(s, s') = max(e(s') − α e(s), 0) / (σ_e + 1e-8) · 1[s' first visited in this episode]     α = 0.5

(``noveld_form="paper"``, the default). The division by RND's running sd ``σ_e`` (the same statistics ``z``
uses; a positive scale, so the sign and the ordering of NovelD's formula are untouched) puts the reward in the
same units as RND's, so that β_i and KEA's switching threshold σ = 1 mean the same for both agents; it is clipped
above at c like RND's. A first visit scores ≥ 0 and a revisit exactly 0, as in NovelD.
``noveld_form="centred"`` is this package's earlier form, kept as a named option: the difference normalised by
its *own* running mean and sd, ``clip((d − μ_d)/(σ_d + 1e-8), −c, c) · 1[first visit]`` — about half of first
visits then score below a revisit's 0, unlike NovelD. (The released KEA code has no NovelD to follow.)

With either form, KEA-NovelD switches on ``r_NovelD`` (the paper's NovelD variant); RND's ``z(s')`` is an option.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from stable_baselines3.common.running_mean_std import RunningMeanStd
from torch import nn

from kea.optim import Adam


class EMARunningMeanStd(RunningMeanStd):
    """SB3's ``RunningMeanStd`` with exponential (momentum) averaging, as KEA's official normaliser.

    ``update(x)`` with batch mean ``b``: ``mean ← m·mean + (1−m)·b`` and
    ``var ← m·var + (1−m)·mean((x − mean_new)²)`` (squared deviations from the already-updated mean). The first
    update starts from the batch moments (SB3's (0, 1) start would keep z < 1 — no switching — for hundreds of steps
    at momentum 0.974).
    """

    def __init__(self, *, momentum: float = 0.974, shape: tuple[int, ...] = ()) -> None:
        if not (0.0 <= momentum < 1.0) or math.isnan(momentum):
            raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
        super().__init__(shape=shape)
        self.momentum = float(momentum)

    def update(self, arr: np.ndarray) -> None:
        arr = np.asarray(arr, dtype=np.float64)
        if self.count < 1:  # first data: start from the batch moments, not from (0, 1)
            self.mean, self.var = arr.mean(axis=0), np.maximum(arr.var(axis=0), 1e-12)
            self.count += arr.shape[0]
            return
        m = self.momentum
        self.mean = m * self.mean + (1.0 - m) * arr.mean(axis=0)
        self.var = m * self.var + (1.0 - m) * np.square(arr - self.mean).mean(axis=0)
        self.count += arr.shape[0]


def _mlp(in_dim: int, hidden: tuple[int, ...], out_dim: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    d = in_dim
    for h in hidden:
        layers += [nn.Linear(d, h), nn.ReLU()]
        d = h
    layers.append(nn.Linear(d, out_dim))
    for mod in layers:
        if isinstance(mod, nn.Linear):
            nn.init.orthogonal_(mod.weight, gain=math.sqrt(2))
            nn.init.zeros_(mod.bias)
    return nn.Sequential(*layers)


class RND(nn.Module):
    """Random Network Distillation novelty with KEA's normalisation (see module docstring).

    Args (keyword-only): ``obs_dim``; ``feat_dim`` (16); ``hidden`` ((16, 32)); ``lr`` (5e-4, Adam);
    ``grad_clip`` (0.5); ``momentum`` of the EMA normaliser; ``clip`` c (2); ``seed`` for the initialisation.
    """

    def __init__(self, *, obs_dim: int, feat_dim: int = 16, hidden: tuple[int, ...] = (16, 32), lr: float = 5e-4,
                 grad_clip: float = 0.5, momentum: float = 0.974, clip: float = 2.0, seed: int = 0) -> None:
        super().__init__()
        if not (clip > 0) or math.isinf(clip):
            raise ValueError(f"ir_clip must be a finite number > 0, got {clip!r}")
        if not lr > 0:
            raise ValueError(f"ir_lr must be > 0, got {lr!r}")
        g = torch.random.fork_rng(devices=[])
        with g:
            torch.manual_seed(seed)
            self.target = _mlp(obs_dim, hidden, feat_dim)
            self.predictor = _mlp(obs_dim, hidden, feat_dim)
        for p in self.target.parameters():
            p.requires_grad_(False)
        self.obs_dim = obs_dim
        self.clip = float(clip)
        self.grad_clip = float(grad_clip)
        self.stats = EMARunningMeanStd(momentum=momentum)
        self.nd_stats = EMARunningMeanStd(momentum=momentum)
        self.opt = Adam(self.predictor.parameters(), lr=lr)

    def error(self, obs: torch.Tensor) -> torch.Tensor:
        """Raw novelty ``e(s)``: obs ``(B, obs_dim)`` -> ``(B,)`` (no gradient)."""
        with torch.no_grad():
            return (self.predictor(obs) - self.target(obs)).pow(2).mean(dim=-1)

    def normalise(self, err: torch.Tensor, *, update: bool) -> torch.Tensor:
        """``z = clip((e − μ)/(σ_e + 1e-8), −c, c)``; ``update=True`` first folds ``err`` into the statistics."""
        return ema_normalise(self.stats, err, clip=self.clip, update=update)

    def noveld(self, e_next: torch.Tensor, e_cur: torch.Tensor, first_visit: torch.Tensor, *, alpha: float = 0.5,
               update: bool, form: str = "paper") -> torch.Tensor:
        """``r_NovelD (B,)`` from raw novelties ``e(s'), e(s)`` (B,) and first-visit flags (B,) (module docstring).

        ``form="paper"`` scales by RND's statistics (read only: :meth:`normalise` folds the stream in);
        ``form="centred"`` normalises by the NovelD difference's own statistics (``update`` folds into them)."""
        stats = self.stats if form == "paper" else self.nd_stats
        return noveld_reward(e_next, e_cur, first_visit, alpha=alpha, stats=stats, clip=self.clip,
                             update=update and form == "centred", form=form)

    def train_on(self, obs: torch.Tensor, *, epochs: int = 2) -> float:
        """``epochs`` Adam steps of the predictor on ``obs`` ``(B, obs_dim)``; returns the last loss."""
        loss_val = float("nan")
        for _ in range(epochs):
            loss = (self.predictor(obs) - self.target(obs)).pow(2).mean()
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            if self.grad_clip > 0:
                nn.utils.clip_grad_norm_(self.predictor.parameters(), self.grad_clip)
            self.opt.step()
            loss_val = float(loss.detach())
        return loss_val


def ema_normalise(stats: EMARunningMeanStd, x: torch.Tensor, *, clip: float, update: bool) -> torch.Tensor:
    """``clip((x − μ)/(σ + 1e-8), −c, c)`` with ``stats``; ``update=True`` first folds ``x`` into the statistics."""
    if update:
        stats.update(x.detach().cpu().numpy())
    mu, sd = float(stats.mean), math.sqrt(float(stats.var))
    return ((x - mu) / (sd + 1e-8)).clamp(-clip, clip)


NOVELD_FORMS = ("paper", "centred")


def noveld_reward(e_next: torch.Tensor, e_cur: torch.Tensor, first_visit: torch.Tensor, *, alpha: float = 0.5,
                  stats: EMARunningMeanStd, clip: float = 2.0, update: bool = False,
                  form: str = "paper") -> torch.Tensor:
    """NovelD's reward ``(B,)`` of transitions with raw novelties ``e(s'), e(s)`` and first-visit flags (all ``(B,)``).

    ``form="paper"``: ``min(max(e(s') − α e(s), 0)/(σ + 1e-8), c) · first_visit`` with ``σ`` the sd in ``stats``
    (RND's novelty statistics; never updated here); ``form="centred"``:
    ``clip((max(e(s') − α e(s), 0) − μ_d)/(σ_d + 1e-8), −c, c) · first_visit`` with ``stats`` the difference's own
    (``update=True`` folds ``d`` in first)."""
    if not (0.0 <= alpha <= 1.0):
        raise ValueError(f"noveld_alpha must be in [0, 1], got {alpha!r}")
    if form not in NOVELD_FORMS:
        raise ValueError(f"noveld_form must be one of {NOVELD_FORMS}, got {form!r}")
    d = (e_next - alpha * e_cur).clamp(min=0.0)
    if form == "paper":
        sd = math.sqrt(float(stats.var))
        return (d / (sd + 1e-8)).clamp(max=clip) * first_visit
    return ema_normalise(stats, d, clip=clip, update=update) * first_visit
