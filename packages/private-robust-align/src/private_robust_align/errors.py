"""Errors of private-robust-align: all derive from icml25's UserInputError (exit 2 with one `error:` line).

The ``check_*`` helpers validate the inputs every public function shares (privacy level, corruption level, labels,
features) and name the field and what is allowed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from icml25.errors import UserInputError


class PrivateRobustAlignError(UserInputError):
    """Bad input to private-robust-align."""


def check_epsilon(epsilon: Any, name: str = "epsilon") -> float:
    """``epsilon`` must be a number > 0; ``inf`` is allowed (no privacy)."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.floating, np.integer)):
        raise PrivateRobustAlignError(f"{name} must be a number > 0 (inf = no privacy), got {epsilon!r}")
    e = float(epsilon)
    if math.isnan(e) or e <= 0:
        raise PrivateRobustAlignError(f"{name} must be > 0 (inf = no privacy), got {epsilon!r}")
    return e


def check_alpha(alpha: Any, name: str = "alpha") -> float:
    """A corruption fraction must lie in [0, 0.5)."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating, np.integer)):
        raise PrivateRobustAlignError(f"{name} must be a number in [0, 0.5), got {alpha!r}")
    a = float(alpha)
    if not (0.0 <= a < 0.5):
        raise PrivateRobustAlignError(f"{name} must be in [0, 0.5), got {alpha!r}")
    return a


def check_features(x: Any, name: str = "x") -> np.ndarray:
    """Features ``[n, d]`` as float64: 2-D, n >= 1, d >= 1, finite."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise PrivateRobustAlignError(f"{name} must be a numeric array [n, d]") from None
    if arr.ndim != 2:
        raise PrivateRobustAlignError(f"{name} must be a 2-D array [n, d], got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise PrivateRobustAlignError(f"{name} has n = 0 rows; at least one example is needed")
    if arr.shape[1] == 0:
        raise PrivateRobustAlignError(f"{name} has d = 0 columns; at least one feature is needed")
    if not np.isfinite(arr).all():
        raise PrivateRobustAlignError(f"{name} must be finite (found NaN or inf)")
    return arr


def check_labels(labels: Any, n: int | None = None, name: str = "labels") -> np.ndarray:
    """Binary labels ``[n]`` in {0, 1}, returned as int64."""
    try:
        arr = np.asarray(labels)
    except (TypeError, ValueError):  # pragma: no cover - asarray accepts nearly anything
        raise PrivateRobustAlignError(f"{name} must be an array of 0/1 labels") from None
    if arr.ndim != 1:
        raise PrivateRobustAlignError(f"{name} must be a 1-D array [n], got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise PrivateRobustAlignError(f"{name} has {arr.shape[0]} entries but the features have n = {n} rows "
                                      "(shape mismatch)")
    if arr.shape[0] == 0:
        raise PrivateRobustAlignError(f"{name} is empty (n = 0); at least one example is needed")
    if arr.dtype.kind not in "biuf" or not np.isin(arr, (0, 1)).all():
        bad = arr[~np.isin(arr, (0, 1))][:3] if arr.dtype.kind in "biuf" else arr[:3]
        raise PrivateRobustAlignError(f"{name} must be in {{0, 1}}, found e.g. {bad.tolist()}")
    return arr.astype(np.int64)


def check_radius(radius: Any, name: str = "radius") -> float:
    """The norm bound B of the estimator: > 0 (``inf`` = unconstrained)."""
    if isinstance(radius, bool) or not isinstance(radius, (int, float, np.floating, np.integer)):
        raise PrivateRobustAlignError(f"{name} (B) must be a number > 0, got {radius!r}")
    r = float(radius)
    if math.isnan(r) or r <= 0:
        raise PrivateRobustAlignError(f"{name} (B) must be > 0 (inf = no norm constraint), got {radius!r}")
    return r


def check_l2(l2: Any, name: str = "l2") -> float:
    """The ridge weight lambda: finite and >= 0."""
    if isinstance(l2, bool) or not isinstance(l2, (int, float, np.floating, np.integer)) or not math.isfinite(l2) \
            or l2 < 0:
        raise PrivateRobustAlignError(f"{name} (lambda) must be a finite number >= 0, got {l2!r}")
    return float(l2)
