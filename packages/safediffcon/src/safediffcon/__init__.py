"""safediffcon: From Uncertain to Safe: Conformal Adaptation of Diffusion Models for Safe PDE Control (ICML 2025).

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "Config": "safediffcon.config",
    "fit": "safediffcon.method",
    "predict": "safediffcon.method",
    "make_data": "safediffcon.data",
    "SafediffconError": "safediffcon.errors",
})
