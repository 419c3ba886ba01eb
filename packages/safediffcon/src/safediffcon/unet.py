"""A small UNet2D noise predictor ``eps_theta(x_t, t)`` over the [u, f, s] "image" (the official model is the same
family at dim 128, mults (1, 2, 4, 8); ours is smaller for CPU).

Input and output ``[B, 3, H, W]`` with ``H = 16`` padded time rows and ``W = nx`` (divisible by ``2^(levels-1)``);
ResNet blocks with GroupNorm(1 group) and a sinusoidal time embedding added after the first convolution.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal embedding ``[B, dim]`` of integer steps ``t [B]``."""
    half = dim // 2
    freqs = torch.exp(-math.log(10_000) * torch.arange(half, dtype=torch.float32, device=t.device) / max(half, 1))
    ang = t.float()[:, None] * freqs[None]
    return torch.cat([ang.sin(), ang.cos()], dim=1)


class ResBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, t_dim: int):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(1, c_in), nn.Conv2d(c_in, c_out, 3, padding=1)
        self.t = nn.Linear(t_dim, c_out)
        self.n2, self.c2 = nn.GroupNorm(1, c_out), nn.Conv2d(c_out, c_out, 3, padding=1)
        self.skip = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else nn.Identity()
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor, temb: torch.Tensor) -> torch.Tensor:
        h = self.c1(self.act(self.n1(x)))
        h = h + self.t(temb)[:, :, None, None]
        h = self.c2(self.act(self.n2(h)))
        return h + self.skip(x)


class UNet2D(nn.Module):
    """``eps_theta [B, C, H, W]``; ``dim`` base channels, ``mults`` per level (each level halves H and W)."""

    def __init__(self, *, channels: int = 3, dim: int = 16, mults: tuple[int, ...] = (1, 2, 4)):
        super().__init__()
        self.dim, self.mults, self.channels = dim, tuple(mults), channels
        t_dim = 4 * dim
        self.temb = nn.Sequential(nn.Linear(dim, t_dim), nn.SiLU(), nn.Linear(t_dim, t_dim))
        self.inp = nn.Conv2d(channels, dim, 3, padding=1)
        chans = [dim * m for m in mults]
        self.down, self.pool = nn.ModuleList(), nn.ModuleList()
        c = dim
        for i, co in enumerate(chans):
            self.down.append(ResBlock(c, co, t_dim))
            self.pool.append(nn.Conv2d(co, co, 3, stride=2, padding=1) if i < len(chans) - 1 else nn.Identity())
            c = co
        self.mid = ResBlock(c, c, t_dim)
        self.up, self.unpool = nn.ModuleList(), nn.ModuleList()
        for i, co in reversed(list(enumerate(chans))):
            self.up.append(ResBlock(c + co, co, t_dim))
            self.unpool.append(nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"),
                                             nn.Conv2d(co, chans[i - 1], 3, padding=1)) if i > 0 else nn.Identity())
            c = chans[i - 1] if i > 0 else co
        self.out = nn.Sequential(nn.GroupNorm(1, c), nn.SiLU(), nn.Conv2d(c, channels, 3, padding=1))
        nn.init.zeros_(self.out[-1].weight)
        nn.init.zeros_(self.out[-1].bias)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        temb = self.temb(timestep_embedding(t, self.dim))
        h = self.inp(x)
        skips = []
        for block, pool in zip(self.down, self.pool):
            h = block(h, temb)
            skips.append(h)
            h = pool(h)
        h = self.mid(h, temb)
        for block, unpool in zip(self.up, self.unpool):
            h = block(torch.cat([h, skips.pop()], dim=1), temb)
            h = unpool(h)
        return self.out(h)
