"""scanpy-style entry point: ``suica.tl.fit(adata, ...)`` fits SUICA on an AnnData and stores the results in it.

Writes (like ``scanpy.tl.*``, into ``adata`` unless ``copy=True``):

* ``adata.layers[key_added]`` — SUICA's prediction ``dec(f(u(x_i)))`` at every spot ``(n_spots, n_genes)``
  (denoised / imputed expression; held-out spots are predicted from the training spots);
* ``adata.obsm[f"{key_added}_embedding"]`` — the INR's embedding ``f(u(x_i))`` ``(n_spots, latent_dim)``;
* ``adata.uns[key_added]`` — provenance: package version, config, chosen σ, spot spacing, timings, layer, split.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def provenance(model, **extra: Any) -> dict:
    """``uns["suica"]`` provenance of a fitted :class:`suica.SUICA` (JSON/HDF5-friendly values only)."""
    import suica

    cfg = {k: (list(v) if isinstance(v, tuple) else ("None" if v is None else v))
           for k, v in model.config.to_dict().items()}
    out = {"version": suica.__version__, "config": cfg, "sigma": float(model.sigma_),
           "spacing": float(model.spacing_) if model.spacing_ is not None else float("nan"),
           "timings_s": {k: float(v) for k, v in model.timings.items()}}
    out.update({k: ("None" if v is None else v) for k, v in extra.items()})
    return out


def fit(adata, *, layer: str | None = None, train_key: str | None = None, test_value: str = "test",
        key_added: str = "suica", copy: bool = False, device: str = "cpu", predict: bool = True, **config: Any):
    """Fit SUICA on ``adata`` (``X`` or ``layers[layer]``: normalised counts, dense or sparse; ``obsm["spatial"]``).

    ``train_key``: an ``obs`` column; spots whose value equals ``test_value`` are held out of training. Other keyword
    arguments are :class:`suica.SUICAConfig` fields. ``predict=False`` skips ``layers[key_added]`` (a dense
    ``(n_spots, n_genes)`` matrix: 8 GB at 10⁵ x 2·10⁴) and writes only the embedding and ``uns``; predict later
    with :func:`predict` (to a file, chunk by chunk, when ``path`` is given). Returns ``(adata, model)``: ``adata`` is the input (or a copy
    when ``copy=True``) with the results written into it, ``model`` the fitted :class:`suica.SUICA`.
    """
    from suica.estimator import SUICA

    ad = adata.copy() if copy else adata
    train_idx = None
    if train_key is not None:
        if train_key not in ad.obs:
            raise KeyError(f"train_key {train_key!r} is not an obs column (have {list(ad.obs.columns)})")
        train_idx = np.flatnonzero(np.asarray(ad.obs[train_key].astype(str)) != test_value)
    model = SUICA(device=device, **config).fit(ad, train_idx=train_idx, layer=layer)
    ys, zs = [], []
    for _, y, z in model.iter_predict(ad.obsm["spatial"], allow_extrapolation=True):
        zs.append(z)
        if predict:
            ys.append(y)
    if predict:
        ad.layers[key_added] = np.concatenate(ys)
    ad.obsm[f"{key_added}_embedding"] = np.concatenate(zs)
    ad.uns[key_added] = provenance(model, layer=layer, train_key=train_key,
                                   n_train=int(ad.n_obs if train_idx is None else len(train_idx)))
    return ad, model


def predict(model, coords, *, path=None, allow_extrapolation: bool = False, chunk: int = 4096):
    """Predict a fitted :class:`suica.SUICA` at ``coords (n, d)`` (an array, or an AnnData whose ``obsm["spatial"]``
    is used and whose ``obs`` is carried over).

    Without ``path``: an AnnData (``X`` = prediction ``(n, G)``, ``obsm["embedding"]``, ``obsm["spatial"]``). With
    ``path`` (``.h5ad``): the prediction is written chunk by chunk (``chunk`` rows, memory O(chunk x genes)) by
    :meth:`suica.SUICA.predict_to_h5ad` and the path is returned; read it back with ``anndata.read_h5ad(path,
    backed="r")`` to keep it on disk.
    """
    obs = None
    if hasattr(coords, "obsm"):
        if "spatial" not in coords.obsm:
            from suica.errors import SUICAInputError

            raise SUICAInputError('coords: the AnnData has no obsm["spatial"]')
        obs, coords = coords.obs[[]].copy(), np.asarray(coords.obsm["spatial"])
    if path is not None:
        return model.predict_to_h5ad(coords, path, allow_extrapolation=allow_extrapolation, chunk=chunk, obs=obs)
    out = model.predict(coords, allow_extrapolation=allow_extrapolation)
    if obs is not None:
        out.obs_names = obs.index.astype(str)
    return out
