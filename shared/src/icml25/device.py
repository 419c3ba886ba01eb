"""Device and thread choice."""

from __future__ import annotations

import os
from typing import Any

DEVICES = ("auto", "cpu", "cuda", "mps")


def resolve_device(name: str = "auto") -> Any:
    """Return a ``torch.device`` for ``auto|cpu|cuda|mps|cuda:N``; ``auto`` picks cuda, then mps, then cpu."""
    import torch

    if not isinstance(name, str):
        raise ValueError(f"device must be a string, one of {DEVICES} or 'cuda:N', got {name!r}")
    base = name.split(":", 1)[0]
    if base not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES} or 'cuda:N', got {name!r}")
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if base == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} asked for, but torch.cuda.is_available() is False")
    if base == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise ValueError("device 'mps' asked for, but torch.backends.mps.is_available() is False")
    return torch.device(name)


def set_threads(n: int | None = None) -> int:
    """Set torch's intra-op threads (default: ``OMP_NUM_THREADS`` or the CPU count). Returns the number set."""
    if n is None:
        n = int(os.environ.get("OMP_NUM_THREADS", 0)) or (os.cpu_count() or 1)
    if n < 1:
        raise ValueError(f"threads must be >= 1, got {n}")
    try:
        import torch
    except ImportError:  # pragma: no cover
        return n
    torch.set_num_threads(n)
    return n
