"""Shared builders for the tests (float64)."""

from __future__ import annotations

import torch
from string_pe import CayleySTRING, CirculantSTRING, RoPEAxial, RoPEMixed

VARIANTS = ["rope-axial", "rope-mixed", "cayley", "cayley-sparse", "circulant", "circulant-block"]


def build(name: str, *, head_dim: int = 8, coord_dim: int = 2, num_heads: int = 2):
    g = torch.Generator().manual_seed(1)
    kw = dict(head_dim=head_dim, coord_dim=coord_dim, num_heads=num_heads)
    if name == "rope-axial":
        m = RoPEAxial(**kw)
    elif name == "rope-mixed":
        m = RoPEMixed(**kw, generator=g)
    elif name == "cayley":
        m = CayleySTRING(**kw, s_init_std=0.5, generator=g)
    elif name == "cayley-sparse":
        m = CayleySTRING(**kw, s_init_std=0.5, sparsity=0.3, generator=g)
    elif name == "circulant":
        m = CirculantSTRING(**kw, init="normal", init_std=0.3, generator=g)
    elif name == "circulant-block":
        m = CirculantSTRING(**kw, block_size=4, init="normal", init_std=0.3, generator=g)
    else:
        raise KeyError(name)
    return m.double()


def relative_logits(encode, matrix, q, k, pos):
    """(lhs, rhs) of ⟨enc(q_i, r_i), enc(k_j, r_j)⟩ = ⟨q_i, R(r_j − r_i) k_j⟩; q, k (B, H, N, d), pos (B, N, d_c)."""
    b, h, n, d = q.shape
    qe, ke = encode(q, pos), encode(k, pos)
    lhs = qe @ ke.transpose(-1, -2)  # (B, H, N, N)
    rel = pos[:, None, :, :] - pos[:, :, None, :]  # (B, i, j, d_c) = r_j - r_i
    R = matrix(rel.reshape(b, n * n, -1)).reshape(b, h, n, n, d, d)
    rhs = torch.einsum("bhid,bhijde,bhje->bhij", q, R, k)
    return lhs, rhs
