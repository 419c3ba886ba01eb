"""relgnn: RelGNN — Composite Message Passing for Relational Deep Learning (Chen, Kanatsoulis, Leskovec; ICML 2025).

Public API: :func:`atomic_routes`, :class:`RelGNN` (message passing over a RelBench ``HeteroData``),
:class:`RelationalModel` (encoders + temporal encoding + GNN + head), :func:`build_graph`, :func:`snapshot`,
:func:`fit`, and :mod:`relgnn.synthetic` (``make_database``). Heavy modules are imported lazily.
"""

from __future__ import annotations

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "atomic_routes": "relgnn.routes",
    "Route": "relgnn.routes",
    "RelGNN": "relgnn.conv",
    "RelGNNConv": "relgnn.conv",
    "HeteroGraphSAGE": "relgnn.conv",
    "RelationalModel": "relgnn.model",
    "build_graph": "relgnn.graph",
    "snapshot": "relgnn.graph",
    "RelGraph": "relgnn.graph",
    "TemporalSampler": "relgnn.sampler",
    "fit": "relgnn.train",
    "FitConfig": "relgnn.config",
    "prepare_task": "relgnn.train",
}, submodules=("synthetic",))
