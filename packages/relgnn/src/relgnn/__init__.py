"""relgnn: RelGNN — Composite Message Passing for Relational Deep Learning (Chen, Kanatsoulis, Leskovec; ICML 2025).

Public API: :func:`atomic_routes`, :class:`RelGNN` (message passing over a RelBench ``HeteroData``),
:class:`RelationalModel` (encoders + temporal encoding + GNN + head), :func:`build_graph`, :func:`snapshot`,
:func:`fit`, and :mod:`relgnn.synthetic` (``make_database``). Heavy modules are imported lazily.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "atomic_routes": "relgnn.routes", "Route": "relgnn.routes",
    "RelGNN": "relgnn.conv", "RelGNNConv": "relgnn.conv", "HeteroGraphSAGE": "relgnn.conv",
    "RelationalModel": "relgnn.model",
    "build_graph": "relgnn.graph", "snapshot": "relgnn.graph", "RelGraph": "relgnn.graph",
    "TemporalSampler": "relgnn.sampler",
    "fit": "relgnn.train", "FitConfig": "relgnn.train", "prepare_task": "relgnn.train",
    "synthetic": "relgnn.synthetic",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        mod = importlib.import_module(_LAZY[name])
        return mod if name == "synthetic" else getattr(mod, name)
    raise AttributeError(f"module 'relgnn' has no attribute {name!r}")
