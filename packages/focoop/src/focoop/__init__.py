"""focoop: FOCoOp — Enhancing OOD Robustness in Federated Prompt Learning for Vision-Language Models (ICML 2025).

Submodules (imported lazily, so ``import focoop`` stays light): :mod:`focoop.metrics` (``auroc``,
``fpr_at_95_tpr``), :mod:`focoop.ot` (``calibrate``), :mod:`focoop.dro`, :mod:`focoop.partition`,
:mod:`focoop.text`, :mod:`focoop.prompts`, :mod:`focoop.client`, :mod:`focoop.server`, :mod:`focoop.engine`,
:mod:`focoop.flower`, :mod:`focoop.client_app` / :mod:`focoop.server_app` (Flower apps), :mod:`focoop.data`.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_SUBMODULES = ("metrics", "scores", "ot", "dro", "baselines", "partition", "text", "prompts", "neglabel", "setup",
               "client", "server", "engine", "flower", "client_app", "server_app", "data", "realdata", "synthetic",
               "config", "errors", "reproduce")
_NAMES = {"auroc": "metrics", "fpr_at_95_tpr": "metrics", "calibrate": "ot", "FedConfig": "config",
          "run_inprocess": "engine", "FOCoOpConfigError": "errors"}
__all__ = [*_SUBMODULES, *_NAMES]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"focoop.{name}")
    if name in _NAMES:
        return getattr(importlib.import_module(f"focoop.{_NAMES[name]}"), name)
    raise AttributeError(f"module 'focoop' has no attribute {name!r}")
