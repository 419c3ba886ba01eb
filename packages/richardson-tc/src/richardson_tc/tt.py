"""Tensor-train completion by ALS over the cores, each core step solved by lifted Richardson (or directly).

The TT model ``𝒳[i_1, …, i_N] = 𝒢_1[:, i_1, :] ⋯ 𝒢_N[:, i_N, :]`` (cores ``[r_{k−1}, I_k, r_k]``, ``r_0 = r_N = 1``,
tensorly's convention) is linear in one core with the others fixed: the design is ``L ⊗ I ⊗ Rᵀ`` (``L`` the left
interface ``[∏_{j<k} I_j, r_{k−1}]``, ``R`` the right one ``[r_k, ∏_{j>k} I_j]``). The full-data step is
:class:`~richardson_tc.solvers.TTCoreSolver`; on Ω it is used as the black box of
:func:`~richardson_tc.richardson.lifted_richardson` (Ghadiri et al., ICML 2025: the lifted solver takes any
structured TD regression solver). ``solver="direct"`` solves the masked core regression exactly: it separates into
one least-squares problem per slice ``𝒢_k[:, i, :]`` with design rows ``L[p] ⊗ R[:, q]`` over the observed
``(p, i, q)`` (``r_{k−1}·r_k`` unknowns each). One sweep updates the cores left to right, without orthogonalisation.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from richardson_tc.cp import relative_error
from richardson_tc.data import check_tensor_and_mask
from richardson_tc.errors import RichardsonTcError
from richardson_tc.richardson import check_max_inner, check_tol, lifted_richardson
from richardson_tc.solvers import TTCoreSolver

TT_SOLVERS = ("lifted", "direct", "em")


def tt_init(shape: Sequence[int], ranks: Sequence[int], *, seed: int = 0) -> list[np.ndarray]:
    """Cores ``[r_{k−1}, I_k, r_k]`` with i.i.d. N(0, 1/r_{k−1}) entries (seeded)."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((ranks[k], shape[k], ranks[k + 1])) / np.sqrt(ranks[k]) for k in range(len(shape))]


def tt_reconstruct(cores: Sequence[np.ndarray]) -> np.ndarray:
    """Full tensor of TT cores (same as ``tl.tt_to_tensor``)."""
    out = np.ones((1, 1))
    for c in cores:
        out = (out @ c.reshape(c.shape[0], -1)).reshape(-1, c.shape[2])  # [∏ I_j, r_k]
    return out.reshape([c.shape[1] for c in cores])


def tt_masked_core_lstsq(cores: Sequence[np.ndarray], k: int, tensor: np.ndarray, mask: np.ndarray, *,
                         ridge: float = 0.0) -> np.ndarray:
    """Direct solve of the masked core-``k`` regression, slice by slice (module docstring) → core ``[a, I_k, b]``.

    Slices without an observation keep their current value."""
    block = TTCoreSolver(cores, k)
    shape = tensor.shape
    a, b = block.left.shape[1], block.right.shape[0]
    t = np.asarray(tensor).reshape(block.left.shape[0], shape[k], block.right.shape[1])  # [P, I_k, Q]
    m = np.asarray(mask, dtype=bool).reshape(t.shape)
    out = np.array(cores[k], dtype=np.float64, copy=True)
    for i in range(shape[k]):
        p_idx, q_idx = np.nonzero(m[:, i, :])
        if p_idx.size == 0:
            continue
        z = (block.left[p_idx][:, :, None] * block.right[:, q_idx].T[:, None, :]).reshape(p_idx.size, a * b)
        y = t[p_idx, i, q_idx]
        if ridge > 0:
            g = z.T @ z + ridge * np.eye(a * b)
            sol = np.linalg.solve(g, z.T @ y)
        else:
            sol = np.linalg.lstsq(z, y, rcond=None)[0]
        out[:, i, :] = sol.reshape(a, b)
    return out


def tt_complete(
    tensor: np.ndarray,
    mask: np.ndarray,
    *,
    rank: int | Sequence[int],
    solver: str = "lifted",
    tol: float = 1e-3,
    max_inner: int = 1024,
    accelerate: bool = True,
    n_sweeps: int = 10,
    seed: int = 0,
    ridge: float = 0.0,
) -> tuple[list[np.ndarray], dict[str, Any]]:
    """TT completion of ``tensor`` from the entries where ``mask`` is True.

    Args:
        rank: TT rank r (all inner ranks) or the full rank tuple ``(1, r_1, …, r_{N−1}, 1)``.
        solver: ``"lifted"`` (lifted Richardson per core), ``"direct"`` (exact masked core solve) or ``"em"``
            (one lifted update per core step).
        tol, max_inner, accelerate: the lifted inner loop's (see :func:`lifted_richardson`).

    Returns:
        ``(cores, history)`` with per-sweep ``train_rre`` / ``test_rre`` (held-out complement of Ω), the inner
        updates per core step and the seconds.
    """
    tensor, mask = check_tensor_and_mask(tensor, mask)
    shape, n = tensor.shape, tensor.ndim
    if solver not in TT_SOLVERS:
        raise RichardsonTcError(f"solver must be one of {TT_SOLVERS}, got {solver!r}")
    check_tol(tol)
    check_max_inner(max_inner)
    if isinstance(rank, (int, np.integer)) and not isinstance(rank, bool):
        if rank < 1:
            raise RichardsonTcError(f"rank must be an integer >= 1, got {rank!r}")
        ranks = (1, *([int(rank)] * (n - 1)), 1)
    else:
        ranks = tuple(int(r) for r in rank)
        if len(ranks) != n + 1 or ranks[0] != 1 or ranks[-1] != 1 or min(ranks) < 1:
            raise RichardsonTcError(f"rank must be an int or a tuple (1, r_1, …, r_{n - 1}, 1) of length {n + 1}, "
                                    f"got {rank!r}")
    if isinstance(n_sweeps, bool) or not isinstance(n_sweeps, (int, np.integer)) or n_sweeps < 1:
        raise RichardsonTcError(f"n_sweeps must be an integer >= 1, got {n_sweeps!r}")
    if not (np.isfinite(ridge) and ridge >= 0):
        raise RichardsonTcError(f"ridge must be a finite number >= 0, got {ridge!r}")
    cores = tt_init(shape, ranks, seed=seed)
    clean = np.where(mask, tensor, 0.0)
    test_where = ~mask & np.isfinite(tensor)
    hist: dict[str, Any] = {"solver": solver, "ranks": ranks, "steps": [], "sweeps": []}
    elapsed = 0.0
    for sweep in range(n_sweeps):
        for k in range(n):
            t0 = time.perf_counter()
            if solver == "direct":
                cores[k], updates = tt_masked_core_lstsq(cores, k, clean, mask, ridge=ridge), 1
            else:
                res = lifted_richardson(TTCoreSolver(cores, k, ridge=ridge), cores[k], (mask, clean), tol=tol,
                                        max_inner=1 if solver == "em" else max_inner,
                                        accelerate=accelerate and solver != "em")
                cores[k], updates = res.x, res.updates
            dt = time.perf_counter() - t0
            elapsed += dt
            hist["steps"].append({"sweep": sweep, "core": k, "updates": updates, "seconds": dt})
        full = tt_reconstruct(cores)
        hist["sweeps"].append({"sweep": sweep, "seconds": elapsed, "train_rre": relative_error(tensor, full, mask),
                               "test_rre": (relative_error(tensor, full, test_where) if test_where.any()
                                            else float("nan"))})
    hist["seconds"] = elapsed
    return cores, hist
