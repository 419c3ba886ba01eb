"""suica: SUICA — super-high dimensional sparse implicit neural representations for spatial transcriptomics
(Zhu et al., ICML 2025), on AnnData.

Public API (heavy modules are imported lazily, so ``import suica`` does not import torch)::

    suica.SUICA(**config).fit(adata, train_idx=...).predict(coords) -> AnnData
    suica.SUICAConfig, suica.synthetic.make_tissue(...) -> AnnData (true rate in layers["rate"])
    suica.preprocess, suica.evaluate, suica.INRRaw, suica.PCAINR, suica.Interpolator
    suica.tl.fit(adata, layer=..., train_key=...) -> (adata with layers["suica"], model)   # scanpy style
"""

from __future__ import annotations

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
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
}, submodules=("baselines", "cli", "config", "coords", "data", "errors", "estimator", "graph", "losses", "metrics",
               "networks", "registry", "reproduce", "synthetic", "tl"))
