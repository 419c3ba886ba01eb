"""kea: Keeping Exploration Alive by proactively coordinating exploration strategies (Yang et al., ICML 2025).

Public API: :class:`kea.KEA` (the agent; ``learn`` / ``predict`` in the SB3 style), ``kea.envs.DeepSea`` and
``kea.envs.GridNav`` (gymnasium envs, also ``gymnasium.make("kea.envs:kea/DeepSea-v0")``), :func:`kea.make_agent`
(the five named variants of ``reproduce``). Heavy modules are imported lazily.
"""

from __future__ import annotations

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "KEA": "kea.agent",
    "Trace": "kea.agent",
    "KEAConfigError": "kea.errors",
    "DiscreteSAC": "kea.sac",
    "ContinuousSAC": "kea.sac",
    "RND": "kea.intrinsic",
    "EMARunningMeanStd": "kea.intrinsic",
    "noveld_reward": "kea.intrinsic",
    "make_agent": "kea.variants",
    "VARIANTS": "kea.variants",
    "DeepSea": "kea.envs",
    "GridNav": "kea.envs",
}, submodules=("envs",))
