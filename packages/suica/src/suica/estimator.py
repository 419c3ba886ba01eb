"""The SUICA estimator: graph-augmented autoencoder + INR + regression-by-classification, on AnnData.

Training (paper §3; official ``train.py`` stages), with training spots ``i ∈ T`` (coordinates ``x_i``, normalised
counts ``y_i ∈ R^G``, normalised coordinates ``u_i``):

1. **GAE**: fit ``ŷ = dec(enc(y, Â_T))`` with ``MSE(ŷ, y)`` (full batch) on the k-NN graph of the training spots;
   targets ``z_i = enc(y, Â)_i ∈ R^D`` (train-only graph by default; ``targets_graph="full"`` = official, all spots).
2. **Phase 1**: fit the INR ``f(u_i) ≈ z_i`` with ``L1 + MSE`` (AdamW, one full-batch step per epoch).
3. **Phase 2**: freeze ``f`` (``requires_grad=False``; its parameters stay bit-identical) and fine-tune the decoder
   with the regression-by-classification loss ``masked MSE + L1 + λ_Dice·Dice`` on ``dec(f(u_i)) ≈ y_i``.

Prediction anywhere: ``ŷ(x) = dec(f(u(x)))`` (``(n, G)``, non-negative, exact zeros possible).

Held-out spots (``fit(adata, train_idx=...)``) never reach training in the default setting: only
``adata[train_idx]`` is read (validated, normalised, graphed).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from suica.config import SUICAConfig
from suica.coords import CoordFrame, check_coords
from suica.data import dense, validate_adata
from suica.errors import SUICAInputError


def _torch():
    import torch

    return torch


def _progress(total: int, desc: str, verbose: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=not verbose, leave=False)


def _train_idx(n: int, train_idx) -> np.ndarray:
    if train_idx is None:
        return np.arange(n)
    idx = np.asarray(train_idx)
    if idx.dtype == bool:
        if idx.shape != (n,):
            raise SUICAInputError(f"train_idx boolean mask must have shape ({n},), got {idx.shape}")
        idx = np.flatnonzero(idx)
    if idx.ndim != 1 or idx.size == 0 or not np.issubdtype(idx.dtype, np.integer):
        raise SUICAInputError("train_idx must be a non-empty 1-D integer index array or boolean mask")
    if idx.min() < 0 or idx.max() >= n or len(np.unique(idx)) != idx.size:
        raise SUICAInputError(f"train_idx must hold distinct indices in [0, {n})")
    return np.sort(idx)


def spot_spacing(u: np.ndarray) -> float:
    """Median nearest-neighbour distance of the spots ``u (n, d)`` (normalised coordinates)."""
    from scipy.spatial import cKDTree

    d, _ = cKDTree(u).query(u, k=2)  # (n, 2): self at 0, nearest other spot
    pos = d[:, 1][d[:, 1] > 0]
    return float(np.median(pos)) if pos.size else 1.0


def csr_to_torch(m, device=None, *, log1p: bool = False):
    """scipy CSR/COO ``(n, m)`` -> torch sparse COO float32 (``log1p`` applied to the stored values)."""
    torch = _torch()
    m = m.tocoo()
    data = np.log1p(m.data) if log1p else m.data
    idx = torch.as_tensor(np.vstack([m.row, m.col]), dtype=torch.long)
    t = torch.sparse_coo_tensor(idx, torch.as_tensor(data, dtype=torch.float32), m.shape, check_invariants=False)
    return t.coalesce().to(device) if device is not None else t.coalesce()


def batches(n: int, batch_size: int, *, rng: np.random.Generator | None = None) -> list[np.ndarray]:
    """Index batches covering ``range(n)`` (shuffled when ``rng`` is given; sorted inside each batch)."""
    order = rng.permutation(n) if rng is not None else np.arange(n)
    return [np.sort(order[s:s + batch_size]) for s in range(0, n, batch_size)]


def accumulate(loss_fn, n: int, parts: list[np.ndarray]) -> float:
    """``Σ_b (|b| / n) · ∇ loss_fn(b)`` into ``.grad`` (the full-batch gradient for per-spot mean losses); returns the
    weighted loss."""
    total = 0.0
    for idx in parts:
        loss = loss_fn(idx) * (len(idx) / n)
        loss.backward()
        total += float(loss.detach())
    return total


def train_accumulated(params, loss_fn, n: int, *, epochs: int, lr: float, batch_size: int, history: list,
                      on_step=None, phase: str = "", progress=None) -> None:
    """AdamW with gradients accumulated over the whole epoch (one optimiser step per epoch, official).

    ``loss_fn(idx)`` returns the mean loss over the spots ``idx``; each batch's loss is weighted by
    ``len(idx) / n``, so for losses that are means over spots the accumulated gradient equals the full-batch one.
    """
    torch = _torch()
    opt = torch.optim.AdamW(params, lr=lr)
    parts = batches(n, batch_size)
    for step in range(epochs):
        opt.zero_grad(set_to_none=True)
        total = accumulate(loss_fn, n, parts)
        opt.step()
        history.append(total)
        if progress is not None:
            progress.update()
        if on_step:
            on_step(phase, step)


def target_rows(targets, idx, device=None):
    """Rows ``idx`` of the INR targets: a torch tensor (embeddings) is indexed, a scipy-sparse matrix (expression,
    INR-raw) gives only these rows as a dense float32 tensor."""
    torch = _torch()
    if hasattr(targets, "tocsr"):
        return torch.as_tensor(np.asarray(targets[idx].toarray(), dtype=np.float32), device=device)
    return targets[idx]


def fit_inr(u, targets, c: SUICAConfig, *, spacing: float, out_dim: int, final: str, loss_fn, epochs: int,
            lr: float, history: list | None = None, on_step=None, progress=None, on_built=None):
    """Fit an INR ``u (n, d) -> targets (n, out_dim)`` with ``loss_fn(pred, target)`` (accumulated batches, one
    AdamW step per epoch); returns ``(inr, σ, {σ: validation loss})``.

    σ: ``c.ffn_scale`` when set; otherwise each candidate ``f / spacing`` (``f`` in ``c.ffn_scale_factors``) is fitted
    on ``1 - c.val_frac`` of the spots with the same budget and scored by ``loss_fn`` on the rest; the INR is then
    refitted on all spots with the best σ. Every INR-based method in this package chooses σ this way.
    ``targets``: a tensor, or a scipy-sparse matrix read batch by batch (:func:`target_rows`).
    """
    torch = _torch()
    from suica.networks import make_inr
    from suica.synthetic import holdout_spots

    dim = u.shape[1]

    def build(sigma):
        torch.manual_seed(c.seed)
        return make_inr(kind=c.inr, in_dim=dim, out_dim=out_dim, width=c.inr_width, n_layers=c.inr_layers,
                        mapping_size=c.ffn_mapping, scale=sigma, hidden_activation=c.ffn_hidden_activation,
                        w0=c.siren_w0, final=final, seed=c.seed).to(u.device)

    selection: dict[float, float] = {}
    if c.ffn_scale is None and c.inr == "ffn" and len(c.ffn_scale_factors) > 1:
        fit_i, val_i = holdout_spots(len(u), frac=c.val_frac, seed=c.seed + 7919)
        uf, dev = u[fit_i], u.device
        for f in c.ffn_scale_factors:
            sigma = float(f / spacing)
            cand = build(sigma)
            train_accumulated(list(cand.parameters()),
                              lambda b, m=cand: loss_fn(m(uf[b]), target_rows(targets, fit_i[b], dev)), len(fit_i),
                              epochs=epochs, lr=lr, batch_size=c.batch_size, history=[])
            cand.eval()
            with torch.no_grad():
                selection[sigma] = sum(float(loss_fn(cand(u[val_i[b]]), target_rows(targets, val_i[b], dev)))
                                       * len(b) / len(val_i) for b in batches(len(val_i), c.batch_size))
        sigma = min(selection, key=selection.get)
    elif c.ffn_scale is None:
        sigma = float(c.ffn_scale_factors[0] / spacing)  # from the spot spacing
    else:
        sigma = float(c.ffn_scale)
    inr = build(sigma)
    if on_built is not None:
        on_built(inr)  # e.g. put it into the model before training so that step hooks see it
    inr.train()
    train_accumulated(list(inr.parameters()), lambda b: loss_fn(inr(u[b]), target_rows(targets, b, u.device)),
                      len(u), epochs=epochs,
                      lr=lr, batch_size=c.batch_size, history=history if history is not None else [],
                      on_step=on_step, phase="inr", progress=progress)
    inr.eval()
    return inr, sigma, selection


class SUICA:
    """SUICA on AnnData: ``SUICA(**config).fit(adata).predict(coords) -> AnnData``.

    Keyword arguments are the fields of :class:`suica.config.SUICAConfig` (or pass ``config=``), plus
    ``device`` (``"cpu"``/``"cuda"``/``"auto"``) and ``verbose`` (progress bars).

    After ``fit``: ``sigma_`` (the Fourier scale used), ``spacing_`` (median nearest-neighbour spacing ``h`` of the
    training spots, normalised coordinates) and ``selection_`` (``{σ: validation loss}`` when σ was chosen inside
    ``fit``; see :attr:`SUICAConfig.ffn_scale`).
    """

    def __init__(self, *, config: SUICAConfig | None = None, device: str = "cpu", verbose: bool = False,
                 **overrides: Any):
        base = config.to_dict() if config is not None else {}
        base.update(overrides)
        self.config = SUICAConfig.from_dict(base)
        self.device = device
        self.verbose = verbose
        self.model = None  # torch ModuleDict {"gae", "inr"} after fit
        self.frame: CoordFrame | None = None
        self.var_names: list[str] = []
        self.history: dict[str, list[float]] = {"gae": [], "inr": [], "decoder": []}
        self.timings: dict[str, float] = {}
        self.sigma_: float | None = self.config.ffn_scale
        self.spacing_: float | None = None
        self.selection_: dict[float, float] = {}

    # ------------------------------------------------------------------ building
    def _make_inr(self, dim: int, sigma: float):
        from suica.networks import make_inr

        c = self.config
        return make_inr(kind=c.inr, in_dim=dim, out_dim=c.latent_dim, width=c.inr_width, n_layers=c.inr_layers,
                        mapping_size=c.ffn_mapping, scale=sigma, hidden_activation=c.ffn_hidden_activation,
                        w0=c.siren_w0, final="identity", seed=c.seed)

    def _build(self, n_genes: int, dim: int):
        torch = _torch()
        from suica.networks import GAE

        c = self.config
        torch.manual_seed(c.seed)
        if c.embedding == "pca":
            from suica.networks import LinearDecoder

            gae = LinearDecoder(n_genes=n_genes, latent_dim=c.latent_dim)
        else:
            gae = GAE(n_genes=n_genes, hidden=c.gae_hidden, latent_dim=c.latent_dim, use_graph=c.use_graph)
        inr = self._make_inr(dim, float(self.sigma_ if self.sigma_ is not None else 1.0))
        return torch.nn.ModuleDict({"gae": gae, "inr": inr})

    def _device(self):
        from icml25.device import resolve_device

        return resolve_device(self.device)

    def _adjacency(self, x_csr, u: np.ndarray):
        """Propagation matrix ``Â`` (scipy CSR) on spatial or expression neighbours; None without a graph."""
        from suica.graph import knn_adjacency, normalize_adjacency

        if not self.config.use_graph or self.config.embedding == "pca":
            return None
        if self.config.graph_space == "spatial":
            pts = u
        else:  # expression space (earlier release): neighbours on log1p expression, kept sparse
            pts = x_csr.log1p()
        return normalize_adjacency(knn_adjacency(pts, k=self.config.k), norm=self.config.graph_norm)

    def _gae_batch(self, gae, x_csr, adj, idx: np.ndarray, dev):
        """Forward the GAE on the neighbourhood subgraph of the spots ``idx``; returns ``(ŷ_idx, z_idx)``.

        Nodes = ``idx`` ∪ their k-NN lists (``graph.subgraph``); with the normalised ``Â`` restricted to the nodes,
        the rows of the batch spots equal the full-graph rows exactly (all their neighbours are present).
        """
        from suica.graph import subgraph

        if adj is None:
            nodes, local, a_t = idx, np.arange(len(idx)), None
        else:
            a_sub, nodes, local = subgraph(adj, idx)
            a_t = csr_to_torch(a_sub, dev)
        x_t = csr_to_torch(x_csr[nodes], dev, log1p=True)  # sparse log(1 + x) of the subgraph's spots
        z = gae.encode(x_t, a_t, logged=True)[_torch().as_tensor(local, device=dev)]
        return gae.decode(z), z

    def encode_spots(self, x_csr, adj, dev) -> Any:
        """Embeddings ``z (n, D)`` of every spot (eval mode, batch by batch over neighbourhood subgraphs)."""
        torch = _torch()
        gae = self.model["gae"]
        gae.eval()
        out = []
        with torch.no_grad():
            for idx in batches(x_csr.shape[0], self.config.batch_size):
                out.append(self._gae_batch(gae, x_csr, adj, idx, dev)[1])
        return torch.cat(out)

    # ------------------------------------------------------------------ fit
    def fit(self, adata, *, train_idx=None, layer: str | None = None,
            on_step: Callable[[str, int, SUICA], None] | None = None) -> SUICA:
        """Fit on ``adata`` (``X`` or ``layers[layer]`` normalised counts, dense or sparse; ``obsm["spatial"]``);
        only ``train_idx`` spots are used.

        ``on_step(phase, step, self)`` is called after every optimiser step (phase ``"gae"``, ``"inr"``,
        ``"decoder"``); useful for tests and logging.
        """
        torch = _torch()
        c = self.config
        if "spatial" not in getattr(adata, "obsm", {}):
            validate_adata(adata, layer=layer, sparse=True)  # raises the clear error
        n_all = adata.n_obs
        idx = _train_idx(n_all, train_idx)
        if len(idx) < c.k + 1:
            raise SUICAInputError(f"need at least k+1 = {c.k + 1} training spots for the {c.k}-NN graph, got {len(idx)}")
        sub = adata[idx]
        x_csr, coords = validate_adata(sub, min_spots=c.k + 1, layer=layer, sparse=True)
        n, g = x_csr.shape
        if c.latent_dim >= g:
            raise SUICAInputError(f"latent_dim={c.latent_dim} must be smaller than the number of genes ({g})")
        if c.embedding == "pca" and c.latent_dim >= n:
            raise SUICAInputError(f"embedding='pca': latent_dim={c.latent_dim} must be smaller than the number of "
                                  f"training spots ({n})")
        dev = self._device()
        self.frame = CoordFrame.fit(coords, keep_ratio=c.keep_ratio)
        self.var_names = [str(v) for v in sub.var_names]
        self.layer = layer
        u_np = self.frame.transform(coords)
        self.spacing_ = spot_spacing(u_np)
        self.history = {"gae": [], "inr": [], "decoder": []}
        step_cb = (lambda phase, step: on_step(phase, step, self)) if on_step else None
        self.sigma_ = c.ffn_scale
        model = self._build(g, coords.shape[1]).to(dev)
        self.model = model
        gae = model["gae"]
        u = torch.as_tensor(u_np, dtype=torch.float32, device=dev)
        adj = self._adjacency(x_csr, u_np)

        # ---- stage 1: graph-augmented autoencoder, mini-batches of spots with their neighbourhood subgraphs
        t0 = time.perf_counter()
        if c.embedding == "pca":  # the paper's PCA variant: scores of the training spots, sparse input stays sparse
            from sklearn.decomposition import PCA

            pca = PCA(n_components=c.latent_dim, svd_solver="arpack", random_state=c.seed).fit(x_csr)
            gae.init_pca(pca.components_, pca.mean_)
            z = torch.as_tensor(np.asarray(pca.transform(x_csr), dtype=np.float32), device=dev)  # (n, D)
        else:
            z = self._fit_gae(gae, x_csr, adj, adata, idx, n, layer, dev, on_step)
        self.timings["gae_s"] = time.perf_counter() - t0
        self._fit_inr_decoder(model, gae, u, z, x_csr, n, dev, step_cb)
        model.eval()
        return self

    def _fit_gae(self, gae, x_csr, adj, adata, idx, n, layer, dev, on_step):
        """Stage 1 (GAE / AE): train on mini-batches of spots with their neighbourhood subgraphs; returns the
        target embeddings ``z (n, D)`` of the training spots."""
        torch = _torch()
        c = self.config
        n_all = adata.n_obs
        opt = torch.optim.Adam(gae.parameters(), lr=c.gae_lr)
        rng = np.random.default_rng(c.seed)
        full = n <= c.batch_size
        with _progress(c.gae_epochs, "GAE", self.verbose) as bar:
            for step in range(c.gae_epochs):
                gae.train()
                total = 0.0
                for b in batches(n, c.batch_size, rng=None if full else rng):
                    opt.zero_grad(set_to_none=True)
                    y_hat, _ = self._gae_batch(gae, x_csr, adj, b, dev)
                    target = torch.as_tensor(x_csr[b].toarray(), device=dev)  # dense targets per batch only
                    loss = torch.nn.functional.mse_loss(y_hat, target)
                    loss.backward()
                    opt.step()
                    total += float(loss.detach()) * len(b) / n
                self.history["gae"].append(total)
                bar.update()
                if on_step:
                    on_step("gae", step, self)
        if c.targets_graph == "full" and len(idx) < n_all:
            x_all, coords_all = validate_adata(adata, min_spots=c.k + 1, layer=layer, sparse=True)
            adj_all = self._adjacency(x_all, self.frame.transform(coords_all))
            z = self.encode_spots(x_all, adj_all, dev)[torch.as_tensor(idx, device=dev)]
        else:
            z = self.encode_spots(x_csr, adj, dev)  # (n, D), train-only graph
        return z

    def _fit_inr_decoder(self, model, gae, u, z, x_csr, n, dev, step_cb):
        """Phase 1 (INR fits ``z``) and phase 2 (INR frozen, decoder fine-tuned with RbC)."""
        torch = _torch()
        c = self.config
        # ---- phase 1: the INR fits the embeddings (σ chosen on an internal validation split unless fixed)
        from suica.losses import decoder_loss, fit_loss

        t0 = time.perf_counter()
        with _progress(c.inr_epochs, "INR", self.verbose) as bar:
            inr, self.sigma_, self.selection_ = fit_inr(
                u, z, c, spacing=self.spacing_, out_dim=c.latent_dim, final="identity", loss_fn=fit_loss,
                epochs=c.inr_epochs, lr=c.inr_lr, history=self.history["inr"], on_step=step_cb, progress=bar,
                on_built=lambda m: model.__setitem__("inr", m))
        model["inr"] = inr
        self.timings["inr_s"] = time.perf_counter() - t0

        # ---- phase 2: freeze the INR, fine-tune the decoder with regression-by-classification
        t0 = time.perf_counter()
        inr.eval()
        for p in inr.parameters():
            p.requires_grad_(False)
        with torch.no_grad():
            e = torch.cat([inr(u[b]) for b in batches(n, c.batch_size)])  # (n, D); constant (INR frozen)

        def rec_loss(b):
            target = torch.as_tensor(x_csr[b].toarray(), device=dev)  # sparse rows densified per batch
            return decoder_loss(gae.decode(e[b]), target, kind=c.decoder_loss, dice_weight=c.dice_weight)

        with _progress(c.decoder_epochs, "decoder", self.verbose) as bar:
            train_accumulated(list(gae.decoder.parameters()), rec_loss, n, epochs=c.decoder_epochs,
                              lr=c.decoder_lr, batch_size=c.batch_size, history=self.history["decoder"],
                              on_step=step_cb, phase="decoder", progress=bar)
        self.timings["decoder_s"] = time.perf_counter() - t0

    # ------------------------------------------------------------------ predict
    def _check_fitted(self):
        if self.model is None or self.frame is None:
            raise SUICAInputError("this SUICA model is not fitted; call fit(adata) or SUICA.load(path) first")

    def predict_arrays(self, coords, *, allow_extrapolation: bool = False, batch_size: int = 16384):
        """``coords (n, d)`` raw -> ``(expression (n, G), embedding (n, D))`` as float32 numpy arrays."""
        torch = _torch()
        self._check_fitted()
        u_np = self.frame.transform(check_coords(coords), allow_extrapolation=allow_extrapolation)
        dev = next(self.model.parameters()).device
        ys, zs = [], []
        with torch.no_grad():
            for s in range(0, len(u_np), batch_size):
                u = torch.as_tensor(u_np[s:s + batch_size], dtype=torch.float32, device=dev)
                z = self.model["inr"](u)
                ys.append(self.model["gae"].decode(z).cpu().numpy())
                zs.append(z.cpu().numpy())
        d = self.config.latent_dim
        g = len(self.var_names)
        return (np.concatenate(ys) if ys else np.zeros((0, g), np.float32),
                np.concatenate(zs) if zs else np.zeros((0, d), np.float32))

    def predict(self, coords, *, allow_extrapolation: bool = False):
        """Predicted expression at raw coordinates ``(n, d)`` as an AnnData.

        ``X`` = predicted normalised expression ``(n, G)``; ``obsm["spatial"]`` = the query coordinates;
        ``obsm["embedding"]`` = INR output ``(n, D)``; ``obs["extrapolated"]`` marks queries outside the training frame.
        Raises :class:`suica.errors.ExtrapolationError` for such queries unless ``allow_extrapolation``.
        """
        coords = check_coords(coords, name="query coords")
        y, z = self.predict_arrays(coords, allow_extrapolation=allow_extrapolation)
        return self._wrap(coords, y, z)

    def _wrap(self, coords, y, z):
        import anndata as ad
        import pandas as pd

        obs = pd.DataFrame({"extrapolated": self.frame.outside(coords)}, index=[f"q{i}" for i in range(len(coords))])
        out = ad.AnnData(X=y.astype(np.float32), obs=obs, var=pd.DataFrame(index=self.var_names))
        out.obsm["spatial"] = np.asarray(coords, dtype=np.float64)
        out.obsm["embedding"] = z.astype(np.float32)
        out.uns["suica"] = {"config": self.config.to_dict(), "frame": self.frame.to_dict()}
        return out

    def iter_predict(self, coords, *, allow_extrapolation: bool = False, chunk: int = 4096):
        """Yield ``(start, expression (m, G), embedding (m, D))`` for consecutive chunks of ``chunk`` query points
        (float32 numpy): memory O(chunk · G), whatever the number of queries."""
        coords = check_coords(coords, name="query coords")
        if int(chunk) < 1:
            raise SUICAInputError(f"chunk must be >= 1, got {chunk}")
        for s in range(0, len(coords), int(chunk)):
            y, z = self.predict_arrays(coords[s:s + int(chunk)], allow_extrapolation=allow_extrapolation)
            yield s, y, z

    def predict_to_h5ad(self, coords, path: str | Path, *, allow_extrapolation: bool = False, chunk: int = 4096,
                        obs=None, uns: dict | None = None) -> Path:
        """Predict at ``coords (n, d)`` straight into an ``.h5ad`` file, chunk by chunk (never the whole ``(n, G)``
        matrix in memory): ``X`` (dense float32, written ``chunk`` rows at a time), ``obsm["spatial"]``,
        ``obsm["embedding"]`` ``(n, D)``, ``obs`` (``extrapolated`` plus the columns of ``obs`` when given, whose
        index become the obs names) and ``uns["suica"]`` (``uns`` when given). The file is written atomically and
        reads back with ``anndata.read_h5ad`` like :meth:`predict`'s AnnData (tested equal)."""
        import os

        import anndata as ad
        import h5py
        import pandas as pd

        from suica.data import write_h5ad

        self._check_fitted()
        coords = check_coords(coords, name="query coords")
        n, g = len(coords), len(self.var_names)
        u = self.frame.transform(coords, allow_extrapolation=allow_extrapolation)  # raises before any write
        del u
        z = np.concatenate([zc for _, _, zc in self.iter_predict(coords, allow_extrapolation=True, chunk=chunk)]) \
            if n else np.zeros((0, self.config.latent_dim), np.float32)
        frame = pd.DataFrame({"extrapolated": self.frame.outside(coords)},
                             index=[f"q{i}" for i in range(n)] if obs is None else obs.index.astype(str))
        if obs is not None:
            for col in obs.columns:
                frame[col] = np.asarray(obs[col])
        shell = ad.AnnData(obs=frame, var=pd.DataFrame(index=self.var_names))
        shell.obsm["spatial"] = np.asarray(coords, dtype=np.float64)
        shell.obsm["embedding"] = z.astype(np.float32)
        shell.uns["suica"] = uns if uns is not None else {"config": self.config.to_dict(),
                                                          "frame": self.frame.to_dict()}
        path = Path(path)
        tmp = path.with_name(f".{path.name}.chunks{os.getpid()}.h5ad")
        write_h5ad(shell, tmp)
        with h5py.File(tmp, "a") as f:
            if "X" in f:
                del f["X"]
            ds = f.create_dataset("X", shape=(n, g), dtype="float32", chunks=(max(1, min(n, 256)), g) if n else None)
            ds.attrs["encoding-type"] = "array"
            ds.attrs["encoding-version"] = "0.2.0"
            for s, y, _ in self.iter_predict(coords, allow_extrapolation=True, chunk=chunk):
                ds[s:s + len(y)] = y
        os.replace(tmp, path)
        return path

    def predict_grid(self, resolution: int | tuple[int, ...] = 200, *, full_square: bool = False):
        """Super-resolution: predict on a dense regular grid over the training frame (``[-1, 1]^d`` if
        ``full_square``, as the official ``Full2D``, which extrapolates along the short axis)."""
        self._check_fitted()
        grid = self.frame.grid(resolution, full_square=full_square)
        return self.predict(grid, allow_extrapolation=full_square)

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | Path) -> Path:
        """Write ``model.safetensors`` + ``model_config.json`` into the folder ``path``."""
        from icml25.checkpoint import save_model

        self._check_fitted()
        cfg = {"suica": self.config.to_dict(), "frame": self.frame.to_dict(), "var_names": self.var_names,
               "dim": self.frame.dim, "sigma": self.sigma_, "spacing": self.spacing_}
        return save_model(path, self.model, cfg)

    @classmethod
    def load(cls, path: str | Path, *, device: str = "cpu") -> SUICA:
        from icml25.checkpoint import load_config, load_model

        cfg = load_config(path, required=("suica", "frame", "var_names", "dim"))
        obj = cls(config=SUICAConfig.from_dict(cfg["suica"]), device=device)
        obj.sigma_ = cfg.get("sigma", obj.config.ffn_scale)
        obj.spacing_ = cfg.get("spacing")
        obj.model = load_model(path, lambda c: obj._build(len(c["var_names"]), int(c["dim"])))
        obj.model.to(obj._device()).eval()
        obj.frame = CoordFrame.from_dict(cfg["frame"])
        obj.var_names = list(cfg["var_names"])
        return obj


def spots_expression(adata) -> np.ndarray:
    return dense(adata.X)
