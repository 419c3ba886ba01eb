"""Kernelised (Performer-style) linear attention with STRING / RoPE encodings.

Linear attention replaces ``exp(qᵀk)`` by a feature-map product ``φ(q)ᵀφ(k)`` so that
``out_i = Σ_j φ(q_i)ᵀφ(k_j) v_j / Σ_j φ(q_i)ᵀφ(k_j)`` costs O(N) (Katharopoulos et al., 2020; Choromanski et al.,
2021). Here ``φ(x) = ReLU(W x) / √m`` with a fixed random ``W ∈ R^{m×d}`` (a ReLU Performer feature map).

Where the position encoding goes decides whether the relative-position property survives (the paper applies STRING
to efficient attention this way, as RoFormer does for RoPE):

* ``where="features"`` (default): encode the *features*, ``φ(q_i) ↦ R(r_i) φ(q_i)``, ``φ(k_j) ↦ R(r_j) φ(k_j)``
  (an encoding of head dim ``m``). The score ``⟨R(r_i)φ(q_i), R(r_j)φ(k_j)⟩ = ⟨φ(q_i), R(r_j − r_i)φ(k_j)⟩``
  depends on ``r_j − r_i`` only. The normaliser uses the unrotated features (positive), as RoFormer does.
* ``where="inputs"``: encode ``q, k`` first, then apply ``φ``: ``φ(R(r_i)q_i)ᵀφ(R(r_j)k_j)``. ``φ`` is not
  rotation-equivariant (ReLU after a fixed projection), so the score is no longer a function of ``r_j − r_i``.

Shapes: ``q, k`` ``(B, H, N, d)``, ``v`` ``(B, H, N, d_v)``, ``W`` ``(H, m, d)``; out ``(B, H, N, d_v)``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from string_pe.base import PositionEncoding
from string_pe.errors import PositionEncodingError

PLACEMENTS = ("features", "inputs")


def relu_features(x: Tensor, W: Tensor) -> Tensor:
    """``φ(x) = ReLU(W x) / √m``: ``(B, H, N, d) × (H, m, d) → (B, H, N, m)``."""
    return torch.relu(torch.einsum("bhnd,hmd->bhnm", x, W.to(x.dtype))) / W.shape[-2] ** 0.5


def _encode(encoding: PositionEncoding | None, a: Tensor, b: Tensor, positions: Tensor | None) -> tuple[Tensor, Tensor]:
    """``encoding(a, b, positions)``, or ``(a, b)`` unchanged without an encoding (no PE / absolute PE models)."""
    if encoding is None:
        return a, b
    if positions is None:
        raise PositionEncodingError("positions are required when an encoding is given")
    return encoding(a, b, positions)


def linear_scores(q: Tensor, k: Tensor, positions: Tensor, encoding: PositionEncoding | None, W: Tensor, *,
                  where: str = "features") -> Tensor:
    """Unnormalised linear-attention scores ``(B, H, N, N)`` with the encoding placed ``where`` (see module)."""
    if where not in PLACEMENTS:
        raise PositionEncodingError(f"where must be one of {list(PLACEMENTS)}, got {where!r}")
    if where == "features":
        fq, fk = relu_features(q, W), relu_features(k, W)  # (B, H, N, m)
        fq, fk = _encode(encoding, fq, fk, positions)
    else:
        q, k = _encode(encoding, q, k, positions)
        fq, fk = relu_features(q, W), relu_features(k, W)
    return fq @ fk.transpose(-1, -2)


def linear_attention(q: Tensor, k: Tensor, v: Tensor, positions: Tensor | None, encoding: PositionEncoding | None,
                     W: Tensor, *,
                     where: str = "features", eps: float = 1e-6) -> Tensor:
    """Linear attention in O(N): ``out_i = Σ_j s_ij v_j / Σ_j φ(q_i)ᵀφ(k_j)`` with ``s_ij`` the (encoded) score.

    Computed as ``fq' (fk'ᵀ V)`` — never forming the ``N × N`` matrix — and equal to
    ``linear_scores(...) @ v / normaliser`` (tested).
    """
    if where not in PLACEMENTS:
        raise PositionEncodingError(f"where must be one of {list(PLACEMENTS)}, got {where!r}")
    if W.dim() != 3 or W.shape[0] != q.shape[1] or W.shape[-1] != q.shape[-1]:
        raise PositionEncodingError(f"W must have shape (heads={q.shape[1]}, m, head_dim={q.shape[-1]}), "
                                    f"got {tuple(W.shape)}")
    if where == "features":
        fq, fk = relu_features(q, W), relu_features(k, W)  # (B, H, N, m)
        eq, ek = _encode(encoding, fq, fk, positions)
    else:
        eq, ek = _encode(encoding, q, k, positions)
        eq, ek = relu_features(eq, W), relu_features(ek, W)
        fq, fk = eq, ek
    kv = ek.transpose(-1, -2) @ v  # (B, H, m, d_v)
    norm = fq @ fk.sum(dim=2, keepdim=True).transpose(-1, -2)  # (B, H, N, 1)
    return (eq @ kv) / (norm + eps)
