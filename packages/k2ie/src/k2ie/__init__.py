"""k2ie: K²IE — Kernel Method-based Kernel Intensity Estimators for Inhomogeneous Poisson Processes (ICML 2025).

``λ̂(x) = Σ_n h(x, x_n)`` with the equivalent kernel ``h(x, y) = φ(x)ᵀ(Φ_T + I/a)⁻¹φ(y)`` (random Fourier features),
against the edge-corrected KIE and Flaxman et al.'s RKHS estimator. Import is cheap: names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "K2IE": "k2ie.estimators",
    "KIE": "k2ie.estimators",
    "FlaxmanRKHS": "k2ie.estimators",
    "NystromK2IE": "k2ie.estimators",
    "Window": "k2ie.window",
    "RandomFourierFeatures": "k2ie.features",
    "select": "k2ie.selection",
    "SelectResult": "k2ie.selection",
    "simulate": "k2ie.data",
    "read_points_csv": "k2ie.io",
    "window_from_bounds": "k2ie.io",
    "load_points": "k2ie.io",
    "intensity_1d": "k2ie.data",
    "intensity_2d": "k2ie.data",
    "fragmented_window": "k2ie.data",
    "integrated_errors": "k2ie.metrics",
    "Config": "k2ie.config",
    "K2ieError": "k2ie.errors",
})
