"""Shared torch building blocks (imports torch: use lazily)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


def mlp(in_dim: int, hidden: int | Sequence[int], out_dim: int, *, depth: int | None = None,
        activation: type[nn.Module] = nn.ReLU, layer_norm: bool = False, out_activation: nn.Module | None = None
        ) -> nn.Sequential:
    """``Linear -> [LayerNorm] -> act`` for each hidden width, then ``Linear(out_dim)``.

    ``hidden`` is a list of widths, or one width repeated ``depth`` times (default 2). Shapes: ``[..., in_dim] ->
    [..., out_dim]``.
    """
    if isinstance(hidden, int):
        widths = [hidden] * (2 if depth is None else depth)
    else:
        widths = list(hidden)
    for name, v in (("in_dim", in_dim), ("out_dim", out_dim), *((f"hidden[{i}]", w) for i, w in enumerate(widths))):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"mlp: {name} must be a positive integer, got {v!r}")
    layers: list[nn.Module] = []
    d = in_dim
    for w in widths:
        layers.append(nn.Linear(d, w))
        if layer_norm:
            layers.append(nn.LayerNorm(w))
        layers.append(activation())
        d = w
    layers.append(nn.Linear(d, out_dim))
    if out_activation is not None:
        layers.append(out_activation)
    return nn.Sequential(*layers)


__all__ = ["mlp", "torch"]
