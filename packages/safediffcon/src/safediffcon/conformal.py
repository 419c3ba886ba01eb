"""Weighted conformal prediction of the safety-score error (SafeDiffCon, Sec. 3.2, Eq. 6-7).

Calibration: sample the model on the calibration set with the true control inpainted, score
``c_i = |s_hat_i - s_i|`` and weight each point by the distribution shift toward the safe model,
``w_i = exp(-lambda * max(s_i + Q_prev - s0, 0))``. The quantile ``Q`` then gives, with probability about
``alpha``, ``s_true <= s_hat + Q``, so ``s_hat + Q <= s0`` certifies safety.

Two quantiles (``method``):

* ``"weighted"`` (default, textbook weighted conformal prediction, Tibshirani et al. 2019): the ``alpha``-quantile of
  ``sum_i p_i delta_{c_i} + p_{n+1} delta_{+inf}`` with ``p_i = w_i / (sum_j w_j + w_{n+1})`` and the test point's
  (unknown) weight set to the largest calibration weight, ``w_{n+1} = max_i w_i`` (conservative and invariant to
  rescaling all weights);
* ``"official"`` (the released code): the ``ceil(alpha (n + 1))``-th smallest of the weighted scores
  ``w_hat_i c_i`` with ``w_hat_i = n w_i / sum_j w_j``.

With uniform weights both are the split-conformal rank ``ceil(alpha (n + 1))``. A calibration set too small for
``alpha`` (``ceil(alpha (n + 1)) > n``) is refused in both (the official code silently clamps to the largest score).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from safediffcon.errors import SafediffconError


def _check_alpha(alpha: float) -> None:
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and 0 < alpha < 1):
        raise SafediffconError(f"alpha must be in (0, 1) (the coverage level), got {alpha!r}")


def split_rank(n: int, alpha: float) -> int:
    """``ceil(alpha (n + 1))`` (1-based), refusing a calibration set too small for ``alpha``."""
    _check_alpha(alpha)
    k = math.ceil(alpha * (n + 1) - 1e-12)
    if k > n:
        raise SafediffconError(f"calibration set too small for alpha={alpha}: ceil(alpha (n+1)) = {k} > n = {n}; "
                               f"need n >= {math.ceil(alpha / (1 - alpha))} samples or a smaller alpha")
    return k


def safety_weights(s: np.ndarray, *, Q: float, s0: float, lam: float) -> np.ndarray:
    """``w = exp(-lam * max(s + Q - s0, 0))`` in (0, 1]: 1 for points that stay safe with the margin ``Q``."""
    if not (math.isfinite(lam) and lam >= 0):
        raise SafediffconError(f"lambda (weight_lambda) must be a finite number >= 0, got {lam!r}")
    s = np.asarray(s, dtype=np.float64)
    return np.exp(-lam * np.maximum(s + Q - s0, 0.0))


def relative_safety_weights(s: np.ndarray, *, Qs: tuple[float, ...], s0: float, lam: float) -> np.ndarray:
    """``prod_Q exp(-lam max(s + Q - s0, 0))`` divided by its largest entry, computed in log space (so the weights
    stay finite when every point is beyond the bound: the points closest to it keep the weight)."""
    if not (math.isfinite(lam) and lam >= 0):
        raise SafediffconError(f"lambda (weight_lambda) must be a finite number >= 0, got {lam!r}")
    s = np.asarray(s, dtype=np.float64)
    logw = np.zeros_like(s)
    for q in Qs:
        logw -= lam * np.maximum(s + q - s0, 0.0)
    return np.exp(logw - logw.max())


def normalise(w: np.ndarray) -> np.ndarray:
    """``w_hat = n w / sum w`` (mean 1)."""
    w = np.asarray(w, dtype=np.float64)
    return w * (len(w) / w.sum())


def quantile(scores, weights=None, *, alpha: float = 0.98, method: str = "weighted") -> float:
    """The conformal quantile ``Q`` of ``scores [n]`` with ``weights [n]`` (None: uniform); see the module doc.

    Returns ``+inf`` (with a warning) when the weighted mass of the finite scores cannot reach ``alpha``
    (``"weighted"`` with a few heavy points: the effective calibration size is below ``1 / (1 - alpha)``).
    """
    _check_alpha(alpha)
    c = np.asarray(scores, dtype=np.float64).ravel()
    n = c.size
    if n == 0:
        raise SafediffconError("scores is empty: the calibration set needs at least one sample")
    if not np.isfinite(c).all() or (c < 0).any():
        raise SafediffconError("scores must be finite and >= 0 (|s_hat - s|)")
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    if w.shape != c.shape:
        raise SafediffconError(f"weights must have the shape of scores {c.shape}, got {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise SafediffconError("weights must be finite, >= 0 and not all 0")
    k = split_rank(n, alpha)
    if method == "official":
        ws = np.sort(normalise(w) * c)
        return float(ws[min(k, n) - 1])
    if method != "weighted":
        raise SafediffconError(f"method must be 'weighted' or 'official', got {method!r}")
    order = np.argsort(c, kind="stable")
    p = w[order] / (w.sum() + w.max())  # the test point's weight w_{n+1} = max w sits at +inf
    cum = np.cumsum(p)
    hit = np.nonzero(cum >= alpha - 1e-12)[0]
    if hit.size == 0:
        n_eff = w.sum() ** 2 / (w**2).sum()
        warnings.warn(f"weighted conformal quantile is +inf: effective calibration size {n_eff:.1f} < "
                      f"1/(1-alpha) = {1 / (1 - alpha):.0f}", RuntimeWarning, stacklevel=2)
        return math.inf
    return float(c[order][hit[0]])
