"""Baselines run side by side with SUICA in ``reproduce`` (same data, splits and seeds).

* :class:`Interpolator` — spatial interpolation of the training spots: ``method="linear"`` (scipy ``griddata``,
  Delaunay-linear, nearest-neighbour fill outside the convex hull; the official ``griddata`` baseline) or
  ``method="idw"`` (inverse-distance weighting over the ``k`` nearest spots, power ``p``) or ``method="gaussian"``
  (Gaussian-kernel smoothing over the ``k`` nearest training spots, ``w ∝ exp(-d² / 2h²)`` with
  ``h = bandwidth × s`` and ``s`` the median nearest-neighbour spacing of the training spots; a training spot is
  its own neighbour at distance 0, so at the training spots this *smooths* the measured counts — the
  spatial-smoothing baseline of the denoising claim).
* :class:`INRRaw` — an INR fitted directly on the genes, ``f: u -> ŷ ∈ R^G`` with a final ReLU and MSE (official
  ``inr_raw``), with the *same* INR family, width, depth, learning rate and total steps as SUICA's INR (the released
  12-layer / lr 1e-5 configuration cannot run; see README).
* AE + INR and SUICA-MSE are :class:`suica.SUICA` with ``use_graph=False`` / ``decoder_loss="mse"``.

Every baseline has ``fit(adata, train_idx=None)`` and ``predict(coords, allow_extrapolation=False) -> AnnData``.
"""

from __future__ import annotations

import numpy as np

from suica.config import SUICAConfig
from suica.coords import CoordFrame, check_coords
from suica.data import validate_adata
from suica.errors import SUICAInputError


def _wrap(coords, y, var_names, frame):
    import anndata as ad
    import pandas as pd
    import scipy.sparse as sp

    obs = pd.DataFrame({"extrapolated": frame.outside(coords)}, index=[f"q{i}" for i in range(len(coords))])
    x = sp.csr_matrix(y, dtype=np.float32) if sp.issparse(y) else np.asarray(y, dtype=np.float32)
    out = ad.AnnData(X=x, obs=obs, var=pd.DataFrame(index=var_names))
    out.obsm["spatial"] = np.asarray(coords, dtype=np.float64)
    return out


def _subset(adata, train_idx):
    from suica.estimator import _train_idx

    idx = _train_idx(adata.n_obs, train_idx)
    return adata[idx]


class Interpolator:
    """Spatial interpolation baseline (``"linear"`` griddata, ``"nearest"``, ``"idw"`` or ``"gaussian"``).

    Every method is a sparse weight matrix ``W (n_query, n_train)`` (``d + 1`` barycentric weights of the enclosing
    Delaunay simplex for ``linear`` — what ``scipy.interpolate.griddata`` computes, nearest spot outside the convex
    hull; one 1 for ``nearest``; ``k`` kernel weights for ``idw`` / ``gaussian``), and the prediction is ``W @ Y``.
    ``Y`` keeps the type of the training expression: sparse (CSR) input stays sparse and the prediction is CSR too;
    dense input gives a dense prediction.
    """

    def __init__(self, *, method: str = "linear", k: int = 8, power: float = 2.0, bandwidth: float = 1.0):
        if method not in ("linear", "nearest", "idw", "gaussian"):
            raise SUICAInputError(f"method must be 'linear', 'nearest', 'idw' or 'gaussian', got {method!r}")
        if isinstance(k, bool) or int(k) != k or k < 1:
            raise SUICAInputError(f"k must be a positive integer, got {k!r}")
        for name, v in (("power", power), ("bandwidth", bandwidth)):
            if not (np.isfinite(v) and v > 0):
                raise SUICAInputError(f"{name} must be a finite number > 0, got {v!r}")
        self.method, self.k, self.power, self.bandwidth = method, int(k), float(power), float(bandwidth)
        self.frame = None
        self.spacing = None

    def fit(self, adata, *, train_idx=None, layer: str | None = None) -> Interpolator:
        import scipy.sparse as sp
        from scipy.spatial import cKDTree

        from suica.data import expression

        sub = _subset(adata, train_idx)
        sparse = sp.issparse(expression(sub, layer))
        self.y, coords = validate_adata(sub, min_spots=max(self.k, 4), allow_empty=True, layer=layer, sparse=sparse)
        self.frame = CoordFrame.fit(coords)
        self.u = self.frame.transform(coords)
        self.var_names = [str(v) for v in sub.var_names]
        self.tree = cKDTree(self.u)
        self._tri = None
        if self.method == "gaussian":
            d, _ = self.tree.query(self.u, k=2)  # (n, 2): self at 0, nearest other spot
            self.spacing = float(np.median(d[:, 1]))
        return self

    def weights(self, q: np.ndarray):
        """Sparse interpolation weights ``W (len(q), n_train)`` (CSR, rows sum to 1) at normalised coordinates."""
        import scipy.sparse as sp

        n, m = len(q), len(self.u)
        if self.method in ("linear", "nearest"):
            rows, cols, vals = [], [], []
            todo = np.ones(n, dtype=bool)
            if self.method == "linear":
                from scipy.spatial import Delaunay

                if self._tri is None:
                    self._tri = Delaunay(self.u)  # as griddata / LinearNDInterpolator
                tri, d = self._tri, self.u.shape[1]
                simplex = tri.find_simplex(q)
                inside = np.flatnonzero(simplex >= 0)
                t = tri.transform[simplex[inside]]  # (m, d + 1, d)
                b = np.einsum("mij,mj->mi", t[:, :d], q[inside] - t[:, d])  # (m, d) barycentric coordinates
                bary = np.concatenate([b, 1.0 - b.sum(1, keepdims=True)], axis=1)  # (m, d + 1)
                rows.append(np.repeat(inside, d + 1))
                cols.append(tri.simplices[simplex[inside]].ravel())
                vals.append(bary.ravel())
                todo[inside] = False
            rest = np.flatnonzero(todo)  # outside the convex hull (or "nearest"): nearest training spot
            if rest.size:
                _, j = self.tree.query(q[rest], k=1)
                rows.append(rest)
                cols.append(np.asarray(j).reshape(-1))
                vals.append(np.ones(rest.size))
            return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, m))
        d, j = self.tree.query(q, k=min(self.k, m))  # (n, k)
        d, j = d.reshape(n, -1), j.reshape(n, -1)
        if self.method == "gaussian":
            h = self.bandwidth * self.spacing
            w = np.exp(-0.5 * (d / h) ** 2)
            w[w.sum(1) == 0, 0] = 1.0  # far from every spot: nearest neighbour instead of 0/0
        else:
            w = 1.0 / np.maximum(d, 1e-12) ** self.power
            exact = d[:, 0] < 1e-12
            w[exact] = 0.0
            w[exact, 0] = 1.0
        w /= w.sum(1, keepdims=True)
        return sp.csr_matrix((w.ravel(), (np.repeat(np.arange(n), w.shape[1]), j.ravel())), shape=(n, m))

    def predict(self, coords, *, allow_extrapolation: bool = False):
        if self.frame is None:
            raise SUICAInputError("Interpolator is not fitted")
        coords = check_coords(coords, name="query coords")
        q = self.frame.transform(coords, allow_extrapolation=allow_extrapolation)
        y = self.weights(q) @ self.y  # (n_query, G): CSR for sparse Y, ndarray for dense Y
        return _wrap(coords, y, self.var_names, self.frame)


class INRRaw:
    """INR fitted directly on the genes (``u (n, d) -> ŷ (n, G)``, final ReLU, MSE)."""

    def __init__(self, *, config: SUICAConfig | None = None, epochs: int | None = None, device: str = "cpu", **overrides):
        base = config.to_dict() if config is not None else {}
        base.update(overrides)
        self.config = SUICAConfig.from_dict(base)
        self.epochs = epochs if epochs is not None else self.config.inr_epochs + self.config.decoder_epochs
        self.device = device
        self.frame = None
        self.history: list[float] = []

    def _prepare(self, adata, train_idx) -> tuple:
        """Validate the training spots, remember the gene names and fit the coordinate frame: ``(y CSR, u)``.
        The expression is read as CSR whatever its storage (dense input is converted, sparse is never densified;
        batches are densified one at a time), so sparse and dense input give the same model."""
        sub = _subset(adata, train_idx)
        y_np, coords = validate_adata(sub, sparse=True)
        self.var_names = [str(v) for v in sub.var_names]
        self.frame = CoordFrame.fit(coords, keep_ratio=self.config.keep_ratio)
        return y_np, self.frame.transform(coords)

    def predict_scores(self, coords, *, allow_extrapolation: bool) -> np.ndarray:
        """The fitted INR's raw output at ``coords`` (expression for INR-raw, PCA scores for PCA+INR)."""
        import torch

        if self.frame is None:
            raise SUICAInputError(f"{type(self).__name__} is not fitted")
        u = self.frame.transform(coords, allow_extrapolation=allow_extrapolation)
        with torch.no_grad():
            return self.model(torch.as_tensor(u, dtype=torch.float32)).numpy()

    def _hooks(self, on_step) -> dict:
        """``fit_inr`` callbacks: the model is attached as soon as it is built, so ``on_step(phase, step, self)``
        (phase ``"inr"``) can predict mid-training (as :meth:`suica.SUICA.fit`'s hook)."""
        if on_step is None:
            return {}
        return {"on_built": lambda m: setattr(self, "model", m),
                "on_step": lambda phase, step: on_step(phase, step, self)}

    def fit(self, adata, *, train_idx=None, on_step=None) -> INRRaw:
        import torch

        from suica.estimator import fit_inr, spot_spacing

        c = self.config
        y_np, u_np = self._prepare(adata, train_idx)
        u = torch.as_tensor(u_np, dtype=torch.float32)
        self.model, self.sigma_, self.selection_ = fit_inr(
            u, y_np, c, spacing=spot_spacing(u_np), out_dim=y_np.shape[1], final="relu",
            loss_fn=torch.nn.functional.mse_loss, epochs=self.epochs, lr=c.inr_lr, history=self.history,
            **self._hooks(on_step))
        return self

    def predict(self, coords, *, allow_extrapolation: bool = False):
        coords = check_coords(coords, name="query coords")
        y = self.predict_scores(coords, allow_extrapolation=allow_extrapolation)
        return _wrap(coords, y, self.var_names, self.frame)


class PCAINR(INRRaw):
    """PCA + INR (official ``configs/others/pca/inr_pca.yaml``): PCA with ``latent_dim`` components of the
    normalised counts, fitted on the training spots; an INR ``u -> PCA scores`` (L1 + MSE, as SUICA's phase 1, same
    σ selection, width, depth, lr and total steps); prediction ``max(0, scores · Wᵀ + mean)``."""

    def fit(self, adata, *, train_idx=None, on_step=None) -> PCAINR:
        import torch
        from sklearn.decomposition import PCA

        from suica.estimator import fit_inr, spot_spacing
        from suica.losses import fit_loss

        c = self.config
        y_np, u_np = self._prepare(adata, train_idx)
        n_comp = min(c.latent_dim, min(y_np.shape) - 1)  # ARPACK: fewer components than min(n, G)
        # sparse-aware PCA (implicit centring, ARPACK); dense input is CSR here too, so both give the same scores
        self.pca = PCA(n_components=n_comp, svd_solver="arpack", random_state=c.seed).fit(y_np)
        scores = np.asarray(self.pca.transform(y_np), dtype=np.float32)  # (n, D)
        self.model, self.sigma_, self.selection_ = fit_inr(
            torch.as_tensor(u_np, dtype=torch.float32), torch.as_tensor(scores), c, spacing=spot_spacing(u_np),
            out_dim=scores.shape[1], final="identity", loss_fn=fit_loss, epochs=self.epochs, lr=c.inr_lr,
            history=self.history, **self._hooks(on_step))
        return self

    def predict(self, coords, *, allow_extrapolation: bool = False):
        coords = check_coords(coords, name="query coords")
        s = self.predict_scores(coords, allow_extrapolation=allow_extrapolation)
        return _wrap(coords, np.maximum(self.pca.inverse_transform(s), 0.0), self.var_names, self.frame)
