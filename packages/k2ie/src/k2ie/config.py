"""Configuration of k2ie: frozen dataclasses (the CLI help comes from the field docstrings), presets and the
reproduce budgets."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from icml25.errors import check_positive
from icml25.experiment import Budgets

from k2ie.errors import K2ieError


@dataclass(frozen=True)
class EstimatorConfig:
    """One estimator's hyper-parameters (used as is when --select is off, else the grid is searched)."""

    kernel: Literal["gaussian", "laplace", "cauchy"] = "gaussian"
    """Base kernel k (product over dimensions, inverse scale b)."""
    a: float = 1.0
    """Regularisation weight γ of K²IE / Flaxman (> 0); ignored by KIE."""
    b: float = 0.1
    """Inverse length scale of the kernel (> 0), the same in every dimension."""
    n_features: int = 500
    """Random Fourier features M (even, >= 2)."""
    qmc: bool = True
    """Scrambled Halton frequencies (True) or i.i.d. (False)."""
    # validated by the estimators themselves (a clear K2ieError naming the field)


@dataclass(frozen=True)
class Config:
    """Budget of a ``reproduce`` run (the paper's protocol scaled to 2 CPU cores)."""

    seeds: int = 12
    """Trials (one simulated data set per trial and seed; paired across methods). 12, not 20: the 7-minute budget
    of the full run goes to the 10 hold-out splits (averaging the selection score) before more trials."""
    seeds_large: int = 8
    """Trials of the large 10λ³ data set (N ≈ 2250, about 12 s a trial for the three methods with 10 splits): the
    first ``min(seeds, seeds_large)`` seeds (lower it to shorten a run)."""
    n_features: int = 500
    """Random Fourier features M of K²IE and Flaxman (paper: 500)."""
    grid_size: int = 6
    """Points per axis of the (a, b) log grid over [0.1, 100] (paper: 10); KIE gets grid_size² bandwidths."""
    grid_extend: int = 2
    """A knob chosen at the edge of its grid gets up to this many new values beyond it (geometric step), for every
    method alike (the official grid stops at 100, where FIE's a often lands)."""
    n_splits: int = 10
    """p-thinning hold-out splits, the same for every method (paper: 5). The hold-out score is averaged over them:
    with 3 splits K²IE's least-squares score was too noisy to choose well (its selected ISE was 1.1–1.5× KIE's in
    1-D while its best grid point was at or below KIE's)."""
    fit_repeats: int = 3
    """Repeats of each final fit (K²IE, FIE) for the speed comparison; the median is reported."""
    p: float = 0.6
    """Thinning probability of the training split (paper: 0.6)."""
    datasets_1d: tuple[str, ...] = ("l1", "l1x10", "l2", "l2x10", "l3", "l3x10")
    """1-D truths: l1, l2, l3 (λ¹, λ², λ³) and their ×10 versions l1x10, l2x10, l3x10."""
    p_cells: tuple[float, ...] = (0.5, 0.75, 1.0)
    """Cell-selection probabilities of the fragmented 2-D windows."""
    edge_fraction: float = 0.1
    """Width of the edge band, as a fraction of the window side (1-D) / of one cell (2-D, × 2.5)."""
    time_ns: tuple[int, ...] = (50, 100, 200, 400, 800)
    """Data sizes N of the time-versus-N experiment (λ¹ scaled, fixed M)."""
    rff_ms: tuple[int, ...] = (20, 50, 100, 200, 500, 1000)
    """Feature counts M of the kernel-approximation experiment."""
    release_fie: bool = True
    """Also fit Flaxman with the released optimiser (Adam, lr 1e-3, <= 999 steps) at the selected (a, b)."""
    quad_per_unit: float = 3.0
    """Quadrature panels per unit length for the 2-D error integrals (1-D uses 20 per unit of the λ² window)."""
    workers: int = 2
    """Forked worker processes for the independent trials (``icml25.parallel``; 1 = one after another here). A trial
    runs all three methods in one worker, one after another, so each method's timing sees the same load."""
    blas_threads: int = 1
    """OpenBLAS threads for every method during reproduce (1: a 500×500 Cholesky is ~2× faster than with 2 threads
    on 2 shared cores, see k2ie.blas); 0 leaves the library default."""

    def __post_init__(self) -> None:
        check_positive(self, "seeds", "seeds_large", "n_features", "grid_size", "n_splits", "fit_repeats")
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 1:
            raise K2ieError(f"workers must be an integer >= 1, got {self.workers!r}")
        if self.grid_extend < 0:
            raise K2ieError(f"grid_extend must be >= 0, got {self.grid_extend}")
        if self.blas_threads < 0 or self.blas_threads > 2:
            raise K2ieError(f"blas_threads must be 0 (library default), 1 or 2, got {self.blas_threads}")
        if self.n_features % 2:
            raise K2ieError(f"n_features must be even, got {self.n_features}")
        if not 0 < self.p < 1:
            raise K2ieError(f"p must be in (0, 1), got {self.p}")
        allowed = {"l1", "l2", "l3", "l1x10", "l2x10", "l3x10"}
        bad = set(self.datasets_1d) - allowed
        if bad:
            raise K2ieError(f"datasets_1d: unknown {sorted(bad)}; allowed {sorted(allowed)}")
        if any(not 0 < q <= 1 for q in self.p_cells):
            raise K2ieError(f"p_cells must lie in (0, 1], got {self.p_cells}")


def paper() -> Config:
    """The released scripts' protocol: 10×10 grid, 5 splits, 20 trials (100 in the paper), all six 1-D sets."""
    return Config(seeds=20, seeds_large=20, grid_size=10, n_splits=5)


def cpu() -> Config:
    """Our CPU scale: 6×6 grid (extended at its edges), 10 hold-out splits, 12 trials (8 on 10λ³, N ≈ 2250), all
    six 1-D sets and three 2-D windows."""
    return Config()



def fit_settings(c: Config) -> dict:
    """The options of ``k2ie fit`` that a :class:`Config` preset fixes (``k2ie fit --preset paper|cpu``): the (a, b)
    grid, the hold-out splits and p, and M random features."""
    return {"grid_size": c.grid_size, "n_splits": c.n_splits, "p": c.p,
            "estimator": EstimatorConfig(n_features=c.n_features)}


BUDGETS = Budgets(
    smoke=replace(cpu(), seeds=1, n_features=100, grid_size=3, n_splits=2, datasets_1d=("l1",), p_cells=(0.5,),
                  time_ns=(50, 100), rff_ms=(20, 100), release_fie=False, quad_per_unit=2.0),
    quick=replace(cpu(), seeds=3, grid_size=5, n_splits=2, datasets_1d=("l1", "l2"), p_cells=(0.5, 1.0),
                  time_ns=(50, 200, 800), rff_ms=(20, 100, 500)),
    full=cpu(),
)
