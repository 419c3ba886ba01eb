"""richardson-tc: Fast Tensor Completion via Approximate Richardson Iteration (ICML 2025).

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "Config": "richardson_tc.config",
    "fit": "richardson_tc.method",
    "predict": "richardson_tc.method",
    "make_data": "richardson_tc.data",
    "RichardsonTcError": "richardson_tc.errors",
})
