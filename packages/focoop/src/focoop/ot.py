"""Server-side GOC: semi-unbalanced optimal-transport calibration of global prompts (FOCoOp, Alg. 3).

Given the pooled OOD contexts of all clients X ∈ R^{m×(M·d)} (m = n_clients·K rows, flattened) and the global ID
contexts G ∈ R^{C×(M·d)}:

1. cost M_ij = ‖X_i − G_j‖² / max(M) (``ot.dist``), marginals a = 1/m (OOD side), b = 1/C (ID side);
2. a transport plan Π (m × C):
   * ``uot="semi"`` (default, the paper's *semi*-unbalanced OT): ``ot.unbalanced.sinkhorn_unbalanced`` with
     reg_m = (ρ, ∞), so Π·1 (OOD side) is free under a KL penalty ρ while Πᵀ1 = b **exactly**;
   * ``uot="official"``: the released code's ``ot.unbalanced.mm_unbalanced(a, b, M, reg_m=ρ, div='kl')``, which
     relaxes *both* marginals (fully unbalanced);
3. the row mass p_i = Σ_j Π_ij measures how ID-like OOD prompt i is; an **exact** 1-D 2-means on {p_i}
   (:func:`two_means_1d`) splits off the high-mass "seemingly OOD" prompts;
4. calibration G_j ← ema·G_j + (1 − ema)·B_j with B_j = Σ_{i∈sel} Π_ij X_i / Σ_{i∈sel} Π_ij (normalised
   barycentric map, default) or B = Π_selᵀ X_sel (``normalize_plan=False``, official, which shrinks G);
5. the new global OOD prompts are the least ID-like: ``ood_selection="per_slot"`` (default) keeps, for every OOD
   slot k (bound to negative word k), the client's copy with the smallest mass, so contexts stay paired with their
   words; ``"official"`` writes the K smallest-mass pooled rows into slots 0…K−1 in ascending order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from focoop.config import OOD_SELECTIONS, UOT_MODES  # noqa: F401  (re-exported)
from focoop.errors import FOCoOpConfigError


def two_means_1d(x) -> tuple[np.ndarray, float]:
    """Exact 1-D 2-means: returns (labels (m,) in {0, 1} with 1 = high cluster, threshold).

    Sort, try every split point between distinct sorted values, and keep the one minimising the total
    within-cluster sum of squares (prefix sums, O(m log m)). Ties are broken by the first (lowest) split. If all
    values are equal no split exists: every label is 0 and the threshold is +inf.
    """
    v = np.asarray(x, dtype=np.float64).ravel()
    if v.size < 2:
        raise FOCoOpConfigError(f"2-means needs at least 2 values, got {v.size}")
    if not np.all(np.isfinite(v)):
        raise FOCoOpConfigError("2-means input contains NaN or inf")
    order = np.argsort(v, kind="stable")
    s = v[order]
    m = s.size
    c1 = np.cumsum(s)
    c2 = np.cumsum(s * s)
    k = np.arange(1, m)  # size of the low cluster
    valid = s[1:] > s[:-1]  # split only between distinct values
    if not valid.any():
        return np.zeros(m, dtype=np.int64), math.inf
    sum_lo, sq_lo = c1[:-1], c2[:-1]
    sum_hi, sq_hi = c1[-1] - sum_lo, c2[-1] - sq_lo
    sse = (sq_lo - sum_lo**2 / k) + (sq_hi - sum_hi**2 / (m - k))
    sse = np.where(valid, sse, np.inf)
    best = int(np.argmin(sse))  # first minimum = deterministic tie-break
    thr = 0.5 * (s[best] + s[best + 1])
    labels = (v > thr).astype(np.int64)
    return labels, float(thr)


def transport_plan(x: np.ndarray, g: np.ndarray, *, uot: str = "semi", reg_m: float = 0.1,
                   reg: float = 0.05, num_iter: int = 2000) -> np.ndarray:
    """Plan Π (m × C) between pooled OOD rows ``x`` (m, D) and ID rows ``g`` (C, D); see the module docstring."""
    import ot

    if uot not in UOT_MODES:
        raise FOCoOpConfigError(f"uot must be one of {UOT_MODES}, got {uot!r}")
    if not (isinstance(reg_m, (int, float)) and reg_m > 0 and math.isfinite(reg_m)):
        raise FOCoOpConfigError(f"reg_m (marginal relaxation) must be a finite positive number, got {reg_m}")
    if not reg > 0:
        raise FOCoOpConfigError(f"reg (entropic regularisation) must be positive, got {reg}")
    x = np.asarray(x, dtype=np.float64)
    g = np.asarray(g, dtype=np.float64)
    m, c = x.shape[0], g.shape[0]
    cost = ot.dist(x, g)  # (m, C), squared Euclidean
    cost = cost / max(cost.max(), 1e-300)
    a = np.full(m, 1.0 / m)
    b = np.full(c, 1.0 / c)
    if uot == "official":
        plan = ot.unbalanced.mm_unbalanced(a, b, cost, reg_m=reg_m, div="kl")
    else:
        plan = ot.unbalanced.sinkhorn_unbalanced(a, b, cost, reg, reg_m=(reg_m, float("inf")),
                                                 numItermax=num_iter, stopThr=1e-12)
    plan = np.asarray(plan, dtype=np.float64)
    if not np.all(np.isfinite(plan)):
        raise FOCoOpConfigError("the transport plan contains NaN; try a larger reg or reg_m")
    return plan


@dataclass
class CalibrationResult:
    """Output of :func:`calibrate`.

    global_ctx: (C, M, d) calibrated global ID contexts; ood_ctx: (K, M, d) new global OOD contexts;
    source_rows: (K,) pooled-row index of each new OOD slot; plan: (m, C); row_mass: (m,); selected: (m,) bool mask
    of the "seemingly OOD" (ID-like) cluster; plan_mass: Σ Π; n_distinct: distinct source slots (words) among the new OOD prompts.
    """

    global_ctx: torch.Tensor
    ood_ctx: torch.Tensor
    source_rows: np.ndarray
    plan: np.ndarray
    row_mass: np.ndarray
    selected: np.ndarray
    plan_mass: float
    n_distinct: int
    n_selected: int


def calibrate(pooled_ood: torch.Tensor, global_ctx: torch.Tensor, *, uot: str = "semi", reg_m: float = 0.1,
              reg: float = 0.05, ema: float = 0.5, normalize_plan: bool = True,
              ood_selection: str = "per_slot") -> CalibrationResult:
    """Calibrate global ID prompts and pick new global OOD prompts (FOCoOp server, Alg. 3).

    pooled_ood: (n_clients, K, M, d) every client's uploaded OOD contexts, in client order;
    global_ctx: (C, M, d) FedAvg-ed global ID contexts (C = 1 for a shared context).
    """
    if pooled_ood.ndim != 4 or global_ctx.ndim != 3 or pooled_ood.shape[2:] != global_ctx.shape[1:]:
        raise FOCoOpConfigError(f"pooled_ood must be (n_clients, K, M, d) and global_ctx (C, M, d) with matching "
                                f"(M, d); got {tuple(pooled_ood.shape)} and {tuple(global_ctx.shape)}")
    if not 0.0 <= ema <= 1.0:
        raise FOCoOpConfigError(f"ema must lie in [0, 1], got {ema}")
    if ood_selection not in OOD_SELECTIONS:
        raise FOCoOpConfigError(f"ood_selection must be one of {OOD_SELECTIONS}, got {ood_selection!r}")
    n_clients, k = pooled_ood.shape[:2]
    if n_clients * k < 2:
        raise FOCoOpConfigError("calibration needs at least 2 pooled OOD prompts")
    dtype = global_ctx.dtype
    x = pooled_ood.reshape(n_clients * k, -1).double()  # (m, M·d), row i = client i // K, slot i % K
    g = global_ctx.reshape(global_ctx.shape[0], -1).double()  # (C, M·d)
    plan = transport_plan(x.numpy(), g.numpy(), uot=uot, reg_m=reg_m, reg=reg)
    row_mass = plan.sum(1)
    labels, _ = two_means_1d(row_mass)
    selected = labels == 1
    g_new = g.clone()
    if selected.any():
        p_sel = torch.from_numpy(plan[selected])  # (s, C)
        moved = p_sel.T @ x[torch.from_numpy(selected)]  # (C, M·d)
        if normalize_plan:
            col = p_sel.sum(0)  # (C,)
            has = col > 0
            bary = g.clone()
            bary[has] = moved[has] / col[has, None]
            g_new = ema * g + (1.0 - ema) * bary
        else:
            g_new = ema * g + (1.0 - ema) * moved
    if ood_selection == "per_slot":
        mass = row_mass.reshape(n_clients, k)  # (n_clients, K)
        best_client = mass.argmin(0)  # (K,)
        rows = best_client * k + np.arange(k)
    else:
        order = np.argsort(row_mass, kind="stable")
        rows = order[:k]
        if rows.size < k:  # pragma: no cover - m >= K always holds here
            rows = np.resize(rows, k)
    ood_new = x[torch.from_numpy(rows)].reshape(k, *pooled_ood.shape[2:]).to(dtype)  # (K, M, d)
    return CalibrationResult(
        global_ctx=g_new.reshape(global_ctx.shape).to(dtype),  # (C, M, d)
        ood_ctx=ood_new, source_rows=rows, plan=plan, row_mass=row_mass, selected=selected,
        plan_mass=float(plan.sum()), n_distinct=int(np.unique(rows % k).size), n_selected=int(selected.sum()),
    )
