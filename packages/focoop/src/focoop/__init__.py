"""focoop: FOCoOp — Enhancing OOD Robustness in Federated Prompt Learning for Vision-Language Models (ICML 2025).

Submodules (imported lazily, so ``import focoop`` stays light): :mod:`focoop.metrics` (``auroc``,
``fpr_at_95_tpr``), :mod:`focoop.ot` (``calibrate``), :mod:`focoop.dro`, :mod:`focoop.partition`,
:mod:`focoop.text`, :mod:`focoop.prompts`, :mod:`focoop.client`, :mod:`focoop.server`, :mod:`focoop.engine`,
:mod:`focoop.flower`, :mod:`focoop.client_app` / :mod:`focoop.server_app` (Flower apps), :mod:`focoop.data`.
"""

from __future__ import annotations

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "auroc": "focoop.metrics", "fpr_at_95_tpr": "focoop.metrics", "calibrate": "focoop.ot",
    "FedConfig": "focoop.config", "run_inprocess": "focoop.engine", "FOCoOpConfigError": "focoop.errors",
}, submodules=("metrics", "scores", "ot", "dro", "baselines", "partition", "text", "prompts", "neglabel", "setup",
               "client", "server", "engine", "flower", "client_app", "server_app", "data", "realdata", "synthetic",
               "config", "errors", "reproduce"))
