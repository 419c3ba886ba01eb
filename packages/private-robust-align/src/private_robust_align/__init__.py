"""private-robust-align: A Unified Theoretical Analysis of Private and Robust Offline Alignment: from RLHF to DPO (ICML 2025).

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "Config": "private_robust_align.config",
    "fit": "private_robust_align.method",
    "predict": "private_robust_align.method",
    "make_data": "private_robust_align.data",
    "PrivateRobustAlignError": "private_robust_align.errors",
})
