"""Configuration of pes: the learner's settings (``pes train``), the reproduce budget, presets and BUDGETS.

The CLI is generated from these dataclasses (tyro); the field docstrings are the help text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from icml25.errors import check_non_negative, check_positive
from icml25.experiment import Budgets

from pes.errors import PesError


def _check_gamma(gamma: float, name: str = "gamma") -> None:
    if not (isinstance(gamma, (int, float)) and math.isfinite(gamma) and 0 < gamma <= 1):
        raise PesError(f"{name} must be in (0, 1], got {gamma!r}")


@dataclass(frozen=True)
class LearnerConfig:
    """One learner: PES, SL-PG or fixed-σ GPOMDP / PGPE (PES with one phase)."""

    algorithm: Literal["pes", "slpg", "fixed"] = "pes"
    """pes (phases on a decreasing σ schedule), slpg (σ learned jointly) or fixed (plain GPOMDP/PGPE at sigma0)."""
    exploration: Literal["action", "parameter"] = "action"
    """action: Gaussian policy N(Ks, σ²I) with GPOMDP; parameter: hyperpolicy N(θ, σ²I) with PGPE."""
    env: str = "lqr"
    """lqr (s = 1, a = 2 generator), lqr-scalar, clipped (saturated actuator, bounded reward: σ moves the stochastic
    optimum), or a gymnasium id such as Swimmer-v5 (needs pes[mujoco])."""
    phases: int = 10
    """P: number of phases (PES, SL-PG; fixed uses 1)."""
    iters_per_phase: int = 50
    """K_p: iterations per phase (fixed: the total number of iterations)."""
    sigma0: float = 1.0
    """σ_0: initial standard deviation (never a variance or log-std)."""
    sigma_exponent: float = 1.0
    """y: σ_p = σ_0 (p+1)^{-y} for PES; the exponent of the 'hyper' parameterisation for SL-PG."""
    sigma_min: float = 0.0
    """Floor on σ."""
    lr: float = 0.01
    """Step size of θ (Adam by default)."""
    optimizer: Literal["adam", "sgd"] = "adam"
    """adam (released code) or sgd (constant step)."""
    reset_optimizer: bool = False
    """PES: fresh Adam state at each phase (the released code carries it over; the earlier release reset it)."""
    warm_start: Literal["last", "best"] = "last"
    """PES: start each phase from the last iterate, or from the previous phase's best-batch iterate (and return the
    last phase's best): the earlier release is `--reset-optimizer --warm-start best`."""
    lr_schedule: Literal["constant", "sigma2"] = "constant"
    """PES: constant step, or the theory's ζ_p = lr (σ_p/σ_0)²."""
    parameterization: Literal["exp", "hyper", "sigmoid"] = "exp"
    """SL-PG: σ = e^ν, (1 − ν)^{-y} (ν ≤ 0) or 1/(1 + e^{-ν})."""
    sigma_lr: float = 0.01
    """SL-PG: Adam step of ν."""
    pb_sigma_score: Literal["sampling", "released"] = "sampling"
    """SL-PG, parameter-based: score σ against the sampling mean (correct) or the updated mean (released code)."""
    estimator: Literal["gpomdp", "reinforce"] = "gpomdp"
    """Action-based estimator."""
    baseline: bool = False
    """Leave-one-out mean baseline (off, as in the released code)."""
    batch: int = 100
    """N: trajectories per iteration."""
    horizon: int = 20
    """T: steps per trajectory (20 on LQR; the paper's Swimmer runs use 200)."""
    gamma: float = 0.99
    """γ ∈ (0, 1] (the paper's Swimmer runs use 1)."""
    eval_every: int = 10
    """Record J_D (exact on LQR, Monte Carlo otherwise) every this many iterations."""

    @classmethod
    def paper(cls, **overrides) -> LearnerConfig:
        """PES on MuJoCo Swimmer-v5 as the camera-ready runs (pes.md, "Paper's experiments" and the findings on the
        released scripts (``extract_perf.py``)): AB exploration, y = 1, 25 phases x 200 iterations (σ 1 → 0.04), θ
        lr 0.01 with Adam, batch N = 100, horizon T = 200, γ = 1 (the gymnasium tasks' default here; the note gives
        none). ``--algorithm slpg`` gives SL-PG (there: 5000 phases x 1 iteration, exp parameterisation)."""
        return cls(**({"env": "Swimmer-v5", "phases": 25, "iters_per_phase": 200, "sigma0": 1.0, "sigma_exponent": 1.0,
                       "lr": 0.01, "optimizer": "adam", "batch": 100, "horizon": 200, "gamma": 1.0} | overrides))

    @classmethod
    def cpu(cls, **overrides) -> LearnerConfig:
        """The CPU scale ``pes train`` uses by default (the class defaults): the official LQR (s = 1, a = 2), 10 phases
        x 50 iterations, N = 100, T = 20 (pes.md, "Reproduction at CPU scale")."""
        return cls(**overrides)

    def validate(self) -> None:
        """Raise :class:`~pes.errors.PesError` naming the first bad field (called by the CLI before any write)."""
        check_positive(self, "phases", "iters_per_phase", "batch", "horizon", "eval_every")
        check_positive(self, "sigma0", "sigma_exponent", "lr", "sigma_lr", integer=False)
        check_non_negative(self, "sigma_min")
        _check_gamma(self.gamma)


@dataclass(frozen=True)
class Config:
    """The reproduce budget: LQR comparison, tuning, deployment gap, variance vs horizon, timing, Swimmer."""

    seeds: int = 5
    """Test seeds (per method)."""
    val_seeds: int = 5
    """Validation seeds used for tuning (disjoint from the test seeds)."""
    horizon: int = 20
    """LQR horizon T."""
    gamma: float = 0.99
    """LQR discount γ."""
    batch: int = 100
    """N: trajectories per iteration (all methods)."""
    iterations: int = 500
    """Iterations of every method (equal samples: iterations × batch × horizon)."""
    phases: int = 10
    """PES phases P (iterations / phases per phase); the fully dynamic PES uses `iterations` phases of 1."""
    static_sigmas: tuple[float, ...] = (1.0, 0.1)
    """σ of the fixed-σ GPOMDP / PGPE baselines."""
    lr_grid: tuple[float, ...] = (0.003, 0.01, 0.03)
    """Adam step sizes every method is tuned on (alike, on validation seeds)."""
    extend: int = 1
    """Grid extensions when a choice sits at an edge (icml25.tuning)."""
    sigma_lr: float = 0.01
    """SL-PG's ν step (the paper's, not tuned)."""
    eval_every: int = 10
    """Iterations between exact J_D evaluations on the curves."""
    gap_sigmas: tuple[float, ...] = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3)
    """σ values of the |J_D − J_P| vs σ√d experiment."""
    var_horizons: tuple[int, ...] = (5, 10, 20, 40, 80)
    """Horizons of the AB vs PB gradient-variance experiment."""
    var_samples: int = 2000
    """Single-trajectory gradient estimates per horizon and seed."""
    var_sigmas: tuple[float, ...] = (0.1, 0.3)
    """σ values of the variance experiment (AB and PB)."""
    timing_iters: int = 100
    """Iterations per timing measurement (per method and seed)."""
    clipped: bool = True
    """Run the comparison on the bounded-reward saturated regulator (pes.clipped), where σ moves the optimum."""
    clipped_methods: tuple[str, ...] = ("fixed σ=1", "fixed σ=0.1", "PES", "PES earlier release", "SL-PG exp")
    """Methods compared on the saturated regulator (names of pes.reproduce.common.method_specs)."""
    gate_window: int = 5
    """Competence gates: a J_D curve has plateaued when its best moved by at most the seed noise over this many
    last evaluations (eval_every iterations apart)."""
    swimmer: bool = True
    """Run Swimmer-v5 (every method, swimmer_seeds seeds; untested claims when MuJoCo is missing)."""
    swimmer_env: str = "Swimmer-v5"
    """The gymnasium task of the Swimmer experiment (the paper's)."""
    swimmer_seeds: int = 5
    """Seeds per method on Swimmer."""
    swimmer_iterations: int = 30
    """Swimmer iterations per method."""
    swimmer_batch: int = 10
    """Swimmer trajectories per iteration."""
    swimmer_horizon: int = 200
    """Swimmer horizon (the paper's T = 200)."""

    def __post_init__(self) -> None:
        check_positive(self, "seeds", "val_seeds", "horizon", "batch", "iterations", "phases", "eval_every",
                       "var_samples", "timing_iters", "swimmer_iterations", "swimmer_batch", "swimmer_horizon",
                       "swimmer_seeds", "gate_window")
        check_positive(self, "sigma_lr", integer=False)
        check_non_negative(self, "extend")
        _check_gamma(self.gamma)
        if self.iterations % self.phases:
            raise PesError(f"iterations ({self.iterations}) must be a multiple of phases ({self.phases})")
        for name in ("static_sigmas", "lr_grid", "gap_sigmas", "var_sigmas"):
            vals = getattr(self, name)
            if not vals or not all(math.isfinite(v) and v > 0 for v in vals):
                raise PesError(f"{name} must be a non-empty tuple of positive numbers, got {vals!r}")
        if not self.var_horizons or min(self.var_horizons) < 1:
            raise PesError(f"var_horizons must be positive integers, got {self.var_horizons!r}")


def paper() -> Config:
    """The paper's comparison at its published scale is Swimmer-v5 with N = 100, T = 200 (figures only); this
    preset is the issue's LQR plan (10 phases × 50 iterations, N = 100, T = 20, 5 seeds)."""
    return Config()


def cpu() -> Config:
    """Our CPU-scale settings (the full reproduce run)."""
    return paper()


BUDGETS = Budgets(
    smoke=replace(cpu(), seeds=1, val_seeds=1, batch=10, iterations=20, phases=2, lr_grid=(0.03,),
                  extend=0, swimmer_seeds=1, var_horizons=(5, 10), var_samples=50, timing_iters=5,
                  gap_sigmas=(0.05, 0.1), swimmer=True, swimmer_iterations=2, swimmer_batch=2, swimmer_horizon=20, eval_every=5),
    quick=replace(cpu(), seeds=3, val_seeds=1, batch=50, iterations=300, lr_grid=(0.01, 0.03, 0.1), extend=0,
                  var_samples=500, timing_iters=30, swimmer=False),
    # 15 test seeds (not 5): the PES-vs-baseline gaps differ by less than their seed-to-seed spread at 5 seeds
    full=replace(cpu(), seeds=15, lr_grid=(0.01, 0.03, 0.1), timing_iters=200),
)
