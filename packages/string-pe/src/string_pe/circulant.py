"""Circulant-STRING (paper Eq. 11, Thm 3.5): ``R(r) = exp(Σ_k L_k r_k)``, ``L_k = C_k − C_kᵀ``, C_k circulant.

``C_k`` has first column ``c_k = (c_0, …, c_{d−1})`` (``[C_k]_{ij} = c_{(i−j) mod d}``); all circulant matrices
commute, so the ``L_k`` are commuting skew generators and ``R`` is a STRING. With the numpy/torch DFT convention
``C z = IFFT(FFT(c) ⊙ FFT(z))`` and ``Cᵀ`` has spectrum ``conj(FFT(c))``, hence

    R(r) z = IFFT( exp(Σ_k r_k μ_k) ⊙ FFT(z) ),      μ_k = FFT(c_k) − conj(FFT(c_k)) = 2i·Im FFT(c_k),

computed in O(d log d) per token with the real FFT (``rfft``/``irfft``; the multiplier is Hermitian, the output
real). Modes 0 and d/2 have μ = 0 (``R(r)·1 = 1`` and ``R(r)·((−1)^m)_m = (−1)^m``), so ``d − 2`` directions
rotate. Parameters: ``d`` per axis per head.

Options (not the paper's default): ``block_size`` b (divides d) makes every ``L_k`` block-diagonal with ``d/b``
circulant ``b × b`` blocks (block-circulant STRING, swept in the paper's appendix). Init ``"rope-mixed"`` (default)
chooses ``c_k`` whose spectrum reproduces RoPE-Mixed's initial frequencies, ``"normal"`` draws ``c ~ N(0, std²)``.

Thm 3.4 made concrete: in the real Fourier basis ``Q`` (cos/sin pairs per mode), ``QᵀL_kQ`` is block-diagonal
RoPE, so ``R(r) = Q RoPE(r) Qᵀ`` (:meth:`CirculantSTRING.as_rope`), which also lets ``Qᵀ`` fold into the projections.

Shapes: ``coeffs`` ``(H, d_c, d)``; ``z`` ``(B, H, N, d)``; angles ``(B, H, N, d/b, b/2 + 1)``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from string_pe.base import PositionEncoding, check_int, check_real_float
from string_pe.errors import PositionEncodingError
from string_pe.rope import mixed_init_frequencies


def circulant(c: Tensor) -> Tensor:
    """Dense circulant matrices from first columns ``c`` ``(..., b)`` → ``(..., b, b)``, ``C_ij = c_{(i−j) mod b}``."""
    b = c.shape[-1]
    i = torch.arange(b, device=c.device)
    idx = (i[:, None] - i[None, :]) % b  # (b, b)
    return c[..., idx]


def real_fourier_basis(b: int, *, dtype: torch.dtype = torch.float64) -> tuple[Tensor, Tensor]:
    """Orthogonal real Fourier basis ``Q`` ``(b, b)`` (columns in RoPE pair order) and the mode of each pair ``(b/2,)``.

    Pair ``p = 0`` spans the two fixed directions (constant and alternating, mode "0"), pair ``p ≥ 1`` spans
    ``(sin, cos)`` of mode ``p``; on pair ``p`` the circulant generator acts as rotation at rate ``2·Im FFT(c)_p``.
    """
    j = torch.arange(b, dtype=dtype)
    cols = [torch.full((b,), 1 / math.sqrt(b), dtype=dtype), (-1.0) ** j / math.sqrt(b)]
    modes = [0]
    for m in range(1, b // 2):
        cols.append(math.sqrt(2 / b) * torch.sin(2 * math.pi * j * m / b))
        cols.append(math.sqrt(2 / b) * torch.cos(2 * math.pi * j * m / b))
        modes.append(m)
    return torch.stack(cols, dim=1), torch.tensor(modes)


class CirculantSTRING(PositionEncoding):
    """Circulant-STRING position encoding (paper Eq. 11), applied by FFT in O(d log d).

    Args (keyword-only):
        head_dim, coord_dim, num_heads: as for every encoding (``head_dim`` even).
        block_size: circulant block size ``b`` (even, divides ``head_dim``); ``None`` = one full ``d × d`` circulant
            per axis (the paper's Eq. 11).
        init: ``"rope-mixed"`` (spectrum = RoPE-Mixed init frequencies) or ``"normal"``.
        init_std: std for ``init="normal"``.
        base: magnitude base of the RoPE-Mixed-style init (10).
        coeffs: optional initial circulant coefficients ``(H, d_c, d)``.
        generator: optional ``torch.Generator``.
    """

    def __init__(self, *, head_dim: int, coord_dim: int = 2, num_heads: int = 1, block_size: int | None = None,
                 init: str = "rope-mixed", init_std: float = 0.1, base: float = 10.0,
                 coeffs: Tensor | None = None, generator: torch.Generator | None = None) -> None:
        super().__init__(head_dim=head_dim, coord_dim=coord_dim, num_heads=num_heads)
        d = head_dim
        b = d if block_size is None else check_int("block_size", block_size, minimum=2)
        if d % b or b % 2:
            raise PositionEncodingError(f"block_size must be even and divide head_dim={d}, got {block_size}")
        self.block_size = b
        if init not in ("rope-mixed", "normal"):
            raise PositionEncodingError(f"init must be 'rope-mixed' or 'normal', got {init!r}")
        want = (num_heads, coord_dim, d)
        if coeffs is not None:
            check_real_float("coeffs", coeffs)
            if tuple(coeffs.shape) != want:
                raise PositionEncodingError(
                    f"coeffs (circulant coefficients) must have shape {want} (heads, coord_dim, head_dim), "
                    f"got {tuple(coeffs.shape)}"
                )
            c = coeffs.detach().clone()
        elif init == "normal":
            c = torch.randn(*want, generator=generator, dtype=torch.float64) * float(init_std)
            c = c.to(torch.get_default_dtype())
        else:
            c = self._spectral_init(base, generator).to(torch.get_default_dtype())
        self.coeffs = nn.Parameter(c)

    def _spectral_init(self, base: float, generator: torch.Generator | None) -> Tensor:
        """Coefficients whose rotation rates equal RoPE-Mixed's initial frequencies on the ``d/2 − d/b`` rotating pairs."""
        d, b, h, dc = self.head_dim, self.block_size, self.num_heads, self.coord_dim
        nb = d // b
        n_rot = nb * (b // 2 - 1)
        freqs = mixed_init_frequencies(head_dim=2 * max(n_rot, 1), coord_dim=dc, num_heads=h, base=base,
                                       generator=generator)[:, :n_rot]  # (H, n_rot, d_c)
        rates = freqs.permute(0, 2, 1).reshape(h, dc, nb, b // 2 - 1)  # (H, d_c, d/b, b/2-1)
        spec = torch.zeros(h, dc, nb, b // 2 + 1, dtype=torch.complex128)
        spec[..., 1: b // 2] = 1j * rates / 2  # Im FFT(c)_m = rate/2 on modes 1..b/2-1
        c = torch.fft.irfft(spec, n=b)  # (H, d_c, d/b, b) real, odd sequence
        return c.flatten(-2)  # (H, d_c, d)

    # ------------------------------------------------------------------ spectrum
    def rates(self, dtype: torch.dtype | None = None) -> Tensor:
        """Rotation rates ``2·Im rfft(c_k)`` ``(H, d_c, d/b, b/2+1)`` (zero on modes 0 and b/2)."""
        c = self.coeffs if dtype is None else self.coeffs.to(dtype)
        cb = c.unflatten(-1, (-1, self.block_size))  # (H, d_c, d) -> (H, d_c, d/b, b)
        r = 2 * torch.fft.rfft(cb, dim=-1).imag
        r = r.clone()
        r[..., 0] = 0.0
        r[..., -1] = 0.0
        return r

    # ------------------------------------------------------------------ PositionEncoding hooks
    def _context(self, positions: Tensor, dtype: torch.dtype) -> Tensor:
        rates = self.rates(dtype)  # (H, d_c, d/b, m)
        return torch.einsum("bnc,hcgm->bhngm", positions, rates)  # (B, H, N, d/b, b/2+1)

    def _encode(self, z: Tensor, ctx: Tensor) -> Tensor:
        zb = z.unflatten(-1, (-1, self.block_size))  # (B, H, N, d) -> (B, H, N, d/b, b)
        spec = torch.fft.rfft(zb, dim=-1)  # (B, H, N, d/b, b/2+1)
        out = torch.fft.irfft(torch.polar(torch.ones_like(ctx), ctx) * spec, n=self.block_size, dim=-1)
        return out.flatten(-2)  # (B, H, N, d)

    def generators(self) -> Tensor:
        """Dense ``L_k = C_k − C_kᵀ`` ``(H, d_c, d, d)`` (block-diagonal for ``block_size < d``)."""
        cb = self.coeffs.unflatten(-1, (-1, self.block_size))  # (H, d_c, d/b, b)
        C = circulant(cb)  # (H, d_c, d/b, b, b)
        L = C - C.transpose(-1, -2)
        return torch.stack([torch.stack([torch.block_diag(*L[h, k]) for k in range(self.coord_dim)])
                            for h in range(self.num_heads)])

    # ------------------------------------------------------------------ Thm 3.4: R(r) = Q RoPE(r) Qᵀ
    @torch.no_grad()
    def as_rope(self) -> tuple[Tensor, Tensor]:
        """``(Q, freqs)``: orthogonal ``Q`` ``(d, d)`` and RoPE frequencies ``(H, d/2, d_c)`` with
        ``R(r) = Q RoPE_freqs(r) Qᵀ`` (consecutive-pair RoPE, as in :mod:`string_pe.rope`)."""
        b, nb = self.block_size, self.head_dim // self.block_size
        dtype = torch.promote_types(self.coeffs.dtype, torch.float32)
        Qb, modes = real_fourier_basis(b, dtype=dtype)
        Q = torch.block_diag(*([Qb] * nb)).to(self.coeffs.device)
        rates = self.rates(dtype)[..., modes]  # (H, d_c, d/b, b/2); pair 0 has rate 0
        freqs = rates.flatten(-2).permute(0, 2, 1).contiguous()  # (H, d/2, d_c)
        return Q, freqs

    def extra_repr(self) -> str:
        return super().extra_repr() + f", block_size={self.block_size}"
