"""kea: Keeping Exploration Alive by proactively coordinating exploration strategies (Yang et al., ICML 2025).

Public API: :class:`kea.KEA` (the agent; ``learn`` / ``predict`` in the SB3 style), ``kea.envs.DeepSea`` and
``kea.envs.GridNav`` (gymnasium envs, also ``gymnasium.make("kea.envs:kea/DeepSea-v0")``), :func:`kea.make_agent`
(the five named variants of ``reproduce``). Heavy modules are imported lazily.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "KEA": ("kea.agent", "KEA"),
    "Trace": ("kea.agent", "Trace"),
    "KEAConfigError": ("kea.sac", "KEAConfigError"),
    "DiscreteSAC": ("kea.sac", "DiscreteSAC"),
    "ContinuousSAC": ("kea.sac", "ContinuousSAC"),
    "RND": ("kea.intrinsic", "RND"),
    "EMARunningMeanStd": ("kea.intrinsic", "EMARunningMeanStd"),
    "noveld_reward": ("kea.intrinsic", "noveld_reward"),
    "make_agent": ("kea.variants", "make_agent"),
    "VARIANTS": ("kea.variants", "VARIANTS"),
    "DeepSea": ("kea.envs", "DeepSea"),
    "GridNav": ("kea.envs", "GridNav"),
}

__all__ = ["__version__", "envs", *_LAZY]


def __getattr__(name: str) -> Any:
    import importlib

    if name == "envs":
        return importlib.import_module("kea.envs")
    if name in _LAZY:
        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(mod), attr)
    raise AttributeError(f"module 'kea' has no attribute {name!r}")
