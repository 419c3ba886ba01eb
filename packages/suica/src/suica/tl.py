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
        key_added: str = "suica", copy: bool = False, device: str = "cpu", **config: Any):
    """Fit SUICA on ``adata`` (``X`` or ``layers[layer]``: normalised counts, dense or sparse; ``obsm["spatial"]``).

    ``train_key``: an ``obs`` column; spots whose value equals ``test_value`` are held out of training. Other keyword
    arguments are :class:`suica.SUICAConfig` fields. Returns ``(adata, model)``: ``adata`` is the input (or a copy
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
    y, z = model.predict_arrays(ad.obsm["spatial"], allow_extrapolation=True)
    ad.layers[key_added] = y
    ad.obsm[f"{key_added}_embedding"] = z
    ad.uns[key_added] = provenance(model, layer=layer, train_key=train_key,
                                   n_train=int(ad.n_obs if train_idx is None else len(train_idx)))
    return ad, model
