"""Structured CP algebra: Khatri–Rao designs, Hadamard Grams, MTTKRP, reconstruction (Ghadiri et al., ICML 2025, §2).

A rank-``R`` CP model of an order-``N`` tensor ``𝒳 ∈ R^{I_1×…×I_N}`` has factors ``A^{(k)} [I_k, R]``. With tensorly's
unfolding ``X_(n) = moveaxis(𝒳, n, 0).reshape(I_n, J)`` (``J = ∏_{k≠n} I_k``, C order) the model is

    X_(n) = A^{(n)} K_nᵀ,   K_n = ⊙_{k≠n} A^{(k)}  [J, R]   (Khatri–Rao product, tensorly's ``khatri_rao``).

The mode-``n`` ALS step is the structured regression ``min ‖K_n A^{(n)ᵀ} − X_(n)ᵀ‖²`` whose normal matrix is the
Hadamard product ``K_nᵀK_n = ∗_{k≠n} A^{(k)ᵀ}A^{(k)}`` [R, R] and whose right-hand side is the MTTKRP ``X_(n) K_n``
[I_n, R]. Both are cheap: that is the structure tensor completion loses and lifting recovers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorly as tl
from tensorly.tenalg import khatri_rao


def unfold(tensor: np.ndarray, mode: int) -> np.ndarray:
    """Mode-``mode`` unfolding ``[I_n, J]`` (tensorly's convention: the other modes in order, C-ordered)."""
    return tl.unfold(tensor, mode)


def fold(matrix: np.ndarray, mode: int, shape: Sequence[int]) -> np.ndarray:
    """Inverse of :func:`unfold`."""
    return tl.fold(matrix, mode, tuple(shape))


def khatri_rao_except(factors: Sequence[np.ndarray], mode: int) -> np.ndarray:
    """``K_n = ⊙_{k≠n} A^{(k)}`` [J, R], rows ordered like the columns of :func:`unfold` (tensorly ``khatri_rao``)."""
    return khatri_rao(list(factors), skip_matrix=mode)


def gram_hadamard(factors: Sequence[np.ndarray], mode: int) -> np.ndarray:
    """``K_nᵀK_n = ∗_{k≠n} A^{(k)ᵀ}A^{(k)}`` [R, R] without forming ``K_n`` (O(Σ_k I_k R²))."""
    r = factors[0].shape[1]
    g = np.ones((r, r))
    for k, a in enumerate(factors):
        if k != mode:
            g = g * (a.T @ a)
    return g


def mttkrp(tensor: np.ndarray, factors: Sequence[np.ndarray], mode: int) -> np.ndarray:
    """``X_(n) K_n`` [I_n, R] (tensorly's ``unfolding_dot_khatri_rao``)."""
    r = factors[0].shape[1]
    return tl.tenalg.unfolding_dot_khatri_rao(tensor, (np.ones(r), list(factors)), mode)


def cp_reconstruct(factors: Sequence[np.ndarray]) -> np.ndarray:
    """Full tensor ``Σ_r a^{(1)}_r ∘ … ∘ a^{(N)}_r`` [I_1, …, I_N] (tensorly ``cp_to_tensor``)."""
    r = factors[0].shape[1]
    return tl.cp_to_tensor((np.ones(r), list(factors)))


def cp_entries(factors: Sequence[np.ndarray], coords: np.ndarray) -> np.ndarray:
    """Model values at coordinates ``coords [m, N]``: ``Σ_r ∏_k A^{(k)}[i_k, r]`` [m] (O(m N R), no full tensor)."""
    z = np.ones((coords.shape[0], factors[0].shape[1]))
    for k, a in enumerate(factors):
        z *= a[coords[:, k]]
    return z.sum(axis=1)


def init_factors(shape: Sequence[int], rank: int, *, seed: int, scale: float = 0.1) -> list[np.ndarray]:
    """The official initialisation: ``A^{(k)} ~ N(0, scale²)`` [I_k, R], seeded (numpy ``default_rng``)."""
    rng = np.random.default_rng(seed)
    return [scale * rng.standard_normal((int(i), rank)) for i in shape]


def relative_error(tensor: np.ndarray, approx: np.ndarray, where: np.ndarray | None = None) -> float:
    """RRE ``‖𝒳 − 𝒳̂‖_F / ‖𝒳‖_F`` over the entries in ``where`` (all when ``None``); not squared (the official
    logs store the square)."""
    if where is None:
        d, t = tensor - approx, tensor
    else:
        d, t = (tensor - approx)[where], tensor[where]
    den = float(np.linalg.norm(t))
    return float(np.linalg.norm(d)) / den if den > 0 else float(np.linalg.norm(d))
