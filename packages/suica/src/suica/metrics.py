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


def zero_map_miou(pred: np.ndarray, truth: np.ndarray, *, tau: float = 0.0) -> float:
    """Mean IoU of the two classes of the zero map: ``(zero_iou + support_recovery) / 2`` at threshold ``tau``.

    Exact-zero IoU alone rewards predicting 0 everywhere (it then equals the truth's zero fraction, 0.8-0.94 on our
    tissues); the mean with the support IoU does not (all zeros score ``zero fraction / 2``)."""
    return 0.5 * (zero_iou(pred, truth, tau=tau) + support_recovery(pred, truth, tau=tau))


def masked_cosine(pred: np.ndarray, truth: np.ndarray, *, pooled: bool = False) -> float:
    """Cosine similarity on the truth's support: per-spot mean (default) or pooled over all entries (official)."""
    mask = truth > 0
    if pooled:
        p, t = pred[mask], truth[mask]
        den = np.linalg.norm(p) * np.linalg.norm(t)
        return float(p @ t / den) if den > 0 else 0.0
    return float(_rowwise_cos(np.where(mask, pred, 0.0), np.where(mask, truth, 0.0)).mean())


def _rows(m, start: int, stop: int) -> np.ndarray:
    """Rows ``start:stop`` of a dense or scipy-sparse matrix as a dense float64 array (only these rows)."""
    part = m[start:stop]
    if hasattr(part, "toarray"):
        part = part.toarray()
    return np.asarray(part, dtype=np.float64)


class MetricAccumulator:
    """The metrics of :func:`evaluate` accumulated over row chunks (sums, counts and per-row values), so that
    ``(n, G)`` predictions and truths never have to be dense as a whole: ``update(pred_rows, truth_rows)`` any number
    of times, then ``result()``. One chunk with all rows gives exactly :func:`evaluate`'s definitions."""

    def __init__(self, *, tau: float = 0.0):
        self.tau = float(tau)
        self.n_rows = 0
        self.n_genes: int | None = None
        self.s: dict[str, float] = {k: 0.0 for k in (
            "abs", "sq", "m_abs", "m_sq", "m_cnt", "cos", "mcos", "sam", "msam", "r", "r_n", "mr", "mr_n", "pt", "pp",
            "tt", "z_inter", "z_union", "s_inter", "s_union")}
        self.gene_sq: np.ndarray | None = None

    def update(self, pred, truth) -> MetricAccumulator:
        pred = np.asarray(pred, dtype=np.float64)
        truth = np.asarray(truth, dtype=np.float64)
        if pred.shape != truth.shape or pred.ndim != 2:
            raise ValueError(f"pred and truth must be (n_spots, n_genes) of equal shape, got {pred.shape} and "
                             f"{truth.shape}")
        if self.n_genes is None:
            self.n_genes, self.gene_sq = pred.shape[1], np.zeros(pred.shape[1])
        elif pred.shape[1] != self.n_genes:
            raise ValueError(f"chunks must have {self.n_genes} genes, got {pred.shape[1]}")
        if not np.isfinite(pred).all():
            raise ValueError("pred contains NaN or inf")
        s, tau = self.s, self.tau
        diff = pred - truth
        mask = truth > 0
        s["abs"] += np.abs(diff).sum()
        s["sq"] += (diff**2).sum()
        self.gene_sq += (diff**2).sum(0)
        s["m_abs"] += np.abs(diff[mask]).sum()
        s["m_sq"] += (diff[mask] ** 2).sum()
        s["m_cnt"] += mask.sum()
        cos = _rowwise_cos(pred, truth)
        mcos = _rowwise_cos(np.where(mask, pred, 0.0), np.where(mask, truth, 0.0))
        s["cos"] += cos.sum()
        s["mcos"] += mcos.sum()
        s["sam"] += np.degrees(np.arccos(cos)).sum()
        s["msam"] += np.degrees(np.arccos(mcos)).sum()
        r, rv = _rowwise_pearson(pred, truth)
        mr, mrv = _rowwise_pearson(pred, truth, mask)
        s["r"] += r[rv].sum()
        s["r_n"] += rv.sum()
        s["mr"] += mr[mrv].sum()
        s["mr_n"] += mrv.sum()
        p, t = pred[mask], truth[mask]
        s["pt"] += p @ t
        s["pp"] += p @ p
        s["tt"] += t @ t
        pz = pred <= tau if tau > 0 else pred == 0
        tz = truth == 0
        s["z_inter"] += (pz & tz).sum()
        s["z_union"] += (pz | tz).sum()
        ps = pred > tau
        s["s_inter"] += (ps & mask).sum()
        s["s_union"] += (ps | mask).sum()
        self.n_rows += pred.shape[0]
        return self

    def result(self) -> dict[str, float]:
        s, n = self.s, self.n_rows
        if n == 0:
            raise ValueError("no rows to evaluate")
        ne = n * self.n_genes
        mse = s["sq"] / ne
        den = np.sqrt(s["pp"]) * np.sqrt(s["tt"])
        return {
            "mae": float(s["abs"] / ne),
            "mse": float(mse),
            "rmse": float(np.sqrt(mse)),
            "rmse_per_gene": float(np.sqrt(self.gene_sq / n).mean()),
            "masked_mae": float(s["m_abs"] / s["m_cnt"]) if s["m_cnt"] else 0.0,
            "masked_mse": float(s["m_sq"] / s["m_cnt"]) if s["m_cnt"] else 0.0,
            "cosine": float(s["cos"] / n),
            "masked_cosine": float(s["mcos"] / n),
            "masked_cosine_pooled": float(s["pt"] / den) if den > 0 else 0.0,
            "sam": float(s["sam"] / n),
            "masked_sam": float(s["msam"] / n),
            "pearson": float(s["r"] / s["r_n"]) if s["r_n"] else 0.0,
            "masked_pearson": float(s["mr"] / s["mr_n"]) if s["mr_n"] else 0.0,
            "n_degenerate_pearson": int(n - s["r_n"]),
            "n_degenerate_masked_pearson": int(n - s["mr_n"]),
            "zero_iou": float(s["z_inter"] / s["z_union"]) if s["z_union"] else 1.0,
            "support_recovery": float(s["s_inter"] / s["s_union"]) if s["s_union"] else 1.0,
        }


def evaluate(pred, truth, *, tau: float = 0.0, chunk: int = 4096) -> dict[str, float]:
    """All metrics of the module docstring as a dict of floats.

    ``pred`` and ``truth``: ``(n_spots, n_genes)``, dense or scipy-sparse; they are read ``chunk`` rows at a time
    (:class:`MetricAccumulator`), so sparse input is never densified as a whole.
    """
    pred = pred if hasattr(pred, "shape") else np.asarray(pred, dtype=np.float64)
    truth = truth if hasattr(truth, "shape") else np.asarray(truth, dtype=np.float64)
    if pred.ndim != 2 or truth.ndim != 2 or pred.shape != truth.shape:
        raise ValueError(f"pred and truth must be (n_spots, n_genes) of equal shape, got {np.shape(pred)} and "
                         f"{np.shape(truth)}")
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    acc = MetricAccumulator(tau=tau)
    for start in range(0, pred.shape[0], chunk):
        acc.update(_rows(pred, start, start + chunk), _rows(truth, start, start + chunk))
    return acc.result()


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
