"""Continual-learning metrics on an accuracy matrix ``A [T, T]``: ``A[i, j]`` = accuracy on task ``j`` after
training stage ``i`` (entries with ``i < j`` may be NaN: not evaluated).

- Avg        = mean_j A[T−1, j]
- Forgetting = mean_{j < T−1} ( max_{j ≤ i < T−1} A[i, j] − A[T−1, j] )   (Chaudhry et al., 2018)
- BWT        = mean_{j < T−1} ( A[T−1, j] − A[j, j] )                     (Lopez-Paz & Ranzato, 2017)

Values are in the units of ``A`` (fractions here; the paper reports percentage points).
"""

from __future__ import annotations

import numpy as np

from lcia.errors import LciaError


def _matrix(acc) -> np.ndarray:
    a = np.asarray(acc, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 1:
        raise LciaError(f"accuracy matrix must be square [T, T] with T >= 1, got shape {a.shape}")
    lower = np.tril(a)
    if not np.isfinite(lower).all() or not np.isfinite(np.diag(a)).all():
        raise LciaError("accuracy matrix must be finite on and below the diagonal (A[i, j] for i >= j)")
    return a


def average_accuracy(acc) -> float:
    """Mean accuracy over all tasks after the last stage: mean_j A[T−1, j]."""
    a = _matrix(acc)
    return float(a[-1].mean())


def forgetting(acc) -> float:
    """Mean over earlier tasks of the drop from their best earlier accuracy to the final one (0 for T = 1)."""
    a = _matrix(acc)
    T = a.shape[0]
    if T == 1:
        return 0.0
    return float(np.mean([a[j:T - 1, j].max() - a[T - 1, j] for j in range(T - 1)]))


def bwt(acc) -> float:
    """Backward transfer: mean over earlier tasks of final minus just-learned accuracy (negative = forgetting)."""
    a = _matrix(acc)
    T = a.shape[0]
    if T == 1:
        return 0.0
    return float(np.mean([a[T - 1, j] - a[j, j] for j in range(T - 1)]))
