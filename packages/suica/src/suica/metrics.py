"""Evaluation metrics of SUICA (official ``utils.metrics``, with the audit's fixes).

All take ``pred`` and ``truth`` of shape ``(n_spots, n_genes)``:

* ``mae``, ``mse``, ``rmse = √mse`` (the official per-gene-averaged RMSE is ``rmse_per_gene``);
* ``cosine`` / ``masked_cosine``: mean over spots of the cosine similarity, the masked one restricted per spot to
  the truth's support ``y > 0`` (per spot; the official pooled variant is ``masked_cosine_pooled``);
* ``sam`` / ``masked_sam``: spectral angle in degrees (per spot);
* ``pearson`` / ``masked_pearson``: mean per-spot Pearson correlation (masked: on ``y > 0``);
* ``zero_iou``: IoU of the zero maps ``{ŷ == 0}`` vs ``{y == 0}`` (exact zeros, as released; ``tau`` > 0 gives
  the thresholded variant ``ŷ <= tau``); ``support_recovery``: IoU of the supports ``{ŷ > tau}`` vs ``{y > 0}``.

Degenerate rows (zero norm, constant, fewer than 2 masked entries) are defined explicitly: cosine 0, angle 90°,
correlation excluded from the mean; the number of excluded spots is returned (``n_degenerate_*``), and a metric
never becomes NaN because of one row.
"""

from __future__ import annotations

import numpy as np


def _rowwise_cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    ok = (na > 0) & (nb > 0)
    out = np.zeros(a.shape[0])
    out[ok] = (a[ok] * b[ok]).sum(1) / (na[ok] * nb[ok])
    return np.clip(out, -1.0, 1.0)


def _rowwise_pearson(a: np.ndarray, b: np.ndarray, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-row Pearson r (masked: only entries where mask); returns ``(r (n,), valid (n,))``."""
    if mask is None:
        mask = np.ones_like(a, dtype=bool)
    m = mask.astype(np.float64)
    cnt = m.sum(1)
    safe = np.maximum(cnt, 1)
    ma = (a * m).sum(1) / safe
    mb = (b * m).sum(1) / safe
    da, db = (a - ma[:, None]) * m, (b - mb[:, None]) * m
    va, vb = (da**2).sum(1), (db**2).sum(1)
    valid = (cnt >= 2) & (va > 1e-24) & (vb > 1e-24)
    r = np.zeros(a.shape[0])
    r[valid] = (da * db).sum(1)[valid] / np.sqrt(va[valid] * vb[valid])
    return np.clip(r, -1.0, 1.0), valid


def zero_iou(pred: np.ndarray, truth: np.ndarray, *, tau: float = 0.0) -> float:
    """IoU of ``{ŷ <= tau}`` (exact zeros when tau = 0) and ``{y == 0}``, pooled over the matrix."""
    p = pred <= tau if tau > 0 else pred == 0
    t = truth == 0
    union = (p | t).sum()
    return float((p & t).sum() / union) if union else 1.0


def support_recovery(pred: np.ndarray, truth: np.ndarray, *, tau: float = 0.0) -> float:
    """IoU of the supports ``{ŷ > tau}`` and ``{y > 0}``."""
    p, t = pred > tau, truth > 0
    union = (p | t).sum()
    return float((p & t).sum() / union) if union else 1.0


def masked_cosine(pred: np.ndarray, truth: np.ndarray, *, pooled: bool = False) -> float:
    """Cosine similarity on the truth's support: per-spot mean (default) or pooled over all entries (official)."""
    mask = truth > 0
    if pooled:
        p, t = pred[mask], truth[mask]
        den = np.linalg.norm(p) * np.linalg.norm(t)
        return float(p @ t / den) if den > 0 else 0.0
    return float(_rowwise_cos(np.where(mask, pred, 0.0), np.where(mask, truth, 0.0)).mean())


def evaluate(pred, truth, *, tau: float = 0.0) -> dict[str, float]:
    """All metrics of the module docstring as a dict of floats."""
    pred = np.asarray(pred, dtype=np.float64)
    truth = np.asarray(truth, dtype=np.float64)
    if pred.shape != truth.shape or pred.ndim != 2:
        raise ValueError(f"pred and truth must be (n_spots, n_genes) of equal shape, got {pred.shape} and {truth.shape}")
    if not np.isfinite(pred).all():
        raise ValueError("pred contains NaN or inf")
    diff = pred - truth
    mask = truth > 0
    mse = float((diff**2).mean())
    cos = _rowwise_cos(pred, truth)
    mcos = _rowwise_cos(np.where(mask, pred, 0.0), np.where(mask, truth, 0.0))
    r, rv = _rowwise_pearson(pred, truth)
    mr, mrv = _rowwise_pearson(pred, truth, mask)
    return {
        "mae": float(np.abs(diff).mean()),
        "mse": mse,
        "rmse": float(np.sqrt(mse)),
        "rmse_per_gene": float(np.sqrt((diff**2).mean(0)).mean()),
        "masked_mae": float(np.abs(diff[mask]).mean()) if mask.any() else 0.0,
        "masked_mse": float((diff[mask] ** 2).mean()) if mask.any() else 0.0,
        "cosine": float(cos.mean()),
        "masked_cosine": float(mcos.mean()),
        "masked_cosine_pooled": masked_cosine(pred, truth, pooled=True),
        "sam": float(np.degrees(np.arccos(cos)).mean()),
        "masked_sam": float(np.degrees(np.arccos(mcos)).mean()),
        "pearson": float(r[rv].mean()) if rv.any() else 0.0,
        "masked_pearson": float(mr[mrv].mean()) if mrv.any() else 0.0,
        "n_degenerate_pearson": int((~rv).sum()),
        "n_degenerate_masked_pearson": int((~mrv).sum()),
        "zero_iou": zero_iou(pred, truth, tau=tau),
        "support_recovery": support_recovery(pred, truth, tau=tau),
    }


def rate_correlation(values, rate) -> float:
    """Mean per-spot Pearson correlation of ``log1p`` values with ``log`` of the true rate (denoising metric).

    Both ``(n, G)``; log scales are used because rates span orders of magnitude.
    """
    v = np.log1p(np.asarray(values, dtype=np.float64))
    t = np.log(np.asarray(rate, dtype=np.float64) + 1e-8)
    r, ok = _rowwise_pearson(v, t)
    return float(r[ok].mean()) if ok.any() else 0.0


def clustering_ari(expr, domains, *, n_clusters: int | None = None, n_pcs: int = 15, seed: int = 0) -> float:
    """ARI of KMeans clusters (K = number of true domains) on PCA(log1p(expr)) against the true domains."""
    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA
    from sklearn.metrics import adjusted_rand_score

    x = np.log1p(np.asarray(expr, dtype=np.float64))
    labels = np.asarray(domains)
    k = n_clusters or len(np.unique(labels))
    n_pcs = max(1, min(n_pcs, x.shape[1] - 1, x.shape[0] - 1))
    if np.allclose(x.std(0), 0):
        return 0.0
    z = PCA(n_components=n_pcs, random_state=seed).fit_transform(x)
    pred = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(z)
    return float(adjusted_rand_score(labels, pred))


def leiden_available() -> bool:
    """True when ``igraph`` and ``leidenalg`` import (extra ``suica[leiden]``)."""
    try:
        import igraph  # noqa: F401
        import leidenalg  # noqa: F401
    except ImportError:
        return False
    return True


def leiden_ari(expr, domains, *, n_pcs: int = 15, n_neighbors: int = 15, resolution: float = 0.5,
               seed: int = 0) -> float:
    """ARI of Leiden clusters (scanpy ``tl.leiden``, igraph flavour) on PCA(log1p(expr)) against the true domains.

    The neighbourhood graph is the symmetrised k-NN graph of the PCA scores (sklearn), passed to scanpy as
    ``adjacency`` (no UMAP / numba). Falls back to :func:`clustering_ari` (KMeans) when Leiden is unavailable.
    """
    if not leiden_available():
        return clustering_ari(expr, domains, n_pcs=n_pcs, seed=seed)
    import anndata as ad
    import scanpy as sc
    from sklearn.decomposition import PCA
    from sklearn.metrics import adjusted_rand_score
    from sklearn.neighbors import kneighbors_graph

    x = np.log1p(np.asarray(expr, dtype=np.float64))
    if np.allclose(x.std(0), 0):
        return 0.0
    n_pcs = max(1, min(n_pcs, x.shape[1] - 1, x.shape[0] - 1))
    z = PCA(n_components=n_pcs, random_state=seed).fit_transform(x)
    adj = kneighbors_graph(z, n_neighbors=min(n_neighbors, len(z) - 1), include_self=False)
    adj = adj.maximum(adj.T).tocsr()
    a = ad.AnnData(np.asarray(z, dtype=np.float32))
    sc.tl.leiden(a, adjacency=adj, resolution=resolution, random_state=seed, flavor="igraph", n_iterations=2,
                 directed=False)
    return float(adjusted_rand_score(np.asarray(domains), np.asarray(a.obs["leiden"])))
