"""sggm: A Non-Asymptotic Convergent Analysis for Scored-Based Graph Generative Model via a System of Stochastic Differential Equations (ICML 2025).

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "Config": "sggm.config",
    "fit": "sggm.method",
    "predict": "sggm.method",
    "make_data": "sggm.data",
    "SggmError": "sggm.errors",
})
