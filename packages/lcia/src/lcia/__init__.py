"""lcia: Large Continual Instruction Assistant (ICML 2025).

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "Config": "lcia.config",
    "fit": "lcia.method",
    "predict": "lcia.method",
    "make_data": "lcia.data",
    "LciaError": "lcia.errors",
})
