"""earl-bo: EARL-BO: Reinforcement Learning for Multi-Step Lookahead, High-Dimensional Bayesian Optimization (ICML 2025).

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "Config": "earl_bo.config",
    "fit": "earl_bo.method",
    "predict": "earl_bo.method",
    "make_data": "earl_bo.data",
    "EarlBoError": "earl_bo.errors",
})
