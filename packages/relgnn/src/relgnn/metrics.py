"""Evaluation metrics (RelBench's): ROC-AUC, MAE and MAP@k, with shape checks that fail clearly."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.metrics import roc_auc_score

from relgnn.errors import TaskError


def roc_auc(target, score) -> float:
    """Area under the ROC curve of binary ``target`` (n,) against real-valued ``score`` (n,)."""
    target, score = np.asarray(target), np.asarray(score, dtype=float)
    if target.shape != score.shape or target.ndim != 1:
        raise TaskError(f"roc_auc: target and score must both have shape (n,), got {target.shape} and {score.shape}")
    if len(np.unique(target)) < 2:
        return float("nan")
    return float(roc_auc_score(target, score))


def mae(target, pred) -> float:
    """Mean absolute error."""
    target, pred = np.asarray(target, dtype=float), np.asarray(pred, dtype=float)
    if target.shape != pred.shape:
        raise TaskError(f"mae: target and prediction shapes differ: {target.shape} vs {pred.shape}")
    return float(np.mean(np.abs(target - pred)))


def map_at_k(pred, dst_lists: Sequence[Sequence[int]], *, k: int, num_dst: int | None = None) -> float:
    """MAP@k of top-k predictions ``pred`` (n, k) (item ids, best first) against the true destination lists.

    ``AP_i = Σ_j P@j · rel_j / min(|true_i|, k)``; rows with no true destination are skipped (as RelBench).
    """
    pred = np.asarray(pred)
    if pred.shape != (len(dst_lists), k):
        raise TaskError(f"recommendation predictions must have shape (n_rows, k) = {(len(dst_lists), k)}, "
                        f"got {pred.shape}")
    if pred.size and (pred.min() < 0 or (num_dst is not None and pred.max() >= num_dst)):
        raise TaskError(f"recommendation predictions must be destination ids in [0, {num_dst}), "
                        f"got range [{pred.min()}, {pred.max()}]")
    aps = []
    for row, true in zip(pred, dst_lists):
        true = set(int(x) for x in true)
        if not true:
            continue
        hit = np.array([int(x) in true for x in row], dtype=float)
        prec = np.cumsum(hit) / (np.arange(k) + 1)
        aps.append(float((prec * hit).sum() / min(len(true), k)))
    return float(np.mean(aps)) if aps else float("nan")
