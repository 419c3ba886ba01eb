"""The common interface of every position encoding in this package.

A position encoding maps queries and keys of shape ``(batch, heads, tokens, head_dim)`` and token coordinates of
shape ``(batch, tokens, coord_dim)`` (or ``(tokens, coord_dim)``, shared over the batch) to encoded queries and keys
of the same shape; values are never touched (Schenck et al., 2025, Sec. 2–3).

Every encoding in this package is a STRING (Def. 3.1): there are commuting skew-symmetric generators
``L_1..L_{d_c}`` (one set per head) with ``R(r) = exp(Σ_k L_k r_k)``, so that

    ⟨enc(q, r_i), enc(k, r_j)⟩ = ⟨q, R(r_j − r_i) k⟩                       (relative-position property)

and attention logits are exactly invariant under a global translation of all coordinates. ``enc`` is what
``forward`` applies (for Cayley-STRING ``enc(z, r) = RoPE(r) P z``, Eq. 10, whose left ``P`` cancels inside the
dot product); :meth:`PositionEncoding.rotation_matrix` returns the STRING matrix ``R(r)`` itself and
:meth:`PositionEncoding.generators` the dense ``L_k``.

Optional leading tokens (e.g. a CLS token) are left unrotated with ``num_unrotated``; ``positions`` then covers the
remaining ``tokens − num_unrotated`` tokens only.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from string_pe.errors import PositionEncodingError

_BAD_DTYPES = "integer, boolean or complex"


def check_int(name: str, value: Any, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise PositionEncodingError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def check_real_float(name: str, t: Any) -> Tensor:
    if not isinstance(t, Tensor):
        raise PositionEncodingError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not t.dtype.is_floating_point or t.dtype.is_complex:
        raise PositionEncodingError(
            f"{name} must have a real floating dtype (float16/bfloat16/float32/float64), got {t.dtype}; "
            f"{_BAD_DTYPES} tensors are not accepted (convert with .float())"
        )
    return t


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """Rotations are computed in float32 or higher (the paper/rope-vit compute them with autocast off)."""
    return torch.promote_types(dtype, torch.float32)


class PositionEncoding(nn.Module):
    """Base class: validates inputs, handles unrotated prefix tokens and exposes the dense STRING matrices.

    Subclasses implement ``_context(positions, dtype)`` (angles, P, ... for ``positions`` of shape
    ``(B|1, N, d_c)``), ``_encode(z, ctx)`` (what ``forward`` applies to ``z`` of shape ``(..., B, H, N, d)``; q and k are encoded
    in one call stacked on a leading axis),
    ``_string(z, ctx)`` (the STRING matrix ``R(r) z``; defaults to ``_encode``) and ``generators()``.
    """

    def __init__(self, *, head_dim: int, coord_dim: int, num_heads: int) -> None:
        super().__init__()
        self.head_dim = check_int("head_dim", head_dim)
        if head_dim % 2:
            raise PositionEncodingError(f"head_dim must be even (rotations act on pairs of channels), got {head_dim}")
        self.coord_dim = check_int("coord_dim", coord_dim)
        self.num_heads = check_int("num_heads", num_heads)

    # ------------------------------------------------------------------ validation
    def _check_z(self, name: str, z: Any) -> Tensor:
        check_real_float(name, z)
        if z.dim() != 4:
            raise PositionEncodingError(
                f"{name} must have shape (batch, heads, tokens, head_dim), got {tuple(z.shape)}"
            )
        if z.shape[1] != self.num_heads:
            raise PositionEncodingError(f"{name}.shape[1] (heads) must be num_heads={self.num_heads}, got {z.shape[1]}")
        if z.shape[-1] != self.head_dim:
            raise PositionEncodingError(f"{name}.shape[-1] must be head_dim={self.head_dim}, got {z.shape[-1]}")
        return z

    def _check_positions(self, positions: Any, batch: int, tokens: int) -> Tensor:
        check_real_float("positions", positions)
        if positions.dim() == 2:
            positions = positions.unsqueeze(0)  # (N, d_c) -> (1, N, d_c)
        if positions.dim() != 3:
            raise PositionEncodingError(
                f"positions must have shape (batch, tokens, coord_dim) or (tokens, coord_dim), got {tuple(positions.shape)}"
            )
        if positions.shape[-1] != self.coord_dim:
            raise PositionEncodingError(
                f"positions.shape[-1] must be coord_dim={self.coord_dim}, got {positions.shape[-1]}"
            )
        if positions.shape[0] not in (1, batch):
            raise PositionEncodingError(f"positions.shape[0] must be 1 or batch={batch}, got {positions.shape[0]}")
        if positions.shape[1] != tokens:
            raise PositionEncodingError(
                f"positions.shape[1] must equal the number of rotated tokens ({tokens}), got {positions.shape[1]}"
            )
        if not bool(torch.isfinite(positions).all()):
            raise PositionEncodingError("positions must be finite (found NaN or inf)")
        return positions

    # ------------------------------------------------------------------ subclass hooks
    def _context(self, positions: Tensor, dtype: torch.dtype) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _encode(self, z: Tensor, ctx: Any) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def _string(self, z: Tensor, ctx: Any) -> Tensor:
        return self._encode(z, ctx)

    def generators(self) -> Tensor:  # pragma: no cover - abstract
        """Dense skew-symmetric generators ``L_k`` of the STRING, shape ``(heads, coord_dim, d, d)``."""
        raise NotImplementedError

    # ------------------------------------------------------------------ public API
    def forward(self, q: Tensor, k: Tensor, positions: Tensor, *, num_unrotated: int = 0) -> tuple[Tensor, Tensor]:
        """Encode ``q`` and ``k`` (``(B, H, N, d)``) at ``positions`` (``(B, N − num_unrotated, d_c)``).

        The first ``num_unrotated`` tokens (e.g. CLS) are returned unchanged. Output dtype = input dtype; the
        rotation is computed in ``promote(dtype, float32)``.
        """
        self._check_z("q", q)
        self._check_z("k", k)
        if q.shape != k.shape:
            raise PositionEncodingError(f"q and k must have the same shape, got {tuple(q.shape)} and {tuple(k.shape)}")
        check_int("num_unrotated", num_unrotated, minimum=0)
        n_rot = q.shape[2] - num_unrotated
        if n_rot < 0:
            raise PositionEncodingError(f"num_unrotated={num_unrotated} exceeds the number of tokens {q.shape[2]}")
        positions = self._check_positions(positions, q.shape[0], n_rot)
        cd = compute_dtype(torch.promote_types(q.dtype, positions.dtype))
        with torch.autocast(device_type=q.device.type, enabled=False):  # rotations in >= fp32, as in rope-vit
            ctx = self._context(positions.to(cd), cd)
            qk = torch.stack((q[:, :, num_unrotated:], k[:, :, num_unrotated:])).to(cd)  # (2, B, H, N', d): one pass
            rq, rk = self._encode(qk, ctx).to(q.dtype).unbind(0)
        if num_unrotated:
            rq = torch.cat([q[:, :, :num_unrotated], rq], dim=2)
            rk = torch.cat([k[:, :, :num_unrotated], rk], dim=2)
        return rq, rk

    def encode(self, z: Tensor, positions: Tensor) -> Tensor:
        """Encode a single tensor ``z`` of shape ``(B, H, N, d)`` (what ``forward`` applies to q and to k)."""
        self._check_z("z", z)
        positions = self._check_positions(positions, z.shape[0], z.shape[2])
        cd = compute_dtype(torch.promote_types(z.dtype, positions.dtype))
        return self._encode(z.to(cd), self._context(positions.to(cd), cd)).to(z.dtype)

    def apply_string(self, z: Tensor, positions: Tensor) -> Tensor:
        """Apply the STRING matrix ``R(r) z = exp(Σ_k L_k r_k) z`` to ``z`` of shape ``(B, H, N, d)``."""
        self._check_z("z", z)
        positions = self._check_positions(positions, z.shape[0], z.shape[2])
        cd = compute_dtype(torch.promote_types(z.dtype, positions.dtype))
        return self._string(z.to(cd), self._context(positions.to(cd), cd)).to(z.dtype)

    @torch.no_grad()
    def rotation_matrix(self, positions: Tensor) -> Tensor:
        """Dense STRING matrices ``R(r)`` for ``positions`` ``(B, N, d_c)`` → ``(B, H, N, d, d)``."""
        check_real_float("positions", positions)
        if positions.dim() == 2:
            positions = positions.unsqueeze(0)
        b, n, _ = positions.shape
        d, h = self.head_dim, self.num_heads
        positions = self._check_positions(positions, b, n)
        cd = compute_dtype(positions.dtype)
        pos_rep = positions.to(cd).repeat_interleave(d, dim=1)  # (B, N*d, d_c): token n repeated per column j
        eye = torch.eye(d, dtype=cd, device=positions.device)
        z = eye.repeat(n, 1).expand(b, h, n * d, d)  # (B, H, N*d, d): row (n, j) = e_j
        cols = self._string(z, self._context(pos_rep, cd))  # (B, H, N*d, d): row (n, j) = R(r_n) e_j
        return cols.reshape(b, h, n, d, d).transpose(-1, -2)  # (B, H, N, d, d) with [..., :, j] = R e_j

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, coord_dim={self.coord_dim}, num_heads={self.num_heads}"
