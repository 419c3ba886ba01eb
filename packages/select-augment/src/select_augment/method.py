"""The method (REPLACE this example with the paper's method; cite the paper and give the key equation).

Ridge regression in closed form: ``w = (X^T X + lambda I)^-1 X^T y``; shapes ``X [n, d]``, ``y [n]``, ``w [d]``.
"""

from __future__ import annotations

import numpy as np

from select_augment.errors import SelectAugmentError


def fit(x: np.ndarray, y: np.ndarray, *, ridge: float) -> np.ndarray:
    """Weights ``w [d]`` of ridge regression with penalty ``ridge``."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.shape != (x.shape[0],):
        raise SelectAugmentError(f"x must be [n, d] and y [n], got {x.shape} and {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise SelectAugmentError("x and y must be finite (found NaN or inf)")
    d = x.shape[1]
    return np.linalg.solve(x.T @ x + ridge * np.eye(d), x.T @ y)


def predict(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64) @ w
