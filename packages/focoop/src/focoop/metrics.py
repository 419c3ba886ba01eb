"""OOD-detection metrics: AUROC and FPR at 95 % TPR (higher score = more in-distribution).

FOCoOp (Liao et al., ICML 2025) reports ACC, CACC, FPR95 and AUROC. The convention here is the standard one:
ID samples are the positives and a *higher* score means *more ID*.

* ``auroc(s_id, s_ood)`` = P(s_ID > s_OOD) + ½ P(s_ID = s_OOD) (Mann-Whitney), via ``sklearn.metrics.roc_auc_score``.
* ``fpr_at_95_tpr(s_id, s_ood)`` = fraction of OOD scores ≥ τ₉₅, where τ₉₅ is the largest threshold that keeps
  TPR ≥ 0.95 (the first point of the ROC curve with TPR ≥ 0.95).
* ``fpr_at_95_tpr_official`` reproduces the released code's ``compute_fnr(id_scores, ood_scores)``: it labels ID as
  positive, builds a DET curve and returns the **FNR at the point whose FPR is closest to 5 %**, which is not the
  FPR at 95 % TPR (the two only coincide for equal-variance score distributions).

Inputs: two 1-D arrays of shape (n_id,) and (n_ood,), non-empty and finite.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import det_curve, roc_auc_score, roc_curve

from focoop.errors import FOCoOpConfigError


def _as_scores(id_scores, ood_scores) -> tuple[np.ndarray, np.ndarray]:
    arrays = []
    for name, s in (("id_scores", id_scores), ("ood_scores", ood_scores)):
        a = np.asarray(s.detach().cpu().numpy() if hasattr(s, "detach") else s, dtype=np.float64)
        if a.ndim != 1:
            raise FOCoOpConfigError(f"{name} must be a 1-D array, got shape {a.shape}")
        if a.size == 0:
            raise FOCoOpConfigError(f"{name} must not be empty")
        if not np.all(np.isfinite(a)):
            raise FOCoOpConfigError(f"{name} contains NaN or inf; scores must be finite")
        arrays.append(a)
    return arrays[0], arrays[1]


def _labels_scores(s_id: np.ndarray, s_ood: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = np.concatenate([np.ones(s_id.size), np.zeros(s_ood.size)])
    return y, np.concatenate([s_id, s_ood])


def auroc(id_scores, ood_scores) -> float:
    """Area under the ROC curve with ID as positives; 1.0 = perfect separation, 0.5 = chance."""
    s_id, s_ood = _as_scores(id_scores, ood_scores)
    y, s = _labels_scores(s_id, s_ood)
    return float(roc_auc_score(y, s))


def fpr_at_95_tpr(id_scores, ood_scores, *, tpr: float = 0.95) -> float:
    """False-positive rate (OOD accepted as ID) at the first threshold reaching ``tpr`` true-positive rate."""
    if not 0.0 < tpr <= 1.0:
        raise FOCoOpConfigError(f"tpr must lie in (0, 1], got {tpr}")
    s_id, s_ood = _as_scores(id_scores, ood_scores)
    y, s = _labels_scores(s_id, s_ood)
    fpr, tprs, _ = roc_curve(y, s, drop_intermediate=False)
    idx = int(np.searchsorted(tprs, tpr - 1e-12, side="left"))
    return float(fpr[min(idx, fpr.size - 1)])


def fpr_at_95_tpr_official(id_scores, ood_scores, *, fpr_cutoff: float = 0.05) -> float:
    """The official code's 'FPR95': FNR of the ID set at the DET point whose FPR (OOD accepted) is nearest 5 %.

    Kept only for comparison with the released numbers (``--official-metrics``); see the module docstring.
    """
    s_id, s_ood = _as_scores(id_scores, ood_scores)
    y, s = _labels_scores(s_id, s_ood)
    fpr, fnr, _ = det_curve(y, s)
    idx = int(np.argmin(np.abs(fpr - fpr_cutoff)))
    return float(fnr[idx])


def auroc_official(id_scores, ood_scores) -> float:
    """The official ``compute_auroc(id, ood)``: identical to :func:`auroc` (ID labelled positive)."""
    return auroc(id_scores, ood_scores)
