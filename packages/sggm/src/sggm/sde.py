"""Forward noising SDEs of score-based graph generation (GDSS; Song et al. 2021), with closed-form marginals.

Each component ``Y`` (node features ``X [n, F]`` or the upper triangle of the adjacency ``A [n, n]``) is noised by its
own linear SDE ``dY_t = f_t(Y_t) dt + g_t dW_t``, independently of the other component (the paper's factorised
forward system), so that

    p_{0t}(Y_t | Y_0) = N(a_t Y_0, v_t I)            (entry-wise)

* **VP** (variance preserving): ``f_t(y) = -β(t) y / 2``, ``g_t² = β(t)`` with the GDSS linear schedule
  ``β(t) = β_min + (β_max - β_min) t`` (constant when ``β_min = β_max``); ``a_t = exp(-½ ∫_0^t β)``,
  ``v_t = 1 - a_t²``; stationary law ``N(0, I)``.
* **VE** (variance exploding): ``f = 0``, ``σ(t) = σ_min (σ_max/σ_min)^t``, ``g_t² = dσ²/dt = 2 σ(t)² ln(σ_max/σ_min)``;
  ``a_t = 1``, ``v_t = σ(t)² - σ_min²``; prior ``N(0, σ(T)² I)``.

Time runs forward from 0 (data) to T (noise); the reverse system runs from T down to ``t_min``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sggm.errors import SggmError


def _finite(name: str, v: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise SggmError(f"{name} must be a finite number, got {v!r}")
    return float(v)


@dataclass(frozen=True)
class VP:
    """Variance-preserving SDE with the linear schedule ``β(t) = β_min + (β_max - β_min) t`` (GDSS)."""

    beta_min: float = 0.1
    beta_max: float = 1.0

    def __post_init__(self) -> None:
        bmin, bmax = _finite("beta_min", self.beta_min), _finite("beta_max", self.beta_max)
        if bmin < 0 or bmax < 0:
            raise SggmError(f"beta_min and beta_max must be >= 0, got beta_min={bmin}, beta_max={bmax}")
        if bmax < bmin:
            raise SggmError(f"beta_max must be >= beta_min, got beta_min={bmin} > beta_max={bmax}")
        if bmax == 0:
            raise SggmError("beta_max must be > 0 (a zero schedule never noises the data)")

    kind = "VP"

    def beta(self, t):
        return self.beta_min + (self.beta_max - self.beta_min) * np.asarray(t, dtype=np.float64)

    def int_beta(self, t):
        """``∫_0^t β(s) ds = β_min t + ½ (β_max - β_min) t²``."""
        t = np.asarray(t, dtype=np.float64)
        return self.beta_min * t + 0.5 * (self.beta_max - self.beta_min) * t**2

    def mean_coef(self, t):
        """``a_t = exp(-½ ∫_0^t β)``."""
        return np.exp(-0.5 * self.int_beta(t))

    def var(self, t):
        """``v_t = 1 - a_t²`` (computed as ``-expm1(-∫β)`` for accuracy at small t)."""
        return -np.expm1(-self.int_beta(t))

    def drift_coef(self, t):
        """``f_t(y) = drift_coef(t) · y`` with ``drift_coef = -β(t)/2``."""
        return -0.5 * self.beta(t)

    def g2(self, t):
        """Squared diffusion ``g_t² = β(t)``."""
        return self.beta(t)

    def prior_var(self, T: float) -> float:
        """Variance of the sampler's starting law ``N(0, prior_var I)``: the stationary ``1``."""
        return 1.0

    def to_dict(self) -> dict:
        return {"kind": "VP", "beta_min": self.beta_min, "beta_max": self.beta_max}


@dataclass(frozen=True)
class VE:
    """Variance-exploding SDE ``σ(t) = σ_min (σ_max/σ_min)^t`` (Song et al.; GDSS's VE option)."""

    sigma_min: float = 0.2
    sigma_max: float = 1.0

    def __post_init__(self) -> None:
        smin, smax = _finite("sigma_min", self.sigma_min), _finite("sigma_max", self.sigma_max)
        if smin <= 0:
            raise SggmError(f"sigma_min must be > 0, got {smin}")
        if smax <= smin:
            raise SggmError(f"sigma_max must be > sigma_min, got sigma_min={smin}, sigma_max={smax}")

    kind = "VE"

    def sigma(self, t):
        return self.sigma_min * (self.sigma_max / self.sigma_min) ** np.asarray(t, dtype=np.float64)

    def mean_coef(self, t):
        return np.ones_like(np.asarray(t, dtype=np.float64))

    def var(self, t):
        """``v_t = σ(t)² - σ_min²``."""
        return self.sigma(t) ** 2 - self.sigma_min**2

    def drift_coef(self, t):
        return np.zeros_like(np.asarray(t, dtype=np.float64))

    def g2(self, t):
        """``g_t² = dσ(t)²/dt = 2 σ(t)² ln(σ_max/σ_min)``."""
        return 2.0 * self.sigma(t) ** 2 * math.log(self.sigma_max / self.sigma_min)

    def prior_var(self, T: float) -> float:
        return float(self.sigma(T) ** 2)

    def to_dict(self) -> dict:
        return {"kind": "VE", "sigma_min": self.sigma_min, "sigma_max": self.sigma_max}


SDE = VP | VE


def check_sde(name: str, sde) -> None:
    if not isinstance(sde, (VP, VE)):
        raise SggmError(f"{name} must be sggm.VP(...) or sggm.VE(...), got {type(sde).__name__}")
