"""Sample complexity read off learning curves: samples to reach a deterministic gap ε, and its log-log exponent.

The paper's rates are Õ(ε⁻⁵) samples for PES and Õ(ε⁻³) for SL-PG. For one run with a curve of deterministic gaps
``g_k = J_D(θ*) − J_D(θ_k)`` recorded after ``n_k`` samples, the samples needed to reach ``ε`` are

    N(ε) = n_k for the first k after which g_j ≤ ε for every later j   (last-iterate: the gap *stays* below ε),

``nan`` when the run never settles below ε. The exponent is the least-squares slope of ``log N(ε)`` against
``log(1/ε)`` over the levels a run reached (at least ``min_levels`` of them): ``N ∝ ε^{-slope}``. A rate bound
``Õ(ε^{-r})`` says the slope is at most ``r`` (up to logarithmic factors).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def samples_to_reach(samples: Sequence[float], gaps: Sequence[float], eps: Sequence[float]) -> np.ndarray:
    """``N(ε)`` for each level in ``eps`` (shape ``(len(eps),)``): the first recorded sample count after which the
    gap stays ≤ ε until the end of the curve; ``nan`` where it never does."""
    n = np.asarray(samples, dtype=float)
    g = np.asarray(gaps, dtype=float)
    if n.shape != g.shape or n.ndim != 1 or n.size == 0:
        raise ValueError(f"samples and gaps must be equal-length 1-D curves, got {n.shape} and {g.shape}")
    # suffix maximum: the largest gap from index k to the end
    tail_max = np.maximum.accumulate(g[::-1])[::-1]
    out = np.full(len(eps), np.nan)
    for i, e in enumerate(eps):
        ok = np.nonzero(tail_max <= e)[0]
        if ok.size:
            out[i] = n[ok[0]]
    return out


def rate_exponent(eps: Sequence[float], n_eps: Sequence[float], *, min_levels: int = 3) -> float:
    """Slope of ``log N(ε)`` on ``log(1/ε)`` over the reached levels (finite, positive N); ``nan`` with fewer than
    ``min_levels`` of them."""
    e = np.asarray(eps, dtype=float)
    n = np.asarray(n_eps, dtype=float)
    ok = np.isfinite(n) & (n > 0)
    if ok.sum() < min_levels:
        return float("nan")
    return float(np.polyfit(np.log(1.0 / e[ok]), np.log(n[ok]), 1)[0])


def bootstrap_ci(values: Sequence[float], *, level: float = 0.95, n_boot: int = 10_000, seed: int = 0
                 ) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of the finite ``values`` (``(nan, nan)`` when none)."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if v.size == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, size=(n_boot, v.size))].mean(axis=1)
    a = (1.0 - level) / 2
    return float(np.quantile(means, a)), float(np.quantile(means, 1 - a))
