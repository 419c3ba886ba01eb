"""The Attention-DeepSets encoder of EARL-BO (Cheon et al., ICML 2025, Sec. 3.2).

Maps a data set of any size to a fixed vector, invariant to the order of its points::

    e_i = phi([x_i, y~_i])                                   [B, N, w]    (MLP on each point)
    h   = LN(e + MHA(e, e, e; mask)),  h = LN(h + FF(h))    [B, N, w]    (self-attention blocks, equivariant)
    a_i = softmax_i(score(h_i))   over the valid points      [B, N]       (attention pooling, "weighted scoring")
    z   = rho([sum_i a_i h_i, y~*, steps_left / H])          [B, w]       (invariant)

``y~`` is y standardised with D_k's statistics, ``y~*`` the incumbent of the set. Padded points (``mask`` False) take
no part in attention or pooling, so a padded set encodes exactly like the unpadded one. Trained end-to-end by the
PPO loss of :mod:`earl_bo.ppo`.
"""

from __future__ import annotations

import torch
from torch import nn


class SetEncoder(nn.Module):
    """Attention-DeepSets encoder ``(x [B, N, d], y [B, N], mask [B, N], steps_left [B]) -> z [B, width]``.

    Parameters: ``dim`` (d), ``width`` (w), ``heads`` (attention heads), ``blocks`` (self-attention blocks).
    """

    def __init__(self, *, dim: int, width: int = 64, heads: int = 4, blocks: int = 1) -> None:
        super().__init__()
        if width % heads:
            raise ValueError(f"width ({width}) must be divisible by heads ({heads})")
        self.dim, self.width = dim, width
        self.phi = nn.Sequential(nn.Linear(dim + 1, width), nn.GELU(), nn.Linear(width, width))
        self.attn = nn.ModuleList(nn.MultiheadAttention(width, heads, batch_first=True) for _ in range(blocks))
        self.ff = nn.ModuleList(nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, width))
                                for _ in range(blocks))
        self.norm1 = nn.ModuleList(nn.LayerNorm(width) for _ in range(blocks))
        self.norm2 = nn.ModuleList(nn.LayerNorm(width) for _ in range(blocks))
        self.score = nn.Linear(width, 1)
        self.rho = nn.Sequential(nn.Linear(width + 2, width), nn.GELU(), nn.Linear(width, width), nn.GELU())

    def forward(self, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor | None = None,
                steps_left: torch.Tensor | None = None) -> torch.Tensor:
        """``x [B, N, d]`` (unit cube), ``y [B, N]`` (standardised), ``mask [B, N]`` (True = a real point),
        ``steps_left [B]`` (fraction of the horizon left, 0..1) -> ``[B, width]``."""
        b, n, _ = x.shape
        if mask is None:
            mask = torch.ones(b, n, dtype=torch.bool, device=x.device)
        if steps_left is None:
            steps_left = torch.zeros(b, device=x.device)
        h = self.phi(torch.cat([x, y.unsqueeze(-1)], -1))  # [B, N, w]
        pad = ~mask  # key_padding_mask: True = ignore
        for attn, ff, n1, n2 in zip(self.attn, self.ff, self.norm1, self.norm2):
            a, _ = attn(h, h, h, key_padding_mask=pad, need_weights=False)
            h = n1(h + a)
            h = n2(h + ff(h))
        s = self.score(h).squeeze(-1).masked_fill(pad, float("-inf"))  # [B, N]
        att = torch.softmax(s, -1)
        pooled = (att.unsqueeze(-1) * h).sum(1)  # [B, w]
        best = y.masked_fill(pad, float("-inf")).max(-1).values  # [B]
        glob = torch.stack([best, steps_left.to(h)], -1)  # [B, 2]
        return self.rho(torch.cat([pooled, glob], -1))
