"""k2ie: K²IE: Kernel Method-based Kernel Intensity Estimators for Inhomogeneous Poisson Processes (ICML 2025).

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "Config": "k2ie.config",
    "fit": "k2ie.method",
    "predict": "k2ie.method",
    "make_data": "k2ie.data",
    "K2ieError": "k2ie.errors",
})
