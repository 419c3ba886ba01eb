"""Configuration of private-robust-align: frozen dataclasses with presets, and the reproduce budgets.

The CLI is generated from these dataclasses (tyro); the field docstrings are the help text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from icml25.errors import check_non_negative, check_positive
from icml25.experiment import Budgets

from private_robust_align.errors import (
    PrivateRobustAlignError,
    check_alpha,
    check_epsilon,
    check_l2,
    check_radius,
)


@dataclass(frozen=True)
class SimConfig:
    """Generated linear Bradley–Terry preferences, privatized and corrupted in one order."""

    n: int = 5000
    """Number of preference pairs."""
    dim: int = 5
    """Feature dimension d."""
    norm: float = 2.0
    """‖θ*‖ (the paper's bound B on the true parameter)."""
    design: str = "ball"
    """Features: `ball` (uniform in the unit ball: uniform coverage) or `gaussian` (N(0, I/d))."""
    epsilon: float = 1.0
    """Label-LDP level ε of randomized response (> 0; inf = no privacy)."""
    order: str = "CTL"
    """`CTL`: corrupt then privatize; `LTC`: privatize then corrupt; `CLC`: corrupt (alpha), privatize, corrupt
    (alpha2)."""
    alpha: float = 0.0
    """Corruption fraction in [0, 0.5) (for CLC: the fraction corrupted before privatization)."""
    alpha2: float = 0.0
    """CLC only: the fraction corrupted after privatization (alpha + alpha2 <= 0.5)."""
    adversary: str = "directional"
    """Strong adversary: `directional` (plant a direction u ⊥ θ*), `shrinking` (flip the most confident labels) or
    `random` (random flips, a control)."""

    def validate(self) -> SimConfig:
        """Raise a clear error naming the field (called by the commands, so that the CLI prints one line)."""
        from private_robust_align.adversary import ADVERSARIES
        from private_robust_align.data import DESIGNS
        from private_robust_align.orders import ORDERS

        for name, allowed in (("order", ORDERS), ("adversary", ADVERSARIES), ("design", DESIGNS)):
            if getattr(self, name) not in allowed:
                raise PrivateRobustAlignError(f"{name} must be one of {', '.join(allowed)}, got "
                                              f"{getattr(self, name)!r}")
        check_positive(self, "n", "dim")
        if not (math.isfinite(self.norm) and self.norm > 0):
            raise PrivateRobustAlignError(f"norm must be a finite number > 0, got {self.norm!r}")
        check_epsilon(self.epsilon)
        check_alpha(self.alpha)
        check_alpha(self.alpha2, "alpha2")
        if self.order != "CLC" and self.alpha2 != 0:
            raise PrivateRobustAlignError(f"alpha2 is only used with order CLC, got alpha2={self.alpha2} with "
                                          f"order {self.order}")
        if self.alpha + self.alpha2 > 0.5:
            raise PrivateRobustAlignError(f"alpha + alpha2 must be <= 0.5, got {self.alpha + self.alpha2}")
        return self

    @property
    def alphas(self) -> float | tuple[float, float]:
        return (self.alpha, self.alpha2) if self.order == "CLC" else self.alpha


@dataclass(frozen=True)
class EstimatorConfig:
    """The debiased, norm-constrained logistic estimator."""

    radius: float = 2.0
    """Norm bound B of the constraint ‖θ‖ ≤ B (> 0; inf drops the constraint)."""
    l2: float = 0.0
    """Ridge weight λ ≥ 0 of the loss (λ/2‖θ‖²)."""

    def validate(self) -> EstimatorConfig:
        """Raise a clear error naming the field."""
        check_radius(self.radius)
        check_l2(self.l2)
        return self


@dataclass(frozen=True)
class Config:
    """Budget of ``reproduce`` (grids, sizes, seeds)."""

    seeds: int = 25
    """Seeds (independent datasets) of every experiment."""
    dim: int = 5
    """Feature dimension d."""
    n_sep: int = 16000
    """Pairs per dataset in the CTL-vs-LTC separation experiment."""
    eps_sep: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0)
    """Privacy levels of the separation experiment."""
    alpha_sep: tuple[float, ...] = (0.005, 0.01, 0.02)
    """Corruption levels α of the separation experiment."""
    eps_robust: float = 0.5
    """ε at which the two extra robust estimators (trimmed, median of means) are run under LTC vs CTL (must be in
    ``eps_sep``)."""
    n_grid: tuple[int, ...] = (1000, 2000, 4000, 8000, 16000, 32000)
    """Sample sizes of the rate-in-n experiment."""
    eps_rate: tuple[float, ...] = (0.2, 0.3, 0.5)
    """Privacy levels (≤ 0.5) of the rate-in-ε experiment."""
    n_eps: int = 64000
    """Pairs per dataset in the rate-in-ε experiment."""
    alpha_exp: tuple[float, ...] = (0.005, 0.01, 0.02, 0.04)
    """Corruption levels of the α-exponent fit."""
    n_bandit: tuple[int, ...] = (1000, 4000, 16000)
    """Offline comparisons of the bandit (RLHF/DPO policy) experiment."""
    n_val: int = 2000
    """Pairs of the training and validation splits used to tune λ."""
    time_repeats: int = 10
    """Repeats of the fit-time measurement."""
    dpo_lr_grid: tuple[float, ...] = (1e-3, 2e-3, 4e-3)
    """Learning rates tried for every trl DPO loss (chosen alike on RR-swapped validation pairs)."""
    dpo_lr_extend: int = 3
    """Times the lr grid may grow past an edge the validation criterion picked (×2 steps; same rule for every loss)."""
    dpo_val_criterion: str = "channel"
    """What the lr is chosen on, for every loss alike, on RR-swapped validation pairs: ``channel`` (the negative
    log-likelihood of the released labels under the model composed with the RR channel: proper and bounded) or
    ``debiased`` (the rDPO loss: an unbiased estimate of the clean loss, but unbounded below in the margin)."""
    dpo_seeds: int = 5
    """Seeds of the tiny-LM DPO demo (0 skips it)."""
    dpo_steps: int = 60
    """DPO steps per run in the demo."""
    dpo_epsilon: float = 1.0
    """Privacy level of the demo's randomized response on preference pairs."""
    kappa_grid: tuple[float, ...] = field(default=(0.01, 0.1, 1.0, 10.0))
    """Grid of κ in the ridge λ = κ/n, the same for every estimator with a λ (same validation split)."""

    def __post_init__(self) -> None:
        check_positive(self, "seeds", "dim", "n_sep", "n_eps", "n_val", "time_repeats", "dpo_steps")
        if self.eps_robust not in self.eps_sep:
            raise PrivateRobustAlignError(f"eps_robust must be one of eps_sep {self.eps_sep}, got {self.eps_robust}")
        check_non_negative(self, "dpo_seeds", "dpo_lr_extend")
        if self.dpo_val_criterion not in ("channel", "debiased"):
            raise PrivateRobustAlignError(
                f"dpo_val_criterion must be 'channel' or 'debiased', got {self.dpo_val_criterion!r}")
        if self.dim < 2:
            raise PrivateRobustAlignError(f"dim must be >= 2 (the directional adversary needs u ⊥ θ*), got {self.dim}")


@dataclass(frozen=True)
class FitPreset:
    """The options of ``private-robust-align fit`` a preset fixes (``fit --preset paper|cpu``): the estimator and the
    data it simulates without ``--data``."""

    estimator: EstimatorConfig = field(default_factory=EstimatorConfig)
    """Norm bound B and ridge λ."""
    sim: SimConfig = field(default_factory=SimConfig)
    """Simulated data."""

    @classmethod
    def paper(cls) -> FitPreset:
        """The same as :meth:`cpu`: the paper is a theory paper whose small experiments are not in the note
        (private-robust-align.md, "Paper's experiments and numbers": "No numbers are available"), so there is no
        larger setting to scale to; B = 2 is the note's bound on ‖θ*‖ in both."""
        return cls.cpu()

    @classmethod
    def cpu(cls) -> FitPreset:
        """What ``fit`` uses by default: B = 2, no ridge; 5000 pairs in d = 5, ε = 1, no corruption (the note's
        "Reproduction at CPU scale" design)."""
        return cls()


def paper() -> Config:
    """The note's grid as far as an 8-minute CPU budget affords (n to 32k, 64k for the ε slope, 25 seeds)."""
    return Config()


def cpu() -> Config:
    """Our full CPU-scale run (same as :func:`paper`; the budget is dominated by cheap fits)."""
    return Config()


BUDGETS = Budgets(
    smoke=replace(cpu(), seeds=3, n_sep=1500, eps_sep=(0.5, 2.0), alpha_sep=(0.02,), n_grid=(300, 600, 1200),
                  eps_rate=(0.3, 0.5), n_eps=2000, alpha_exp=(0.02, 0.04), n_bandit=(500, 1000), n_val=500,
                  time_repeats=2, dpo_seeds=0),
    quick=replace(cpu(), seeds=3, n_sep=8000, n_grid=(1000, 2000, 4000, 8000), n_eps=16000,
                  n_bandit=(1000, 4000), time_repeats=3, dpo_seeds=3, dpo_steps=40),
    full=cpu(),
)
