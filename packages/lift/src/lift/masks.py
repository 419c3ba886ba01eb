"""Principal weights and the baseline masks of LIFT (Liu et al., ICML 2025, Sec. 3).

For a weight matrix ``W`` of shape ``(m, n)`` (``nn.Linear.weight``: out_features x in_features) LIFT

1. computes the rank-``r_f`` approximation ``W' = U[:, :r_f] diag(S[:r_f]) V[:, :r_f]^T`` (truncated SVD; a
   randomized SVD (Halko et al.) for large matrices), and
2. keeps the **principal weights**: the ``k`` entries with the largest ``|W'_ij|``, where
   ``k = min((m + n) * r_b, m * n)`` equals the number of LoRA parameters at rank ``r_b`` (or ``k = round(density * m * n)``).

The mask is a ``torch.bool`` tensor of shape ``(m, n)`` with exactly ``k`` ones.

The other mask types of the official code that serve as baselines are selected by :class:`MaskType` (an enum, not
a substring test): raw magnitude ``|W|``, uniformly random, and the stable-rank filter (``r_f = floor(srank(W))``
with ``srank(W) = ||W||_F^2 / ||W||_2^2``, and the budget tied to it as in the official code).

:class:`Selection` chooses the largest (the paper's definition, default) or the smallest entries. The smallest is
what the released training scripts of zihanghliu/LIFT actually select (their ``mask_type=lift_sparse`` does not
contain the substring ``largest``); it is offered only to measure that behaviour.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from enum import StrEnum
from typing import Any

import torch

from lift.checks import check_budget
from lift.checks import check_int as _check_int
from lift.errors import LiftConfigError, MaskError

__all__ = [
    "MaskType",
    "Selection",
    "SVDMethod",
    "budget_size",
    "check_mask",
    "compute_mask",
    "low_rank_approximation",
    "magnitude_mask",
    "principal_mask",
    "random_mask",
    "score_mask",
    "shira_mask_fn",
    "stable_rank",
    "stable_rank_mask",
    "topk_mask",
]

#: Matrices with ``min(m, n)`` above this use the randomized SVD under ``svd="auto"``.
AUTO_RANDOMIZED_MIN_DIM = 1024


class MaskType(StrEnum):
    """Which entries of a weight matrix are trainable."""

    PRINCIPAL = "principal"
    """LIFT: top-k of |rank-r_f approximation of W| (the paper's principal weights)."""
    MAGNITUDE = "magnitude"
    """Top-k of |W| (magnitude-based sparse fine-tuning; equals PRINCIPAL with r_f >= rank(W))."""
    RANDOM = "random"
    """k uniformly random entries."""
    STABLE_RANK = "stable_rank"
    """Official ``stable_rank_filter``: r_f = floor(srank(W)) and budget k = (m+n)*floor(srank(W))."""
    GRADIENT = "gradient"
    """Official ``grad_mag``: top-k of ``|G|``, the gradient of the step at which the mask is refreshed.
    Needs the optimizer (scores from training); random before the first gradient, as in the official code."""
    MOMENTUM = "momentum"
    """Official ``momentum``: top-k of ``|EMA_beta1(G)|``, a dense gradient EMA kept by :class:`SparseAdamW`
    (m n extra floats per matrix). Random before the first gradient."""
    MOVEMENT = "movement"
    """Official ``movement_v2`` (movement pruning, Sanh et al. 2020): top-k of the accumulated score
    ``S = -sum_t G_t * W_t`` (signed, largest), a dense buffer kept by :class:`SparseAdamW`. Random at first."""

    @property
    def needs_scores(self) -> bool:
        """True for the training-statistics masks (gradient, momentum, movement)."""
        return self in (MaskType.GRADIENT, MaskType.MOMENTUM, MaskType.MOVEMENT)

    @classmethod
    def parse(cls, value: MaskType | str) -> MaskType:
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value))
        except ValueError:
            allowed = ", ".join(m.value for m in cls)
            raise LiftConfigError(f"mask_type must be one of {allowed}; got {value!r}") from None


class Selection(StrEnum):
    """Keep the entries with the largest (paper) or the smallest (released official scripts) scores."""

    LARGEST = "largest"
    SMALLEST = "smallest"

    @classmethod
    def parse(cls, value: Selection | str) -> Selection:
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value))
        except ValueError:
            raise LiftConfigError(f"selection must be 'largest' or 'smallest'; got {value!r}") from None


class SVDMethod(StrEnum):
    """How the rank-r_f approximation is computed."""

    AUTO = "auto"
    """Exact for min(m, n) <= 1024, randomized above."""
    EXACT = "exact"
    """``torch.linalg.svd`` (full_matrices=False)."""
    RANDOMIZED = "randomized"
    """``torch.svd_lowrank`` with q = min(2 r_f, min(m, n)) and ``niter`` power iterations, seeded."""

    @classmethod
    def parse(cls, value: SVDMethod | str) -> SVDMethod:
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value))
        except ValueError:
            raise LiftConfigError(f"svd must be 'auto', 'exact' or 'randomized'; got {value!r}") from None


# ----------------------------------------------------------------------------------------------------------------
# validation helpers


def _check_weight(weight: torch.Tensor, name: str = "weight") -> None:
    if not isinstance(weight, torch.Tensor):
        raise MaskError(f"{name} must be a torch.Tensor, got {type(weight).__name__}")
    if weight.ndim != 2:
        raise MaskError(
            f"{name} must be a 2-D weight matrix (m, n); got shape {tuple(weight.shape)}. Only nn.Linear weights "
            "(or other 2-D parameters) can be masked"
        )
    if weight.numel() == 0:
        raise MaskError(f"{name} is empty (shape {tuple(weight.shape)})")
    if weight.is_complex() or not weight.is_floating_point():
        raise MaskError(f"{name} must be a real floating-point tensor, got dtype {weight.dtype}")
    if not bool(torch.isfinite(weight).all()):
        raise MaskError(f"{name} has non-finite entries (NaN or inf); a mask cannot be computed from it")


def budget_size(shape: tuple[int, int] | torch.Size, *, budget_rank: int | None = None,
                density: float | None = None) -> int:
    """Number of trainable entries k of an ``(m, n)`` matrix.

    ``k = min((m + n) * budget_rank, m * n)`` (LoRA's parameter count at rank ``budget_rank``), or
    ``k = max(1, round(density * m * n))``. Exactly one of the two must be given.
    """
    m, n = int(shape[0]), int(shape[1])
    check_budget(budget_rank, density)
    if budget_rank is not None:
        return min((m + n) * budget_rank, m * n)
    return max(1, min(m * n, int(round(float(density) * m * n))))


def check_mask(mask: Any, weight: torch.Tensor, *, k: int | None = None, name: str = "mask") -> torch.Tensor:
    """Validate a (custom) mask for ``weight``; return it as a ``torch.bool`` tensor on ``weight.device``.

    Accepts bool masks and 0/1 numeric masks (peft SHiRA's convention). Raises :class:`MaskError` on a wrong shape,
    values other than 0/1, or (when ``k`` is given) a cardinality other than ``k``.
    """
    if not isinstance(mask, torch.Tensor):
        raise MaskError(f"{name} must be a torch.Tensor, got {type(mask).__name__}")
    if tuple(mask.shape) != tuple(weight.shape):
        raise MaskError(f"{name} has shape {tuple(mask.shape)} but the weight has shape {tuple(weight.shape)}")
    if mask.dtype != torch.bool:
        if not bool(((mask == 0) | (mask == 1)).all()):
            raise MaskError(f"{name} must be boolean or contain only 0 and 1 (dtype {mask.dtype})")
        mask = mask != 0
    mask = mask.to(device=weight.device)
    if k is not None:
        got = int(mask.sum())
        if got != k:
            raise MaskError(f"{name} selects {got} entries but the budget is k = {k}")
    return mask


# ----------------------------------------------------------------------------------------------------------------
# the mathematics


def _work_dtype(weight: torch.Tensor) -> torch.dtype:
    # bf16/fp16 weights are cast to float32 before the SVD (pitfall of the official code); float64 stays float64
    return torch.float64 if weight.dtype == torch.float64 else torch.float32


def _svd_device(weight: torch.Tensor) -> torch.device:
    # torch.linalg.svd is not implemented on MPS; fall back to the CPU there (and only there)
    return torch.device("cpu") if weight.device.type == "mps" else weight.device


def stable_rank(weight: torch.Tensor) -> float:
    """``srank(W) = ||W||_F^2 / ||W||_2^2`` (between 1 and rank(W))."""
    _check_weight(weight)
    w = weight.detach().to(device=_svd_device(weight), dtype=_work_dtype(weight))
    s = torch.linalg.svdvals(w)
    if float(s[0]) == 0.0:
        raise MaskError("weight is all zeros; its stable rank is undefined")
    return float((s**2).sum() / s[0] ** 2)


def _low_rank_factors(weight: torch.Tensor, rank: int, *, svd: SVDMethod | str = SVDMethod.AUTO, niter: int = 2,
                      seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``(A, B)`` with ``A = U_r diag(S_r)`` (m, r) and ``B = V_r^T`` (r, n), so ``W' = A @ B``."""
    _check_weight(weight)
    m, n = weight.shape
    _check_int(rank, "filter_rank", low=1, high=min(m, n))
    _check_int(niter, "niter", low=0)
    method = SVDMethod.parse(svd)
    if method is SVDMethod.AUTO:
        method = SVDMethod.RANDOMIZED if min(m, n) > AUTO_RANDOMIZED_MIN_DIM else SVDMethod.EXACT
    dev = _svd_device(weight)
    w = weight.detach().to(device=dev, dtype=_work_dtype(weight))
    if method is SVDMethod.EXACT:
        u, s, vh = torch.linalg.svd(w, full_matrices=False)  # u (m, p), s (p,), vh (p, n), p = min(m, n)
        return u[:, :rank] * s[:rank], vh[:rank]  # (m, r) * (r,) -> (m, r); (r, n)
    q = min(2 * rank, min(m, n))
    devices = [dev] if dev.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        u, s, v = torch.svd_lowrank(w, q=q, niter=niter)  # u (m, q), s (q,), v (n, q)
    return u[:, :rank] * s[:rank], v[:, :rank].T  # (m, r); (r, n)


def low_rank_approximation(weight: torch.Tensor, rank: int, *, svd: SVDMethod | str = SVDMethod.AUTO,
                           niter: int = 2, seed: int = 0) -> torch.Tensor:
    """The rank-``rank`` approximation ``W' = U_r diag(S_r) V_r^T`` of ``weight`` (shape (m, n)).

    Computed in float32 (float64 for float64 input) on the weight's device. ``svd="randomized"`` uses
    ``torch.svd_lowrank(W, q=min(2 r, min(m, n)), niter)`` under a forked RNG seeded with ``seed`` (so it is
    deterministic and leaves the global RNG untouched).
    """
    a, b = _low_rank_factors(weight, rank, svd=svd, niter=niter, seed=seed)
    return (a @ b).to(weight.device)  # (m, r) @ (r, n) -> (m, n)


#: Matrices with more entries than this get their principal mask in row blocks (:func:`principal_mask`).
LOWMEM_MIN_ENTRIES = 2**20
_BLOCK_ENTRIES = 2**18


def _blocked_topk_of_product(a: torch.Tensor, b: torch.Tensor, k: int, *, largest: bool,
                             block_rows: int) -> torch.Tensor:
    """Flat row-major indices (k,) of the top-k ``|a @ b|`` (m, n), computed ``block_rows`` rows at a time so that
    the dense (m, n) product is never materialised: each block's top-k candidates are merged with the running k."""
    m, n = a.shape[0], b.shape[1]
    best_v: torch.Tensor | None = None  # (<=k,) scores of the running candidates
    best_i: torch.Tensor | None = None  # (<=k,) their flat indices
    for r0 in range(0, m, block_rows):
        blk = (a[r0: r0 + block_rows] @ b).abs_().reshape(-1)  # (rows*n,)
        kk = min(k, blk.numel())
        v, i = torch.topk(blk, kk, largest=largest, sorted=False)
        i = i + r0 * n
        if best_v is None:
            best_v, best_i = v, i
        else:
            v, i = torch.cat([best_v, v]), torch.cat([best_i, i])
            keep = torch.topk(v, min(k, v.numel()), largest=largest, sorted=False).indices
            best_v, best_i = v[keep], i[keep]
    assert best_i is not None
    return best_i


def topk_mask(scores: torch.Tensor, k: int, *, selection: Selection | str = Selection.LARGEST) -> torch.Tensor:
    """Boolean mask (shape of ``scores``) of the ``k`` largest (or smallest) scores; exactly ``k`` ones."""
    sel = Selection.parse(selection)
    flat = scores.reshape(-1)  # (m*n,) row-major
    _check_int(k, "k", low=1, high=flat.numel())
    idx = torch.topk(flat, k, largest=sel is Selection.LARGEST, sorted=False).indices
    mask = torch.zeros(flat.numel(), dtype=torch.bool, device=scores.device)
    mask[idx] = True
    return mask.view(scores.shape)  # (m*n,) -> (m, n)


def principal_mask(weight: torch.Tensor, *, filter_rank: int, budget_rank: int | None = None,
                   density: float | None = None, selection: Selection | str = Selection.LARGEST,
                   svd: SVDMethod | str = SVDMethod.AUTO, niter: int = 2, seed: int = 0) -> torch.Tensor:
    """LIFT's principal weights of ``weight`` (m, n): top-k of ``|W'|``, ``W'`` = rank-``filter_rank`` approximation.

    Args:
        weight: the (m, n) weight matrix (``nn.Linear.weight``); finite, real.
        filter_rank: ``r_f`` in ``[1, min(m, n)]``; ``r_f >= rank(W)`` reduces LIFT to magnitude pruning.
        budget_rank: ``r_b >= 1``; ``k = min((m + n) r_b, m n)`` (LoRA's parameter count).
        density: alternatively ``k = round(density m n)``, density in (0, 1].
        selection: ``"largest"`` (paper) or ``"smallest"`` (what the released official scripts select).
        svd: ``"exact"``, ``"randomized"`` or ``"auto"`` (randomized when min(m, n) > 1024).
        niter, seed: power iterations and seed of the randomized SVD.

    Matrices with more than :data:`LOWMEM_MIN_ENTRIES` entries are scored in row blocks from the SVD factors
    (``W' = A B`` never held whole): the same top-k, without an (m, n) temporary.

    Returns:
        ``torch.BoolTensor`` of shape (m, n) on ``weight.device`` with exactly k ones.
    """
    _check_weight(weight)
    k = budget_size(weight.shape, budget_rank=budget_rank, density=density)
    if weight.numel() > LOWMEM_MIN_ENTRIES:  # large matrix: never hold the dense (m, n) W' (peak memory)
        a, b = _low_rank_factors(weight, filter_rank, svd=svd, niter=niter, seed=seed)
        _check_int(k, "k", low=1, high=weight.numel())
        idx = _blocked_topk_of_product(a, b, k, largest=Selection.parse(selection) is Selection.LARGEST,
                                       block_rows=max(1, _BLOCK_ENTRIES // weight.shape[1]))
        mask = torch.zeros(weight.numel(), dtype=torch.bool, device=a.device)
        mask[idx] = True
        return mask.view(weight.shape).to(weight.device)  # (m*n,) -> (m, n)
    approx = low_rank_approximation(weight, filter_rank, svd=svd, niter=niter, seed=seed)
    return topk_mask(approx.abs(), k, selection=selection)


def magnitude_mask(weight: torch.Tensor, *, budget_rank: int | None = None, density: float | None = None,
                   selection: Selection | str = Selection.LARGEST) -> torch.Tensor:
    """Top-k of ``|W|`` (no rank reduction): the magnitude-sparse baseline."""
    _check_weight(weight)
    k = budget_size(weight.shape, budget_rank=budget_rank, density=density)
    return topk_mask(weight.detach().abs(), k, selection=selection)


def random_mask(weight: torch.Tensor, *, budget_rank: int | None = None, density: float | None = None,
                seed: int = 0) -> torch.Tensor:
    """``k`` entries drawn uniformly without replacement (a seeded CPU generator; global RNG untouched)."""
    _check_weight(weight)
    k = budget_size(weight.shape, budget_rank=budget_rank, density=density)
    gen = torch.Generator().manual_seed(int(seed))
    idx = torch.randperm(weight.numel(), generator=gen)[:k].to(weight.device)
    mask = torch.zeros(weight.numel(), dtype=torch.bool, device=weight.device)
    mask[idx] = True
    return mask.view(weight.shape)  # (m*n,) -> (m, n)


def stable_rank_mask(weight: torch.Tensor, *, selection: Selection | str = Selection.LARGEST,
                     svd: SVDMethod | str = SVDMethod.AUTO, niter: int = 2, seed: int = 0) -> torch.Tensor:
    """Official ``stable_rank_filter``: ``r = max(1, floor(srank(W)))``, rank-r filter, budget ``min((m+n) r, m n)``."""
    r = max(1, int(math.floor(stable_rank(weight))))
    return principal_mask(weight, filter_rank=min(r, min(weight.shape)), budget_rank=r, selection=selection,
                          svd=svd, niter=niter, seed=seed)


def score_mask(weight: torch.Tensor, scores: torch.Tensor | None, *, budget_rank: int | None = None,
               density: float | None = None, selection: Selection | str = Selection.LARGEST,
               seed: int = 0) -> torch.Tensor:
    """Top-k of ``scores`` (shape of ``weight``), or a random mask when there are no scores yet (``None``), as the
    official gradient/momentum/movement masks do before the first gradient."""
    _check_weight(weight)
    k = budget_size(weight.shape, budget_rank=budget_rank, density=density)
    if scores is None:
        return random_mask(weight, budget_rank=budget_rank, density=density, seed=seed)
    if tuple(scores.shape) != tuple(weight.shape):
        raise MaskError(f"scores have shape {tuple(scores.shape)} but the weight has shape {tuple(weight.shape)}")
    if not bool(torch.isfinite(scores).all()):
        raise MaskError("scores have non-finite entries (NaN or inf); a mask cannot be computed from them")
    return topk_mask(scores.detach(), k, selection=selection)


def compute_mask(weight: torch.Tensor, *, mask_type: MaskType | str = MaskType.PRINCIPAL, filter_rank: int | None = None,
                 budget_rank: int | None = None, density: float | None = None,
                 selection: Selection | str = Selection.LARGEST, svd: SVDMethod | str = SVDMethod.AUTO,
                 niter: int = 2, seed: int = 0, scores: torch.Tensor | None = None) -> torch.Tensor:
    """Dispatch on :class:`MaskType` (no substring tests).

    ``scores`` (shape of ``weight``) are the training statistics of the gradient / momentum / movement masks
    (``|G|``, ``|EMA(G)|``, ``-sum G*W``); ``None`` there gives a random mask (no statistics yet).
    """
    mt = MaskType.parse(mask_type)
    if mt.needs_scores:
        return score_mask(weight, scores, budget_rank=budget_rank, density=density, selection=selection, seed=seed)
    if scores is not None:
        raise LiftConfigError(f"scores are only used by the gradient/momentum/movement masks, not {mt.value!r}")
    if mt is MaskType.PRINCIPAL:
        if filter_rank is None:
            raise LiftConfigError("filter_rank is required for mask_type='principal'")
        return principal_mask(weight, filter_rank=filter_rank, budget_rank=budget_rank, density=density,
                              selection=selection, svd=svd, niter=niter, seed=seed)
    if mt is MaskType.MAGNITUDE:
        return magnitude_mask(weight, budget_rank=budget_rank, density=density, selection=selection)
    if mt is MaskType.RANDOM:
        return random_mask(weight, budget_rank=budget_rank, density=density, seed=seed)
    return stable_rank_mask(weight, selection=selection, svd=svd, niter=niter, seed=seed)


def shira_mask_fn(*, mask_type: MaskType | str = MaskType.PRINCIPAL, filter_rank: int | None = None,
                  selection: Selection | str = Selection.LARGEST, svd: SVDMethod | str = SVDMethod.AUTO,
                  niter: int = 2, seed: int = 0) -> Callable[..., torch.Tensor]:
    """A ``mask_fn(base_layer, r, **kwargs)`` for peft's ``ShiraConfig`` (static sparse adapter with our masks).

    peft requires exactly ``r (m + n)`` ones, 0/1 values and the base weight's dtype and device. ``filter_rank``
    is clipped to ``min(m, n)`` per layer only here, where peft picks the layers.

    Example::

        cfg = ShiraConfig(r=8, target_modules=[...], mask_type="lift_principal")
        cfg.mask_fn = shira_mask_fn(filter_rank=8)
    """
    mt = MaskType.parse(mask_type)
    if mt is MaskType.STABLE_RANK:
        raise LiftConfigError("mask_type='stable_rank' ties the budget to the stable rank; SHiRA needs r(m+n) entries")
    if mt.needs_scores:
        raise LiftConfigError(f"mask_type={mt.value!r} needs training statistics; use SparseAdamW, not a static "
                              "SHiRA mask")
    if mt is MaskType.PRINCIPAL:
        _check_int(filter_rank, "filter_rank", low=1)

    def mask_fn(base_layer: torch.nn.Module, r: int, **kwargs: Any) -> torch.Tensor:
        w = base_layer.weight
        rf = min(int(filter_rank), min(w.shape)) if filter_rank is not None else None
        mask = compute_mask(w.data, mask_type=mt, filter_rank=rf, budget_rank=int(r), selection=selection,
                            svd=svd, niter=niter, seed=seed)
        check_mask(mask, w, k=int(r) * (w.shape[0] + w.shape[1]), name="shira mask")
        return mask.to(dtype=w.dtype, device=w.device)

    return mask_fn
