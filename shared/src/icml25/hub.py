"""Offline-aware loading of Hugging Face model ids: fail in seconds, not after a minute of retries.

``hub_kwargs()`` returns ``{"local_files_only": True}`` when ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` is set or
the hub does not answer a TCP connection within ``timeout`` seconds; pass it to ``from_pretrained``.
"""

from __future__ import annotations

import os
import socket
from functools import lru_cache

_TRUE = {"1", "true", "yes", "on"}


def offline_env() -> bool:
    return any(os.environ.get(k, "").strip().lower() in _TRUE for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


@lru_cache(maxsize=1)
def hub_reachable(host: str = "huggingface.co", port: int = 443, timeout: float = 2.0) -> bool:
    """Whether a TCP connection to the hub opens within ``timeout`` seconds (cached for the process)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def hub_kwargs(*, timeout: float = 2.0) -> dict[str, bool]:
    """``from_pretrained`` keyword arguments: cache-only when offline or when the hub is unreachable."""
    if offline_env() or not hub_reachable(timeout=timeout):
        return {"local_files_only": True}
    return {}
