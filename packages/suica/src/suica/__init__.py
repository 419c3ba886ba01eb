"""suica: SUICA — super-high dimensional sparse implicit neural representations for spatial transcriptomics
(Zhu et al., ICML 2025), on AnnData.

Public API (heavy modules are imported lazily, so ``import suica`` does not import torch)::

    suica.SUICA(**config).fit(adata, train_idx=...).predict(coords) -> AnnData
    suica.SUICAConfig, suica.synthetic.make_tissue(...) -> AnnData (true rate in layers["rate"])
    suica.preprocess, suica.evaluate, suica.INRRaw, suica.PCAINR, suica.Interpolator
    suica.tl.fit(adata, layer=..., train_key=...) -> (adata with layers["suica"], model)   # scanpy style
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "SUICA": "suica.estimator",
    "SUICAConfig": "suica.config",
    "INRRaw": "suica.baselines",
    "PCAINR": "suica.baselines",
    "Interpolator": "suica.baselines",
    "CoordFrame": "suica.coords",
    "normalize_coords": "suica.coords",
    "preprocess": "suica.data",
    "read_h5ad": "suica.data",
    "write_h5ad": "suica.data",
    "validate_adata": "suica.data",
    "evaluate": "suica.metrics",
    "SUICAInputError": "suica.errors",
    "ExtrapolationError": "suica.errors",
}
_SUBMODULES = {"synthetic", "metrics", "losses", "networks", "graph", "coords", "data", "baselines", "config",
               "estimator", "errors", "reproduce", "cli", "registry", "tl"}

__all__ = sorted(_LAZY) + sorted(_SUBMODULES)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _SUBMODULES:
        return importlib.import_module(f"suica.{name}")
    raise AttributeError(f"module 'suica' has no attribute {name!r}")
