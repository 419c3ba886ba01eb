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


def model_kwargs(kw: dict[str, bool]) -> dict:
    """``kw`` (from :func:`hub_kwargs`, or ``{"local_files_only": True}`` for a folder) for ``AutoModel*.from_pretrained``.

    When cache-only, transformers still looks for a PEFT ``adapter_config.json`` on the hub with its own keyword
    arguments (``adapter_kwargs``), and huggingface_hub retries that for ~23 s unless ``HF_HUB_OFFLINE`` was set
    before it was imported; this passes ``local_files_only`` to that lookup too. (Tokenizers take ``kw`` as it is.)
    """
    out = dict(kw)
    if kw.get("local_files_only"):
        out["adapter_kwargs"] = {"local_files_only": True}
    return out
