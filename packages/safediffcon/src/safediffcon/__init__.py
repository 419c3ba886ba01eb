"""safediffcon: From Uncertain to Safe: Conformal Adaptation of Diffusion Models for Safe PDE Control (ICML 2025).

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "Config": "safediffcon.config",
    "SafeDiffCon": "safediffcon.method",
    "BurgersData": "safediffcon.data",
    "make_split": "safediffcon.data",
    "load_h5": "safediffcon.data",
    "simulate": "safediffcon.burgers",
    "quantile": "safediffcon.conformal",
    "adjoint_control": "safediffcon.adjoint",
    "evaluate_control": "safediffcon.metrics",
    "SafediffconError": "safediffcon.errors",
})
