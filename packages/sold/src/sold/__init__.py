"""sold: SOLD: Slot Object-Centric Latent Dynamics Models for Relational Manipulation Learning from Pixels (ICML 2025).

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "Config": "sold.config",
    "fit": "sold.method",
    "predict": "sold.method",
    "make_data": "sold.data",
    "SoldError": "sold.errors",
})
