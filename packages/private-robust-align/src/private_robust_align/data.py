"""Generated preference data with a known ground truth (never downloaded).

Linear Bradley–Terry: ``θ* [d]`` with ``‖θ*‖ = B``; feature differences ``x [n, d]`` either uniform in the ball of
radius L (``design="ball"``: uniform coverage) or Gaussian ``N(0, L² I/d)`` (``design="gaussian"``); labels
``y ~ Bern(σ(θ*ᵀx))`` in {0, 1}.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from private_robust_align.errors import PrivateRobustAlignError

DESIGNS = ("ball", "gaussian")


@dataclass(frozen=True)
class Preferences:
    """``x [n, d]`` feature differences, ``y [n]`` clean labels, ``theta_star [d]``."""

    x: np.ndarray
    y: np.ndarray
    theta_star: np.ndarray


def make_theta_star(dim: int, *, norm: float = 2.0, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random direction scaled to ``‖θ*‖ = norm``."""
    g = rng.standard_normal(dim)
    return norm * g / np.linalg.norm(g)


def sample_features(n: int, dim: int, *, design: str = "ball", scale: float = 1.0,
                    rng: np.random.Generator) -> np.ndarray:
    """``[n, dim]`` features: uniform in the ball of radius ``scale`` or ``N(0, scale² I / dim)``."""
    if design not in DESIGNS:
        raise PrivateRobustAlignError(f"design must be one of {DESIGNS}, got {design!r}")
    g = rng.standard_normal((n, dim))
    if design == "gaussian":
        return scale * g / np.sqrt(dim)
    r = rng.random(n) ** (1.0 / dim)  # radius of a uniform point in the d-ball
    return scale * g / np.linalg.norm(g, axis=1, keepdims=True) * r[:, None]


def bt_labels(x: np.ndarray, theta_star: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``y ~ Bern(σ(θ*ᵀx))`` as int64 ``[n]``."""
    return (rng.random(x.shape[0]) < expit(x @ theta_star)).astype(np.int64)


def make_preferences(n: int, dim: int, *, norm: float = 2.0, design: str = "ball", scale: float = 1.0,
                     seed: int, theta_star: np.ndarray | None = None) -> Preferences:
    """n preference pairs from a linear Bradley–Terry model (θ* drawn from ``seed`` unless given)."""
    if n < 1 or dim < 1:
        raise PrivateRobustAlignError(f"n and dim must be >= 1, got n={n}, dim={dim}")
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 17]))
    t = make_theta_star(dim, norm=norm, rng=rng) if theta_star is None else np.asarray(theta_star, float)
    x = sample_features(n, dim, design=design, scale=scale, rng=rng)
    return Preferences(x=x, y=bt_labels(x, t, rng), theta_star=t)
