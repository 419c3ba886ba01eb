"""Seeding of every random number generator the packages use (python, numpy, torch when installed)."""

from __future__ import annotations

import importlib.util
import os
import random


def seed_everything(seed: int, *, deterministic: bool = False) -> int:
    """Seed ``random``, ``numpy`` and (if installed) ``torch`` on every device.

    With ``deterministic=True`` torch is also asked for deterministic kernels (``warn_only`` so that ops without a
    deterministic implementation warn instead of failing). Returns the seed.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {type(seed).__name__}")
    if not 0 <= seed < 2**32:
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    import numpy as np

    np.random.seed(seed)
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.manual_seed(seed)
        if deterministic:
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            torch.use_deterministic_algorithms(True, warn_only=True)
            torch.backends.cudnn.benchmark = False
            torch.backends.cudnn.deterministic = True
    return seed
