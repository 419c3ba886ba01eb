"""The five agents compared in ``reproduce`` (KEA paper, Sec. 4): one class, different switches.

| name        | intrinsic | standard module A^B + switch |
|-------------|-----------|------------------------------|
| SAC         | none      | no                           |
| RND-SAC     | rnd       | no                           |
| NovelD-SAC  | noveld    | no                           |
| KEA-RND     | rnd       | yes                          |
| KEA-NovelD  | noveld    | yes                          |
"""

from __future__ import annotations

from typing import Any

VARIANTS: dict[str, dict[str, Any]] = {
    "SAC": dict(intrinsic="none", standard_module=False, beta_i=0.0),
    "RND-SAC": dict(intrinsic="rnd", standard_module=False),
    "NovelD-SAC": dict(intrinsic="noveld", standard_module=False),
    "KEA-RND": dict(intrinsic="rnd", standard_module=True),
    "KEA-NovelD": dict(intrinsic="noveld", standard_module=True),
}


def make_agent(name: str, env, **kwargs: Any):
    """``KEA(env, **VARIANTS[name], **kwargs)``; unknown names raise ``ValueError`` listing the allowed ones."""
    from kea.agent import KEA

    if name not in VARIANTS:
        raise ValueError(f"variant must be one of {list(VARIANTS)}, got {name!r}")
    cfg = {**VARIANTS[name], **kwargs}
    if name == "SAC":
        cfg["beta_i"] = 0.0
    return KEA(env, **cfg)
