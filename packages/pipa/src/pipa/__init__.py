"""pipa: PIPA — Preference Alignment as Prior-Informed Statistical Estimation (Li, Wang & Liu, ICML 2025).

Public API: ``pipa.losses`` (``pipa_m_loss``, ``pipa_n_loss`` and their paired and step-level forms),
``pipa.PIPAConfig``, ``pipa.PIPATrainer`` (imported lazily: ``import pipa`` does not import transformers).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"
__all__ = ["PIPAConfig", "PIPATrainer", "ValueHeadModel", "losses"]

_LAZY = {"PIPAConfig": "pipa.trainer", "PIPATrainer": "pipa.trainer", "ValueHeadModel": "pipa.model"}


def __getattr__(name: str) -> Any:
    if name == "losses":
        return importlib.import_module("pipa.losses")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'pipa' has no attribute {name!r}")
