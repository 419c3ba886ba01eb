"""A small UNet2D noise predictor ``eps_theta(x_t, t)`` over the [u, f, s] "image" (the official model is the same
family at dim 128, mults (1, 2, 4, 8); ours is smaller for CPU).

Input and output ``[B, 3, H, W]`` with ``H = 16`` padded time rows and ``W = nx`` (divisible by ``2^(levels-1)``);
ResNet blocks with GroupNorm(1 group) and a sinusoidal time embedding added after the first convolution.

``attention`` adds the official model's global mixing: ``"mid"`` (the default) full multi-head self-attention
(``softmax(q k^T / sqrt(d)) v`` over the ``H W / 4^(levels-1)`` positions of the lowest level) and a second ResNet
block in the middle, as the official middle block; ``"all"`` also a linear attention (Shen et al. 2021:
``softmax_d(q)`` against the context ``softmax_n(k) v^T``, cost linear in the ``H W`` positions) after the block of
every level, as the official levels (at dim 16 on 2 CPU cores a pretraining step took 190 ms against 125 ms
without attention); ``"none"`` neither. Each
attention is pre-normed (GroupNorm, 1 group) and residual. Without it the convolutions' receptive field
(about 44 pixels at 3 levels) is local, and only the GroupNorm statistics couple distant points: the safety channel (``max_{t,x} u^2`` broadcast over the image) and a control that must carry ``u0`` to a
distant ``u_d`` are global functions of the image, which a purely convolutional net of this size learns poorly.
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


ATTENTION = ("none", "mid", "all")


def _heads(c: int) -> int:
    """About 8 channels per head: the largest divisor of ``c`` not above ``c // 8`` (at least 1)."""
    return max(h for h in range(1, max(1, c // 8) + 1) if c % h == 0)


class _Attention(nn.Module):
    """Pre-norm (GroupNorm, 1 group), a 1x1 ``qkv`` projection into ``_heads(c)`` heads and a 1x1 output projection:
    the parts shared by both attentions."""

    def __init__(self, c: int):
        super().__init__()
        self.heads = _heads(c)
        self.norm, self.qkv, self.out = nn.GroupNorm(1, c), nn.Conv2d(c, 3 * c, 1, bias=False), nn.Conv2d(c, c, 1)

    def _qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``x [B, C, H, W]`` -> q, k, v, each ``[B, heads, d = C / heads, n = H W]``."""
        b, c, h, w = x.shape
        q, k, v = (t.reshape(b, self.heads, c // self.heads, h * w) for t in self.qkv(self.norm(x)).chunk(3, dim=1))
        return q, k, v


class LinearAttention(_Attention):
    """``x + W_o [softmax_n(k) v^T]^T softmax_d(q)`` per head over the ``n = H W`` positions of ``x [B, C, H, W]``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        q, k, v = self._qkv(x)  # [B, heads, d, n]
        q, k = q.softmax(dim=-2), k.softmax(dim=-1)
        context = torch.einsum("bhdn,bhen->bhde", k, v)  # [B, heads, d, d]
        o = torch.einsum("bhde,bhdn->bhen", context, q).reshape(b, c, h, w)  # [B, C, H, W]
        return x + self.out(o)


class SelfAttention(_Attention):
    """``x + W_o softmax(q k^T / sqrt(d)) v`` per head over the ``H W`` positions of ``x [B, C, H, W]``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        q, k, v = (t.transpose(-1, -2) for t in self._qkv(x))  # [B, heads, n = H W, d = C / heads]
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v)  # [B, heads, n, d]
        return x + self.out(o.transpose(-1, -2).reshape(b, c, h, w))


class UNet2D(nn.Module):
    """``eps_theta [B, C, H, W]``; ``dim`` base channels, ``mults`` per level (each level halves H and W);
    ``attention``: ``"none"``, ``"mid"`` (self-attention in the middle block) or ``"all"`` (also linear attention
    per level); see the module docstring."""

    def __init__(self, *, channels: int = 3, dim: int = 16, mults: tuple[int, ...] = (1, 2, 4),
                 attention: str = "mid"):
        super().__init__()
        if attention not in ATTENTION:
            raise ValueError(f"attention must be one of {ATTENTION}, got {attention!r}")
        self.dim, self.mults, self.channels, self.attention = dim, tuple(mults), channels, attention
        attn = LinearAttention if attention == "all" else (lambda c: nn.Identity())
        t_dim = 4 * dim
        self.temb = nn.Sequential(nn.Linear(dim, t_dim), nn.SiLU(), nn.Linear(t_dim, t_dim))
        self.inp = nn.Conv2d(channels, dim, 3, padding=1)
        chans = [dim * m for m in mults]
        self.down, self.down_attn, self.pool = nn.ModuleList(), nn.ModuleList(), nn.ModuleList()
        c = dim
        for i, co in enumerate(chans):
            self.down.append(ResBlock(c, co, t_dim))
            self.down_attn.append(attn(co))
            self.pool.append(nn.Conv2d(co, co, 3, stride=2, padding=1) if i < len(chans) - 1 else nn.Identity())
            c = co
        self.mid = ResBlock(c, c, t_dim)
        self.mid_attn = SelfAttention(c) if attention != "none" else nn.Identity()
        self.mid2 = ResBlock(c, c, t_dim) if attention != "none" else None
        self.up, self.up_attn, self.unpool = nn.ModuleList(), nn.ModuleList(), nn.ModuleList()
        for i, co in reversed(list(enumerate(chans))):
            self.up.append(ResBlock(c + co, co, t_dim))
            self.up_attn.append(attn(co))
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
        for block, at, pool in zip(self.down, self.down_attn, self.pool):
            h = at(block(h, temb))
            skips.append(h)
            h = pool(h)
        h = self.mid_attn(self.mid(h, temb))
        if self.mid2 is not None:
            h = self.mid2(h, temb)
        for block, at, unpool in zip(self.up, self.up_attn, self.unpool):
            h = at(block(torch.cat([h, skips.pop()], dim=1), temb))
            h = unpool(h)
        return self.out(h)
