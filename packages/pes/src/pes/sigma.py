"""Stochasticity schedules (PES) and σ parameterisations ``σ = g(ν)`` (SL-PG). σ is always a standard deviation.

* PES schedule: ``σ_p = max(σ_0 (p + 1)^{−y}, σ_min)``, p = 0, 1, ..., P − 1 (the released code's schedule).
* ``hyper``: ``σ = (1 − ν)^{−y}``, ν ≤ 0 (so σ ≤ 1), ``dσ/dν = y (1 − ν)^{−y−1}``, ``ν = 1 − σ^{−1/y}``;
* ``exp``: ``σ = e^ν``, ``dσ/dν = σ``, ``ν = log σ``;
* ``sigmoid``: ``σ = 1/(1 + e^{−ν})``, ``dσ/dν = σ(1 − σ)`` (the released code returns σ here: a bug), ``ν =
  log(σ/(1 − σ))``.
"""

from __future__ import annotations

import math

import numpy as np

from pes.errors import PesError

PARAMETERIZATIONS = ("hyper", "exp", "sigmoid")


def schedule(phases: int, *, sigma0: float, sigma_exponent: float, sigma_min: float = 0.0) -> np.ndarray:
    """``[P]``: ``σ_p = max(σ_0 (p+1)^{−y}, σ_min)``."""
    if isinstance(phases, bool) or not isinstance(phases, (int, np.integer)) or phases < 1:
        raise PesError(f"phases must be an integer >= 1, got {phases!r}")
    if not (math.isfinite(sigma0) and sigma0 > 0):
        raise PesError(f"sigma0 must be a positive finite number, got {sigma0!r}")
    if not (math.isfinite(sigma_exponent) and sigma_exponent > 0):
        raise PesError(f"sigma_exponent (y) must be a positive finite number, got {sigma_exponent!r}")
    if not (math.isfinite(sigma_min) and sigma_min >= 0):
        raise PesError(f"sigma_min must be a finite number >= 0, got {sigma_min!r}")
    p = np.arange(phases, dtype=np.float64)
    return np.maximum(sigma0 * (p + 1.0) ** (-sigma_exponent), sigma_min)


class Parameterization:
    """``σ = g(ν)`` with its derivative and inverse; ``clip(ν)`` keeps ν in the domain (hyper: ν ≤ 0)."""

    def __init__(self, name: str, *, exponent: float = 1.0) -> None:
        if name not in PARAMETERIZATIONS:
            raise PesError(f"parameterization must be one of {PARAMETERIZATIONS}, got {name!r}")
        if not (math.isfinite(exponent) and exponent > 0):
            raise PesError(f"sigma_exponent (y) must be a positive finite number, got {exponent!r}")
        self.name, self.y = name, float(exponent)

    def sigma(self, nu: float | np.ndarray) -> float | np.ndarray:
        if self.name == "hyper":
            return (1.0 - nu) ** (-self.y)
        if self.name == "exp":
            return np.exp(nu)
        return 1.0 / (1.0 + np.exp(-nu))

    def dsigma(self, nu: float | np.ndarray) -> float | np.ndarray:
        if self.name == "hyper":
            return self.y * (1.0 - nu) ** (-self.y - 1.0)
        s = self.sigma(nu)
        return s if self.name == "exp" else s * (1.0 - s)

    def inverse(self, sigma: float | np.ndarray) -> float | np.ndarray:
        s = np.asarray(sigma, dtype=np.float64)
        if np.any(s <= 0):
            raise PesError(f"sigma must be > 0, got {sigma!r}")
        if self.name == "hyper":
            if np.any(s > 1):
                raise PesError(f"the 'hyper' parameterisation has sigma <= 1 (nu <= 0); got sigma0 = {sigma!r}")
            out = 1.0 - s ** (-1.0 / self.y)
        elif self.name == "exp":
            out = np.log(s)
        else:
            if np.any(s >= 1):
                raise PesError(f"the 'sigmoid' parameterisation has sigma < 1; got sigma0 = {sigma!r}")
            out = np.log(s / (1.0 - s))
        return float(out) if np.ndim(out) == 0 else out

    def clip(self, nu: float) -> float:
        return min(nu, 0.0) if self.name == "hyper" else nu
