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


class SUICA:
    """SUICA on AnnData: ``SUICA(**config).fit(adata).predict(coords) -> AnnData``.

    Keyword arguments are the fields of :class:`suica.config.SUICAConfig` (or pass ``config=``), plus
    ``device`` (``"cpu"``/``"cuda"``/``"auto"``) and ``verbose`` (progress bars).
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

    # ------------------------------------------------------------------ building
    def _build(self, n_genes: int, dim: int):
        torch = _torch()
        from suica.networks import GAE, make_inr

        c = self.config
        torch.manual_seed(c.seed)
        gae = GAE(n_genes=n_genes, hidden=c.gae_hidden, latent_dim=c.latent_dim, use_graph=c.use_graph)
        inr = make_inr(kind=c.inr, in_dim=dim, out_dim=c.latent_dim, width=c.inr_width, n_layers=c.inr_layers,
                       mapping_size=c.ffn_mapping, scale=c.ffn_scale, hidden_activation=c.ffn_hidden_activation,
                       w0=c.siren_w0, final="identity", seed=c.seed)
        return torch.nn.ModuleDict({"gae": gae, "inr": inr})

    def _device(self):
        from icml25.device import resolve_device

        return resolve_device(self.device)

    def _graph(self, x_log: np.ndarray, u: np.ndarray):
        from suica.graph import build_graph

        if not self.config.use_graph:
            return None
        pts = u if self.config.graph_space == "spatial" else x_log
        return build_graph(pts, k=self.config.k, norm=self.config.graph_norm)

    # ------------------------------------------------------------------ fit
    def fit(self, adata, *, train_idx=None, on_step: Callable[[str, int, SUICA], None] | None = None) -> SUICA:
        """Fit on ``adata`` (``X`` normalised counts, ``obsm["spatial"]``); only ``train_idx`` spots are used.

        ``on_step(phase, step, self)`` is called after every optimiser step (phase ``"gae"``, ``"inr"``,
        ``"decoder"``); useful for tests and logging.
        """
        torch = _torch()
        c = self.config
        if "spatial" not in getattr(adata, "obsm", {}):
            validate_adata(adata)  # raises the clear error
        n_all = adata.n_obs
        idx = _train_idx(n_all, train_idx)
        if len(idx) < c.k + 1:
            raise SUICAInputError(f"need at least k+1 = {c.k + 1} training spots for the {c.k}-NN graph, got {len(idx)}")
        sub = adata[idx]
        x_np, coords = validate_adata(sub, min_spots=c.k + 1)
        n, g = x_np.shape
        if c.latent_dim >= g:
            raise SUICAInputError(f"latent_dim={c.latent_dim} must be smaller than the number of genes ({g})")
        if c.use_graph and n < c.k + 1:
            raise SUICAInputError(f"need at least k+1 = {c.k + 1} training spots, got {n}")
        dev = self._device()
        self.frame = CoordFrame.fit(coords, keep_ratio=c.keep_ratio)
        self.var_names = [str(v) for v in sub.var_names]
        u_np = self.frame.transform(coords)
        model = self._build(g, coords.shape[1]).to(dev)
        self.model = model
        gae, inr = model["gae"], model["inr"]
        x = torch.as_tensor(x_np, device=dev)
        u = torch.as_tensor(u_np, dtype=torch.float32, device=dev)
        adj = self._graph(np.log1p(x_np), u_np)
        adj = adj.to(dev) if adj is not None else None

        # ---- stage 1: graph-augmented autoencoder
        t0 = time.perf_counter()
        opt = torch.optim.Adam(gae.parameters(), lr=c.gae_lr)
        gae.train()
        with _progress(c.gae_epochs, "GAE", self.verbose) as bar:
            for step in range(c.gae_epochs):
                opt.zero_grad(set_to_none=True)
                y_hat, _ = gae(x, adj)
                loss = torch.nn.functional.mse_loss(y_hat, x)
                loss.backward()
                opt.step()
                self.history["gae"].append(float(loss.detach()))
                bar.update()
                if on_step:
                    on_step("gae", step, self)
        gae.eval()
        with torch.no_grad():
            if c.targets_graph == "full" and len(idx) < n_all:
                x_all, coords_all = validate_adata(adata, min_spots=c.k + 1)
                u_all = self.frame.transform(coords_all)
                adj_all = self._graph(np.log1p(x_all), u_all)
                z_all = gae.encode(torch.as_tensor(x_all, device=dev), adj_all.to(dev) if adj_all is not None else None)
                z = z_all[torch.as_tensor(idx, device=dev)]
            else:
                z = gae.encode(x, adj)  # (n, D)
        self.timings["gae_s"] = time.perf_counter() - t0

        # ---- phase 1: INR fits the embeddings
        t0 = time.perf_counter()
        from suica.losses import decoder_loss, fit_loss

        opt = torch.optim.AdamW(inr.parameters(), lr=c.inr_lr)
        inr.train()
        with _progress(c.inr_epochs, "INR", self.verbose) as bar:
            for step in range(c.inr_epochs):
                opt.zero_grad(set_to_none=True)
                loss = fit_loss(inr(u), z)
                loss.backward()
                opt.step()
                self.history["inr"].append(float(loss.detach()))
                bar.update()
                if on_step:
                    on_step("inr", step, self)
        self.timings["inr_s"] = time.perf_counter() - t0

        # ---- phase 2: freeze the INR, fine-tune the decoder with regression-by-classification
        t0 = time.perf_counter()
        inr.eval()
        for p in inr.parameters():
            p.requires_grad_(False)
        with torch.no_grad():
            e = inr(u)  # (n, D); constant because the INR is frozen
        dec_params = list(gae.decoder.parameters())
        opt = torch.optim.AdamW(dec_params, lr=c.decoder_lr)
        with _progress(c.decoder_epochs, "decoder", self.verbose) as bar:
            for step in range(c.decoder_epochs):
                opt.zero_grad(set_to_none=True)
                loss = decoder_loss(gae.decode(e), x, kind=c.decoder_loss, dice_weight=c.dice_weight)
                loss.backward()
                opt.step()
                self.history["decoder"].append(float(loss.detach()))
                bar.update()
                if on_step:
                    on_step("decoder", step, self)
        self.timings["decoder_s"] = time.perf_counter() - t0
        model.eval()
        return self

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
               "dim": self.frame.dim}
        return save_model(path, self.model, cfg)

    @classmethod
    def load(cls, path: str | Path, *, device: str = "cpu") -> SUICA:
        from icml25.checkpoint import load_config, load_model

        cfg = load_config(path, required=("suica", "frame", "var_names", "dim"))
        obj = cls(config=SUICAConfig.from_dict(cfg["suica"]), device=device)
        obj.model = load_model(path, lambda c: obj._build(len(c["var_names"]), int(c["dim"])))
        obj.model.to(obj._device()).eval()
        obj.frame = CoordFrame.from_dict(cfg["frame"])
        obj.var_names = list(cfg["var_names"])
        return obj


def spots_expression(adata) -> np.ndarray:
    return dense(adata.X)
