"""icml25: the thin shared foundation of the icml25 monorepo.

Importing this package is cheap: it never imports torch, matplotlib or tyro at module import time. The public
names below are resolved lazily on first attribute access.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_LAZY = {
    "seed_everything": "icml25.seeding",
    "resolve_device": "icml25.device",
    "set_threads": "icml25.device",
    "RunDir": "icml25.rundir",
    "atomic_write_text": "icml25.io",
    "atomic_write_bytes": "icml25.io",
    "atomic_write_json": "icml25.io",
    "Claim": "icml25.claims",
    "Report": "icml25.claims",
    "mean_sd": "icml25.claims",
    "validate_results": "icml25.claims",
    "ResultsError": "icml25.claims",
    "save_model": "icml25.checkpoint",
    "load_model": "icml25.checkpoint",
    "CheckpointError": "icml25.checkpoint",
    "Method": "icml25.registry",
    "CommonOptions": "icml25.cli_helpers",
    "ReproduceOptions": "icml25.cli_helpers",
    "method_main": "icml25.cli_helpers",
}

from icml25.lazy import lazy_exports  # noqa: E402  (imports nothing heavy)

__getattr__, __dir__, __all__ = lazy_exports(__name__, _LAZY)

if TYPE_CHECKING:  # pragma: no cover
    from icml25.checkpoint import CheckpointError, load_model, save_model
    from icml25.claims import Claim, Report, ResultsError, mean_sd, validate_results
    from icml25.cli_helpers import CommonOptions, ReproduceOptions, method_main
    from icml25.device import resolve_device, set_threads
    from icml25.io import atomic_write_bytes, atomic_write_json, atomic_write_text
    from icml25.registry import Method
    from icml25.rundir import RunDir
    from icml25.seeding import seed_everything

