"""pes: Convergence Analysis of Policy Gradient Methods with Dynamic Stochasticity (ICML 2025).

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "Config": "pes.config",
    "fit": "pes.method",
    "predict": "pes.method",
    "make_data": "pes.data",
    "PesError": "pes.errors",
})
