"""Multi-dimensional RoPE: RoPE-Axial (fixed frequencies) and RoPE-Mixed (learnable per-head frequencies).

Paper Eq. 5: ``RoPE(r) = Π_k RoPE([r]_k)``; with per-axis frequencies block ``n`` (channels ``2n, 2n+1``,
consecutive pairs as in naver-ai/rope-vit) is rotated by

    φ_n(r) = Σ_k θ_{n,k} r_k,      [z]_{2n:2n+2} ← ρ(φ_n) [z]_{2n:2n+2},   ρ(φ) = [[cos φ, −sin φ], [sin φ, cos φ]].

It is the STRING with block-diagonal generators ``L_k = ⊕_n θ_{n,k} [[0, −1], [1, 0]]`` (Thm 3.3).

* **RoPE-Axial** (Heo et al., 2024): fixed ``θ = 1/base^{j/m}``, ``j = 0..m−1``; the ``d/2`` blocks are split into
  ``d_c`` contiguous groups, group ``k`` uses axis ``k`` only (in 2D: first half x, second half y, ``m = d/4``,
  ``base = 100`` — exactly rope-vit's ``1/100^{4j/d}``).
* **RoPE-Mixed** (Heo et al., 2024): learnable ``θ ∈ R^{H × d/2 × d_c}`` per layer and head. Init per head: a random
  rotation ``Q_h`` of the coordinate frame (in 2D: angle ``a_h ~ U(0, 2π)``); group ``k`` of the blocks points along
  column ``k`` of ``Q_h`` with magnitudes ``1/base^{j/m}`` (in 2D: ``(cos a_h, sin a_h)`` then
  ``(cos(a_h+π/2), sin(a_h+π/2))``, ``base = 10`` — exactly rope-vit's mixed init).

Shapes: ``angles`` ``(B, H, N, d/2)``; ``z`` ``(B, H, N, d)``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from string_pe.base import PositionEncoding, check_real_float
from string_pe.errors import PositionEncodingError


def rotate_pairs(z: Tensor, angles: Tensor) -> Tensor:
    """Rotate consecutive channel pairs of ``z`` ``(..., d)`` by ``angles`` ``(..., d/2)`` (broadcasting)."""
    cos, sin = torch.cos(angles), torch.sin(angles)
    z2 = z.unflatten(-1, (-1, 2))  # (..., d) -> (..., d/2, 2)
    x0, x1 = z2[..., 0], z2[..., 1]
    out = torch.stack((cos * x0 - sin * x1, sin * x0 + cos * x1), dim=-1)  # (..., d/2, 2)
    return out.flatten(-2)  # (..., d)


def rope_angles(positions: Tensor, freqs: Tensor) -> Tensor:
    """``φ[b, h, n, f] = Σ_k positions[b, n, k] · freqs[h, f, k]``: ``(B, N, d_c) × (H, d/2, d_c) → (B, H, N, d/2)``."""
    return torch.einsum("bnc,hfc->bhnf", positions, freqs)


def rope_generators(freqs: Tensor) -> Tensor:
    """Dense block-diagonal RoPE generators (Thm 3.3): ``(H, d/2, d_c) → (H, d_c, d, d)``."""
    h, half, dc = freqs.shape
    d = 2 * half
    gens = freqs.new_zeros(h, dc, d, d)
    idx = torch.arange(half, device=freqs.device)
    f = freqs.permute(0, 2, 1)  # (H, d_c, d/2)
    gens[:, :, 2 * idx + 1, 2 * idx] = f
    gens[:, :, 2 * idx, 2 * idx + 1] = -f
    return gens


def _group_sizes(half: int, coord_dim: int) -> list[int]:
    """Split ``half = d/2`` blocks into ``coord_dim`` contiguous groups whose sizes differ by at most one."""
    base, extra = divmod(half, coord_dim)
    return [base + (1 if k < extra else 0) for k in range(coord_dim)]


def axial_frequencies(*, head_dim: int, coord_dim: int, base: float) -> Tensor:
    """Fixed RoPE-Axial frequencies ``(d/2, d_c)``: group ``k`` of blocks uses axis ``k`` with ``1/base^{j/m_k}``."""
    half = head_dim // 2
    freqs = torch.zeros(half, coord_dim, dtype=torch.float64)
    start = 0
    for k, m in enumerate(_group_sizes(half, coord_dim)):
        j = torch.arange(m, dtype=torch.float64)
        freqs[start:start + m, k] = 1.0 / base ** (j / max(m, 1))
        start += m
    return freqs


def random_frame(coord_dim: int, generator: torch.Generator | None = None) -> Tensor:
    """A random rotation of the coordinate frame ``(d_c, d_c)``; in 2D ``[[cos a, −sin a], [sin a, cos a]]``, a ~ U(0, 2π)."""
    if coord_dim == 1:
        return torch.ones(1, 1, dtype=torch.float64)
    if coord_dim == 2:
        a = float(torch.rand((), generator=generator, dtype=torch.float64)) * 2 * math.pi
        return torch.tensor([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]], dtype=torch.float64)
    g = torch.randn(coord_dim, coord_dim, generator=generator, dtype=torch.float64)
    qm, r = torch.linalg.qr(g)
    qm = qm * torch.sign(torch.diagonal(r))  # Haar-distributed orthogonal
    if torch.linalg.det(qm) < 0:
        qm[:, 0] = -qm[:, 0]
    return qm


def mixed_init_frequencies(*, head_dim: int, coord_dim: int, num_heads: int, base: float,
                           generator: torch.Generator | None = None) -> Tensor:
    """RoPE-Mixed initial frequencies ``(H, d/2, d_c)`` (rope-vit's ``init_random_2d_freqs`` generalised to d_c axes)."""
    half = head_dim // 2
    out = torch.zeros(num_heads, half, coord_dim, dtype=torch.float64)
    sizes = _group_sizes(half, coord_dim)
    for h in range(num_heads):
        frame = random_frame(coord_dim, generator)  # columns: directions
        start = 0
        for k, m in enumerate(sizes):
            mags = 1.0 / base ** (torch.arange(m, dtype=torch.float64) / max(m, 1))  # (m,)
            out[h, start:start + m, :] = mags[:, None] * frame[:, k][None, :]
            start += m
    return out


class _RoPEBase(PositionEncoding):
    freqs: Tensor

    def _context(self, positions: Tensor, dtype: torch.dtype) -> Tensor:
        return rope_angles(positions, self.freqs.to(dtype))  # (B|1, H, N, d/2)

    def _encode(self, z: Tensor, ctx: Tensor) -> Tensor:
        return rotate_pairs(z, ctx)

    def generators(self) -> Tensor:
        return rope_generators(self.freqs)


class RoPEAxial(_RoPEBase):
    """RoPE-Axial: fixed per-axis frequencies (Heo et al., 2024; the paper's "RoPE" baseline for images).

    Args (keyword-only):
        head_dim: even per-head dimension ``d``.
        coord_dim: number of coordinate axes ``d_c``.
        num_heads: number of heads ``H`` (all heads share the same fixed frequencies).
        base: frequency base (100 in rope-vit's axial variant).
    """

    def __init__(self, *, head_dim: int, coord_dim: int = 2, num_heads: int = 1, base: float = 100.0) -> None:
        super().__init__(head_dim=head_dim, coord_dim=coord_dim, num_heads=num_heads)
        if not (isinstance(base, (int, float)) and base > 1):
            raise PositionEncodingError(f"base must be a number > 1, got {base!r}")
        f = axial_frequencies(head_dim=head_dim, coord_dim=coord_dim, base=float(base))
        self.register_buffer("freqs", f.to(torch.get_default_dtype()).expand(num_heads, -1, -1).clone())


class RoPEMixed(_RoPEBase):
    """RoPE-Mixed: learnable frequencies for every axis, per head (and per layer: one module per layer).

    Args (keyword-only):
        head_dim, coord_dim, num_heads: see :class:`RoPEAxial`.
        base: magnitude base of the init (10 in rope-vit's mixed variant).
        freqs: optional initial frequencies ``(H, d/2, d_c)`` instead of the random init.
        generator: optional ``torch.Generator`` for the random frame of the init.
    """

    def __init__(self, *, head_dim: int, coord_dim: int = 2, num_heads: int = 1, base: float = 10.0,
                 freqs: Tensor | None = None, generator: torch.Generator | None = None) -> None:
        super().__init__(head_dim=head_dim, coord_dim=coord_dim, num_heads=num_heads)
        if freqs is None:
            if not (isinstance(base, (int, float)) and base > 1):
                raise PositionEncodingError(f"base must be a number > 1, got {base!r}")
            freqs = mixed_init_frequencies(head_dim=head_dim, coord_dim=coord_dim, num_heads=num_heads,
                                           base=float(base), generator=generator)
            freqs = freqs.to(torch.get_default_dtype())
        else:
            check_real_float("freqs", freqs)
            want = (num_heads, head_dim // 2, coord_dim)
            if tuple(freqs.shape) != want:
                raise PositionEncodingError(f"freqs must have shape {want}, got {tuple(freqs.shape)}")
            freqs = freqs.detach().clone()
        self.freqs = nn.Parameter(freqs)
