"""Drop-in attention with STRING / RoPE position encodings.

``string_sdpa(q, k, v, positions, encoding)`` encodes queries and keys and calls
:func:`torch.nn.functional.scaled_dot_product_attention` (values untouched):

    out_i = Σ_j softmax_j( ⟨R(r_i) q_i, R(r_j) k_j⟩ / √d ) v_j.

:class:`Attention` is a multi-head self-attention layer ``(B, N, D) → (B, N, D)`` with a pluggable encoding, and
:func:`make_encoding` builds an encoding from its name.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from string_pe.base import PositionEncoding, check_int, check_real_float
from string_pe.cayley import CayleySTRING
from string_pe.circulant import CirculantSTRING
from string_pe.errors import PositionEncodingError
from string_pe.rope import RoPEAxial, RoPEMixed

ENCODINGS: dict[str, type[PositionEncoding]] = {
    "rope-axial": RoPEAxial,
    "rope-mixed": RoPEMixed,
    "cayley": CayleySTRING,
    "circulant": CirculantSTRING,
}
"""Rotary encodings by name (``"none"`` and ``"ape"`` are handled by the models, not by attention)."""
ATTENTIONS = ("softmax", "linear")
"""Attention kinds of :class:`Attention`: softmax (``scaled_dot_product_attention``) or Performer-style linear."""


def make_encoding(kind: str, *, head_dim: int, coord_dim: int, num_heads: int, **kwargs: Any) -> PositionEncoding:
    """Build ``"rope-axial" | "rope-mixed" | "cayley" | "circulant"`` with the common keyword arguments."""
    if kind not in ENCODINGS:
        raise PositionEncodingError(f"encoding must be one of {sorted(ENCODINGS)}, got {kind!r}")
    return ENCODINGS[kind](head_dim=head_dim, coord_dim=coord_dim, num_heads=num_heads, **kwargs)


def string_sdpa(q: Tensor, k: Tensor, v: Tensor, positions: Tensor | None, encoding: PositionEncoding | None, *,
                num_unrotated: int = 0, attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                is_causal: bool = False) -> Tensor:
    """``scaled_dot_product_attention`` with ``q, k`` encoded at ``positions`` (``(B, H, N, d)`` in and out)."""
    if encoding is not None:
        if positions is None:
            raise PositionEncodingError("positions are required when an encoding is given")
        q, k = encoding(q, k, positions, num_unrotated=num_unrotated)
    if v.shape[:-1] != q.shape[:-1]:
        raise PositionEncodingError(f"v must have shape (B, H, N, d_v) matching q {tuple(q.shape)}, got {tuple(v.shape)}")
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal)


class Attention(nn.Module):
    """Multi-head self-attention with an optional rotary encoding.

    Args (keyword-only):
        dim: model width ``D`` (divisible by ``num_heads``).
        num_heads: heads ``H``; head dim ``d = D / H``.
        encoding: ``None`` or a name of :data:`ENCODINGS`.
        coord_dim: coordinate dimension ``d_c`` of the positions.
        qkv_bias: bias in the q/k/v projection.
        encoding_kwargs: extra keyword arguments of the encoding.
        attn: ``"softmax"`` (default) or ``"linear"``: Performer-style ReLU random-feature attention in O(N)
            (:func:`string_pe.linear.linear_attention`, ``m = head_dim`` fixed random features per head, drawn
            once at construction), with the encoding applied to the features ``φ(q), φ(k)`` (the placement that
            keeps the relative-position property).

    ``forward(x (B, N, D), positions (B, N − num_unrotated, d_c) | None, num_unrotated=0) → (B, N, D)``.
    """

    def __init__(self, *, dim: int, num_heads: int, encoding: str | None = "cayley", coord_dim: int = 2,
                 qkv_bias: bool = True, encoding_kwargs: dict[str, Any] | None = None,
                 attn: str = "softmax") -> None:
        super().__init__()
        if attn not in ATTENTIONS:
            raise PositionEncodingError(f"attn must be one of {list(ATTENTIONS)}, got {attn!r}")
        check_int("dim", dim)
        check_int("num_heads", num_heads)
        if dim % num_heads:
            raise PositionEncodingError(f"dim={dim} must be divisible by num_heads={num_heads}")
        self.dim, self.num_heads, self.head_dim = dim, num_heads, dim // num_heads
        self.q = nn.Linear(dim, dim, bias=qkv_bias)
        self.k = nn.Linear(dim, dim, bias=qkv_bias)
        self.v = nn.Linear(dim, dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        self.attn = attn
        if attn == "linear":  # fixed random projection of the ReLU feature map φ(x) = ReLU(W x)/√m, (H, m, d)
            self.register_buffer("features_W", torch.randn(num_heads, self.head_dim, self.head_dim))
        self.encoding: PositionEncoding | None = None
        if encoding is not None:
            self.encoding = make_encoding(encoding, head_dim=self.head_dim, coord_dim=coord_dim,
                                          num_heads=num_heads, **(encoding_kwargs or {}))

    def _heads(self, t: Tensor) -> Tensor:
        return t.unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)  # (B, N, D) -> (B, H, N, d)

    def logits(self, x: Tensor, positions: Tensor | None = None, *, num_unrotated: int = 0) -> Tensor:
        """Pre-softmax attention logits ``(B, H, N, N)`` (scaled by 1/√d)."""
        q, k = self._heads(self.q(x)), self._heads(self.k(x))
        if self.encoding is not None:
            q, k = self.encoding(q, k, positions, num_unrotated=num_unrotated)
        return q @ k.transpose(-1, -2) / self.head_dim**0.5

    def forward(self, x: Tensor, positions: Tensor | None = None, *, num_unrotated: int = 0) -> Tensor:
        check_real_float("x", x)
        if x.dim() != 3 or x.shape[-1] != self.dim:
            raise PositionEncodingError(f"x must have shape (batch, tokens, dim={self.dim}), got {tuple(x.shape)}")
        q, k, v = self._heads(self.q(x)), self._heads(self.k(x)), self._heads(self.v(x))
        if self.attn == "linear":
            from string_pe.linear import linear_attention

            if num_unrotated:
                raise PositionEncodingError("attn='linear' does not support unrotated (CLS) tokens; pool by mean")
            out = linear_attention(q, k, v, positions, self.encoding, self.features_W)  # (B, H, N, d)
            return self.proj(out.transpose(1, 2).flatten(2))  # (B, H, N, d) -> (B, N, D)
        out = string_sdpa(q, k, v, positions, self.encoding, num_unrotated=num_unrotated)  # (B, H, N, d)
        return self.proj(out.transpose(1, 2).flatten(2))  # (B, H, N, d) -> (B, N, D)

    @torch.no_grad()
    def fold_(self) -> Attention:
        """Fold Cayley's ``P`` (or Circulant's ``Qᵀ``) into the q/k projections; the layer becomes RoPE-Mixed.

        The outputs are unchanged (exactly, up to rounding); afterwards each forward costs the same as RoPE.
        """
        enc = self.encoding
        if self.attn == "linear":
            raise PositionEncodingError("fold_ needs softmax attention: with attn='linear' the encoding acts on the "
                                        "features φ(q), φ(k), which W_q, W_k cannot absorb")
        if isinstance(enc, CayleySTRING):
            for lin in (self.q, self.k):
                w, b = enc.fold_projection(lin.weight, lin.bias)
                lin.weight.copy_(w)
                if b is not None:
                    lin.bias.copy_(b)
            self.encoding = enc.as_rope_mixed()
        elif isinstance(enc, CirculantSTRING):
            Q, freqs = enc.as_rope()
            for lin in (self.q, self.k):
                w = lin.weight.unflatten(0, (self.num_heads, self.head_dim))  # (H*d, D) -> (H, d, D)
                lin.weight.copy_(torch.einsum("ji,hjD->hiD", Q.to(w.dtype), w).flatten(0, 1))
                if lin.bias is not None:
                    b = lin.bias.unflatten(0, (self.num_heads, self.head_dim))  # (H*d,) -> (H, d)
                    lin.bias.copy_(torch.einsum("ji,hj->hi", Q.to(b.dtype), b).flatten())
            self.encoding = RoPEMixed(head_dim=self.head_dim, coord_dim=enc.coord_dim, num_heads=self.num_heads,
                                      freqs=freqs.to(enc.coeffs.dtype)).to(enc.coeffs.device)
        else:
            raise PositionEncodingError(
                f"fold_ needs a Cayley or Circulant STRING encoding, got {type(enc).__name__ if enc else None}"
            )
        return self
