"""pipa: PIPA — Preference Alignment as Prior-Informed Statistical Estimation (Li, Wang & Liu, ICML 2025).

Public API: ``pipa.losses`` (``pipa_m_loss``, ``pipa_n_loss`` and their paired and step-level forms),
``pipa.PIPAConfig``, ``pipa.PIPATrainer`` (imported lazily: ``import pipa`` does not import transformers).
"""

from __future__ import annotations

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "PIPAConfig": "pipa.trainer", "PIPATrainer": "pipa.trainer", "ValueHeadModel": "pipa.model",
}, submodules=("losses",))
