"""Errors of an estimate and log-log slope fits.

* ``‖θ̂ − θ*‖₂`` and ``‖θ̂ − θ*‖_{Σ+λI} = sqrt((θ̂ − θ*)ᵀ(Σ + λI)(θ̂ − θ*))`` with ``Σ = (1/n) Σᵢ xᵢxᵢᵀ``.
* :func:`fit_slope`: least squares of ``log y`` on ``log x`` with a t-interval for the slope.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats


def l2_error(theta: np.ndarray, theta_star: np.ndarray) -> float:
    return float(np.linalg.norm(np.asarray(theta) - np.asarray(theta_star)))


def sigma_norm_error(theta: np.ndarray, theta_star: np.ndarray, x: np.ndarray, *, l2: float = 1e-3) -> float:
    """``‖θ − θ*‖_{Σ + λI}`` with Σ the empirical second moment of the features ``x [n, d]``."""
    e = np.asarray(theta, dtype=np.float64) - np.asarray(theta_star, dtype=np.float64)
    sig = x.T @ x / x.shape[0]
    return float(np.sqrt(e @ sig @ e + l2 * e @ e))


@dataclass(frozen=True)
class Slope:
    """Slope of ``log y`` against ``log x`` with its two-sided (1 − level) t-interval."""

    slope: float
    intercept: float
    lo: float
    hi: float
    n: int


def fit_slope(xs, ys, *, level: float = 0.05) -> Slope:
    """Fit ``log y = a + b log x`` by least squares (every (x, y) pair a point, e.g. all seeds at all n)."""
    lx, ly = np.log(np.asarray(xs, dtype=np.float64)), np.log(np.asarray(ys, dtype=np.float64))
    if lx.shape != ly.shape or lx.size < 2 or np.ptp(lx) == 0:
        raise ValueError("fit_slope needs >= 2 points with at least two distinct x")
    res = stats.linregress(lx, ly)
    if lx.size > 2:
        half = stats.t.ppf(1 - level / 2, lx.size - 2) * res.stderr
    else:
        half = float("nan")
    return Slope(float(res.slope), float(res.intercept), float(res.slope - half), float(res.slope + half),
                 int(lx.size))
