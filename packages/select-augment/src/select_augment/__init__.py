"""select-augment: When Dynamic Data Selection Meets Data Augmentation: Achieving Enhanced Training Acceleration (ICML 2025).

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "Config": "select_augment.config",
    "fit": "select_augment.method",
    "predict": "select_augment.method",
    "make_data": "select_augment.data",
    "SelectAugmentError": "select_augment.errors",
})
