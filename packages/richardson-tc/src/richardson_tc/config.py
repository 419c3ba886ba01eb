"""Configuration of richardson-tc: the method's options, the reproduce budget (``Config``), presets and BUDGETS.

The CLI is generated from these dataclasses (tyro); the field docstrings are the help text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from icml25.errors import check_positive
from icml25.experiment import Budgets

from richardson_tc.errors import RichardsonTcError

EPS_GRID = (0.1, 0.01, 1e-3, 1e-4)
"""The paper's inner tolerance grid ε."""


@dataclass(frozen=True)
class SolverOptions:
    """How each ALS block is solved (``cp_complete``'s keyword arguments)."""

    rank: int = 16
    """CP rank R (the official runs use 16)."""
    solver: Literal["lifted", "direct", "direct-loop", "em"] = "lifted"
    """Block solver: lifted Richardson, direct masked solve (vectorised / official per-entry loop), or EM-ALS."""
    tol: float = 1e-3
    """Inner tolerance ε in (0, 1) of the stop rule (lifted)."""
    stop_rule: Literal["step", "official"] = "step"
    """step: convergence test on the block (default); official: relative training-loss decrease < ε (released)."""
    max_inner: int = 1024
    """Cap on inner updates per ALS step (the official 1024)."""
    accelerate: bool = False
    """Geometric-series extrapolation of the inner iterates (α clamped ≤ 0.99)."""
    sampled: bool = False
    """Leverage-score sampled inner solves (lifted only; --accelerate is not applied to sampled solves)."""
    n_sweeps: int = 10
    """ALS sweeps over all modes (the official 10)."""
    ridge: float = 0.0
    """Ridge λ ≥ 0 on every block regression (official 0)."""
    max_entries: int = 50_000_000
    """Memory cap of lifted / EM-ALS: refuse tensors with more entries (the full tensor is rebuilt at every inner
    update, about 24 bytes per entry)."""

    def __post_init__(self) -> None:
        check_positive(self, "rank", "max_inner", "n_sweeps", "max_entries")
        if not (isinstance(self.tol, (int, float)) and 0 < self.tol < 1):
            raise RichardsonTcError(f"tol must be in (0, 1), got {self.tol!r}")
        if not (isinstance(self.ridge, (int, float)) and self.ridge >= 0 and self.ridge == self.ridge):
            raise RichardsonTcError(f"ridge must be a finite number >= 0, got {self.ridge!r}")


@dataclass(frozen=True)
class Config:
    """The reproduce budget: sizes of the CPU-scale experiments (see the README for the paper's scale)."""

    seeds: int = 5
    """Seeds (each varies the data, Ω and the initialisation)."""
    shape: tuple[int, ...] = (60, 60, 60)
    """Tensor shape of the speed/accuracy experiment (the paper: 100³ and real tensors)."""
    rank: int = 8
    """True CP rank of the random tensor and the fitted rank."""
    ps: tuple[float, ...] = (0.05, 0.1, 0.3, 0.5, 0.9)
    """Sample ratios p = |Ω|/|𝒳|."""
    n_sweeps: int = 10
    """ALS sweeps per completion run (official 10)."""
    eps_grid: tuple[float, ...] = EPS_GRID
    """ε grid for selecting the lifted tolerance on the validation instance."""
    loop_sweeps: int = 1
    """Sweeps timed with the official-style per-entry loop (its iterates equal the vectorised direct solver's)."""
    block_shape: tuple[int, ...] = (40, 40, 40)
    """Tensor shape of the single-block experiments (fixed point, ρ, stop rules)."""
    block_rank: int = 5
    """Rank of the single-block experiments."""
    block_ps: tuple[float, ...] = (0.05, 0.1, 0.3, 0.7)
    """Sample ratios of the ρ / inner-steps experiment."""
    block_shape_large: tuple[int, ...] = (40, 80, 80)
    """A second block shape with 4× as many Khatri–Rao rows J per factor row (does 1/p scaling improve with J?)."""
    eps_p: float = 0.1
    """Sample ratio of the 'every ε ± acceleration' table (the paper's ε grid, both stop rules)."""
    eps_seeds: int = 3
    """Seeds of that table (the issue's 3; the first seeds of the run)."""
    data_kinds: tuple[str, ...] = ("tucker", "gaussian", "digits", "video")
    """Further tensors of the issue: random Tucker (4,4,4), Gaussian noise, digits 8×8×1797, blob video."""
    data_shape: tuple[int, ...] = (60, 60, 60)
    """Shape of the generated Tucker and Gaussian tensors (digits is 8×8×1797; the video is video_shape)."""
    video_shape: tuple[int, ...] = (64, 64, 30)
    """Blob video H × W × T."""
    data_ps: tuple[float, ...] = (0.1, 0.5)
    """Sample ratios of the further-tensors experiment."""
    data_seeds: int = 5
    """Seeds of the further-tensors experiment (at most ``seeds``; the first seeds of the run): each seed tunes ε on
    its own validation split, which makes it the run's most expensive experiment; 3 (the issue's minimum) is the
    knob to turn on a slow machine."""
    digits_rank: int = 4
    """Fitted CP rank on the 8 × 8 × 1797 digits (two modes have only 8 rows)."""
    tucker_shape: tuple[int, ...] = (30, 30, 30)
    """Tensor shape of the Kronecker (Tucker core) black-box experiment."""
    val_frac: float = 0.1
    """Share of Ω held out as the validation split on which ε and ridge λ are chosen (never the test entries)."""
    grid_extend: int = 2
    """Times a tuned knob chosen at an edge of its grid is extended one step beyond it (ε: ×3 up to 0.9 or ÷10;
    λ: ×10 upward; λ = 0 is the boundary of λ ≥ 0)."""
    ridge_kinds: tuple[str, ...] = ("gaussian", "digits")
    """Tensors of the ridge experiment (the ones on which the unregularised solvers over-fit)."""
    ridge_grid: tuple[float, ...] = (0.0, 0.01, 0.1, 1.0, 10.0)
    """Ridge λ grid, the same for every solver (direct, both EM-ALS, lifted + accel)."""
    ridge_seeds: int = 3
    """Seeds of the ridge experiment (the issue's 3; each tunes λ per solver on its own validation split)."""
    ridge_eps: float = 0.01
    """ε of lifted + acceleration in the ridge experiment (fixed; λ is its only tuned knob, as for the others)."""
    sample_factors: tuple[int, ...] = (8, 16, 32, 64, 128, 256)
    """Leverage-sampled rows per inner update, as multiples c of R (s = c·R; the default is 64·R)."""
    sampling_p: float = 0.1
    """Sample ratio p of the accuracy-vs-sample-count experiment (random CP, ``shape``)."""
    accuracy_margin: float = 0.05
    """Lifted 'reaches the direct accuracy' when its held-out RRE is within this relative margin (ε is chosen so
    that lifted's validation error is ≤ 1.05× direct's; every speed claim is gated on the matched test error)."""
    large_shape: tuple[int, ...] = (100, 100, 100)
    """A 10⁶-entry random CP tensor (the paper's 100³) for the speed-at-matched-error rows."""
    large_ps: tuple[float, ...] = (0.1, 0.5, 0.9)
    """Sample ratios of the 10⁶-entry rows."""
    large_seeds: int = 3
    """Seeds of the 10⁶-entry rows (the first seeds of the run)."""
    max_inner: int = 1024
    """Cap on inner updates per ALS step."""

    def __post_init__(self) -> None:
        check_positive(self, "seeds", "rank", "n_sweeps", "loop_sweeps", "block_rank", "max_inner", "eps_seeds",
                       "digits_rank", "ridge_seeds", "data_seeds")
        if not 0 < self.val_frac < 1:
            raise RichardsonTcError(f"val_frac must be in (0, 1), got {self.val_frac}")
        if not self.ridge_grid or any(not (v >= 0 and v == v and v != float("inf")) for v in self.ridge_grid):
            raise RichardsonTcError(f"ridge_grid must be finite values >= 0, got {self.ridge_grid}")
        if not self.sample_factors or any(c < 1 for c in self.sample_factors):
            raise RichardsonTcError(f"sample_factors must be integers >= 1, got {self.sample_factors}")
        if len(self.shape) < 2 or any(s < 2 for s in self.shape):
            raise RichardsonTcError(f"shape must have >= 2 sizes >= 2, got {self.shape}")
        if not self.ps or any(not 0 < p <= 1 for p in self.ps):
            raise RichardsonTcError(f"ps must be sample ratios in (0, 1], got {self.ps}")
        from richardson_tc.data import KINDS

        if any(k not in KINDS for k in self.data_kinds):
            raise RichardsonTcError(f"data_kinds must be among {KINDS}, got {self.data_kinds}")


def paper() -> SolverOptions:
    """The released code's settings (richardson-tc.md, "Official CP-completion code: defaults and algorithm" and the
    result logs): rank 16, ε = 0.01 with the official stop rule, 10 ALS sweeps, at most 1024 Richardson steps.
    ``richardson-tc complete --preset paper`` also completes the paper's 100³ random CP tensor of rank 16
    (:data:`PAPER_DATA`); its other tensors (random normal, real data) are ``--tensor`` / ``--input``."""
    return SolverOptions(rank=16, tol=0.01, stop_rule="official", accelerate=True)


def cpu() -> SolverOptions:
    """Our defaults: rank 8, the block-convergence stop rule at ε = 1e-3, accelerated (on a 60³ tensor of CP rank 8,
    :data:`CPU_DATA`)."""
    return SolverOptions(rank=8, tol=1e-3, stop_rule="step", accelerate=True)


PAPER_DATA = {"shape": (100, 100, 100), "true_rank": 16}
"""The generated tensor of ``complete --preset paper``: the paper's random CP tensor, 100³ of rank 16."""
CPU_DATA = {"shape": (60, 60, 60), "true_rank": 8}
"""The generated tensor ``complete`` uses by default."""


BUDGETS = Budgets(
    smoke=Config(seeds=1, shape=(16, 16, 16), rank=3, ps=(0.3, 0.9), n_sweeps=2, eps_grid=(0.01, 1e-3),
                 block_shape=(12, 12, 12), block_rank=3, block_ps=(0.3, 0.7), tucker_shape=(14, 14, 14),
                 max_inner=200, block_shape_large=(12, 24, 24), eps_p=0.3, eps_seeds=1, data_shape=(14, 14, 14),
                 video_shape=(16, 16, 8), data_ps=(0.5,), ridge_kinds=("gaussian",), ridge_grid=(0.0, 1.0),
                 ridge_seeds=1, sample_factors=(4, 16), sampling_p=0.5, large_shape=(20, 20, 20), large_ps=(0.5,),
                 large_seeds=1),
    quick=Config(seeds=3, shape=(40, 40, 40), rank=6, ps=(0.1, 0.9), n_sweeps=8,
                 block_shape=(30, 30, 30), block_rank=4, tucker_shape=(20, 20, 20), block_shape_large=(30, 60, 60),
                 eps_seeds=1, data_kinds=("tucker", "video"), data_shape=(30, 30, 30), video_shape=(32, 32, 16),
                 data_ps=(0.1,), ridge_kinds=("gaussian",), ridge_seeds=3, sample_factors=(8, 64, 256),
                 large_shape=(), large_ps=(0.5,), large_seeds=2),
    full=Config(seeds=5),
)
