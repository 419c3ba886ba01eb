"""Cayley-STRING (paper Eq. 10): ``R(r) = RoPE(r) P``, ``P = (I − S)(I + S)^{−1}``, S learnable skew-symmetric.

By Thm 3.4 every STRING is ``P RoPE(r) Pᵀ`` for an orthogonal ``P``; inside a dot product the left factor cancels,
so the paper applies ``z ↦ RoPE(r) P z`` to queries and keys with one learnable ``P ∈ SO(d)`` per head,
parameterised by the Cayley transform of a skew-symmetric ``S`` (``d(d−1)/2`` parameters per head, optionally a
fixed random sparse subset). ``I + S`` is always invertible for skew ``S`` (its eigenvalues are ``1 + iλ``).

``P`` is obtained with one linear solve per head per forward, ``P = solve(I + S, I − S)`` (``(I + S)^{-1}`` and
``I − S`` commute), i.e. O(d³) time and O(d²) memory per head (Table 1), then applied as a matmul. The RoPE part
uses learnable per-head, per-axis frequencies (RoPE-Mixed, initialised as in :class:`~string_pe.rope.RoPEMixed`).

The equivalent STRING matrix (what :meth:`rotation_matrix` returns) is ``Pᵀ RoPE(r) P = exp(Σ_k Pᵀ L_k P r_k)``,
so that ``⟨RoPE(r_i) P q, RoPE(r_j) P k⟩ = ⟨q, Pᵀ RoPE(r_j − r_i) P k⟩``.

Inference: ``P`` folds into the query/key projections (``W_q' = P W_q``, ``W_k' = P W_k``), after which the layer
is plain RoPE-Mixed (:meth:`CayleySTRING.fold_projection`, :meth:`CayleySTRING.as_rope_mixed`).

Shapes: ``S, P`` ``(H, d, d)``; ``z`` ``(B, H, N, d)``.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from string_pe.base import PositionEncoding, check_real_float
from string_pe.errors import PositionEncodingError
from string_pe.rope import RoPEMixed, mixed_init_frequencies, rope_angles, rope_generators, rotate_pairs


def cayley_transform(S: Tensor) -> Tensor:
    """``P = (I − S)(I + S)^{−1}`` for skew ``S`` ``(..., d, d)``, computed as ``solve(I + S, I − S)``."""
    eye = torch.eye(S.shape[-1], dtype=S.dtype, device=S.device)
    return torch.linalg.solve(eye + S, eye - S)


class CayleySTRING(PositionEncoding):
    """Cayley-STRING position encoding (paper Eq. 10).

    Args (keyword-only):
        head_dim, coord_dim, num_heads: as for every encoding (``head_dim`` even).
        base: magnitude base of the RoPE-Mixed frequency init (10).
        s_init_std: std of the normal init of the free entries of S (0 ⇒ starts exactly as RoPE-Mixed).
        sparsity: fraction in (0, 1] of the ``d(d−1)/2`` upper-triangular entries of S that are learnable
            (a fixed random mask; 1 = dense S, the default).
        generator: optional ``torch.Generator`` for the inits and the sparsity mask.
    """

    def __init__(self, *, head_dim: int, coord_dim: int = 2, num_heads: int = 1, base: float = 10.0,
                 s_init_std: float = 0.0, sparsity: float = 1.0, generator: torch.Generator | None = None) -> None:
        super().__init__(head_dim=head_dim, coord_dim=coord_dim, num_heads=num_heads)
        if not (isinstance(base, (int, float)) and base > 1):
            raise PositionEncodingError(f"base must be a number > 1, got {base!r}")
        if not (isinstance(sparsity, (int, float)) and 0 < sparsity <= 1):
            raise PositionEncodingError(f"sparsity must be in (0, 1], got {sparsity!r}")
        if not (isinstance(s_init_std, (int, float)) and s_init_std >= 0):
            raise PositionEncodingError(f"s_init_std must be >= 0, got {s_init_std!r}")
        d = head_dim
        freqs = mixed_init_frequencies(head_dim=d, coord_dim=coord_dim, num_heads=num_heads, base=float(base),
                                       generator=generator)
        self.freqs = nn.Parameter(freqs.to(torch.get_default_dtype()))
        iu = torch.triu_indices(d, d, offset=1)  # (2, d(d-1)/2)
        self.register_buffer("_iu", iu, persistent=False)
        n_free = iu.shape[1]
        mask = torch.ones(n_free)
        if sparsity < 1:
            keep = max(1, round(sparsity * n_free))
            perm = torch.randperm(n_free, generator=generator)
            mask = torch.zeros(n_free)
            mask[perm[:keep]] = 1.0
        self.register_buffer("s_mask", mask.to(torch.get_default_dtype()))
        s0 = torch.randn(num_heads, n_free, generator=generator, dtype=torch.float64) * float(s_init_std)
        self.s_params = nn.Parameter(s0.to(torch.get_default_dtype()) * self.s_mask)

    # ------------------------------------------------------------------ S and P
    def skew(self, dtype: torch.dtype | None = None) -> Tensor:
        """The skew-symmetric ``S`` ``(H, d, d)`` (masked entries are zero)."""
        s = self.s_params * self.s_mask
        if dtype is not None:
            s = s.to(dtype)
        d = self.head_dim
        upper = s.new_zeros(self.num_heads, d, d)
        upper[:, self._iu[0], self._iu[1]] = s
        return upper - upper.transpose(-1, -2)

    def set_skew(self, S: Tensor) -> None:
        """Set the learnable entries from a skew-symmetric ``S`` ``(H, d, d)`` (tests, loading)."""
        check_real_float("S", S)
        want = (self.num_heads, self.head_dim, self.head_dim)
        if tuple(S.shape) != want:
            raise PositionEncodingError(f"S must have shape {want} (heads, head_dim, head_dim), got {tuple(S.shape)}")
        if not torch.allclose(S, -S.transpose(-1, -2), atol=1e-12):
            raise PositionEncodingError("S must be skew-symmetric (S^T = -S)")
        with torch.no_grad():
            self.s_params.copy_(S[:, self._iu[0], self._iu[1]].to(self.s_params.dtype) * self.s_mask)

    def orthogonal(self, dtype: torch.dtype | None = None) -> Tensor:
        """``P = (I − S)(I + S)^{-1}`` ``(H, d, d)``, one linear solve per head."""
        return cayley_transform(self.skew(dtype))

    # ------------------------------------------------------------------ PositionEncoding hooks
    def _context(self, positions: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        return rope_angles(positions, self.freqs.to(dtype)), self.orthogonal(dtype)

    def _encode(self, z: Tensor, ctx: tuple[Tensor, Tensor]) -> Tensor:
        angles, P = ctx
        pz = z @ P.transpose(-1, -2)  # (..., H, N, d) @ (H, d, d): P z per head, batched BLAS
        return rotate_pairs(pz, angles)

    def _string(self, z: Tensor, ctx: tuple[Tensor, Tensor]) -> Tensor:
        _, P = ctx
        return self._encode(z, ctx) @ P  # Pᵀ RoPE(r) P z per head

    def generators(self) -> Tensor:
        """``Pᵀ L_k P`` ``(H, d_c, d, d)`` with ``L_k`` the RoPE generators (Thm 3.4)."""
        P = self.orthogonal()
        L = rope_generators(self.freqs)  # (H, d_c, d, d)
        return torch.einsum("hji,hcjk,hkl->hcil", P, L, P)

    # ------------------------------------------------------------------ inference folding
    @torch.no_grad()
    def fold_projection(self, weight: Tensor, bias: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """Fold ``P`` into a q or k projection: ``W`` ``(H·d, D_in)`` → ``blockdiag(P_h) W`` (and the bias).

        After folding, ``RoPE-Mixed(W' x) == Cayley-STRING(W x)`` exactly (see :meth:`as_rope_mixed`).
        """
        check_real_float("weight", weight)
        hd = self.num_heads * self.head_dim
        if weight.dim() != 2 or weight.shape[0] != hd:
            raise PositionEncodingError(f"weight must have shape (num_heads*head_dim={hd}, in_features), got {tuple(weight.shape)}")
        P = self.orthogonal(torch.promote_types(weight.dtype, torch.float32))
        w = weight.unflatten(0, (self.num_heads, self.head_dim))  # (H*d, D) -> (H, d, D)
        w2 = torch.einsum("hij,hjD->hiD", P, w.to(P.dtype)).flatten(0, 1).to(weight.dtype)  # (H*d, D)
        b2 = None
        if bias is not None:
            b = bias.unflatten(0, (self.num_heads, self.head_dim))  # (H*d,) -> (H, d)
            b2 = torch.einsum("hij,hj->hi", P, b.to(P.dtype)).flatten().to(bias.dtype)
        return w2, b2

    def as_rope_mixed(self) -> RoPEMixed:
        """A :class:`RoPEMixed` with this module's frequencies (use it with folded projections)."""
        m = RoPEMixed(head_dim=self.head_dim, coord_dim=self.coord_dim, num_heads=self.num_heads,
                      freqs=self.freqs.detach())
        return m.to(self.freqs.device)
