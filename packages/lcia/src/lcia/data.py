"""Data with a known ground truth (generated, never downloaded)."""

from __future__ import annotations

import numpy as np


def make_data(n: int, dim: int, *, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``X [n, dim]``, ``y [n]`` and the true weights ``w [dim]`` with ``y = X w + noise * eps``."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(dim)
    x = rng.standard_normal((n, dim))
    return x, x @ w + noise * rng.standard_normal(n), w
