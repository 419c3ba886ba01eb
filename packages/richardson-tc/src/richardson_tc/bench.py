"""Timing every block solver on one problem: total time, time per ALS step, inner updates, held-out RRE.

The official-style per-entry loop is slow (one Python iteration per observed entry); it runs ``loop_sweeps``
sweeps and its total is extrapolated as ``setup + median step time × N × n_sweeps``. Its iterates equal the
vectorised direct solver's (tested to 1e-9), so the direct solver's held-out RRE stands for both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from richardson_tc.complete import cp_complete
from richardson_tc.data import make_tensor, sample_mask

VARIANTS: dict[str, dict[str, Any]] = {
    "direct": dict(solver="direct"),
    "direct-loop": dict(solver="direct-loop"),
    "em": dict(solver="em"),
    "lifted": dict(solver="lifted"),
    "lifted-accel": dict(solver="lifted", accelerate=True),
    "lifted-sampled": dict(solver="lifted", sampled=True),
    "em-tensorly": dict(solver="tensorly"),
}


def tensorly_em(tensor, mask, *, rank: int, n_sweeps: int, seed: int, ridge: float = 0.0) -> dict[str, Any]:
    """EM-ALS as tensorly runs it: ``tl.decomposition.parafac(mask=…, l2_reg=ridge)`` from our N(0, 0.1²) start
    (weights 1, no normalisation, tol 0). tensorly imputes the missing entries once per sweep (after all modes; the first sweep
    sees them as 0), where our ``"em"`` re-imputes before every mode update."""
    import time

    import tensorly as tl
    from tensorly.cp_tensor import CPTensor

    from richardson_tc.cp import cp_reconstruct, init_factors, relative_error

    init = init_factors(tensor.shape, rank, seed=seed)
    clean = np.where(mask, tensor, 0.0)
    t0 = time.perf_counter()
    cp = tl.decomposition.parafac(clean, rank, n_iter_max=n_sweeps, init=CPTensor((np.ones(rank), init)),
                                  mask=mask.astype(np.float64), tol=0, normalize_factors=False, l2_reg=ridge)
    dt = time.perf_counter() - t0
    full = cp_reconstruct(cp.factors)
    test_where = ~mask & np.isfinite(tensor)
    return {"total": dt, "step_median": dt / (n_sweeps * tensor.ndim), "updates": 1.0,
            "test_rre": relative_error(tensor, full, test_where) if test_where.any() else float("nan"),
            "train_rre": relative_error(tensor, full, mask), "history": None}


def timed_run(tensor, mask, variant: str, *, rank: int, n_sweeps: int, seed: int, tol: float = 1e-3,
              loop_sweeps: int = 1, stop_rule: str = "step", max_inner: int = 1024, ridge: float = 0.0,
              n_samples: int | None = None) -> dict[str, Any]:
    """One completion run of a named variant; returns times, inner updates and errors.

    The held-out RRE is over the entries outside ``mask`` where ``tensor`` is finite: to score on a validation
    split of Ω only, pass the tensor with every entry outside Ω set to NaN and the fitting part of Ω as ``mask``."""
    if variant == "em-tensorly":
        return tensorly_em(tensor, mask, rank=rank, n_sweeps=n_sweeps, seed=seed, ridge=ridge)
    kw = dict(VARIANTS[variant], ridge=ridge)
    if kw["solver"] == "lifted":
        kw.update(tol=tol, stop_rule=stop_rule, max_inner=max_inner)
        if kw.get("sampled"):
            kw.update(n_samples=n_samples)
    sweeps = loop_sweeps if variant == "direct-loop" else n_sweeps
    _, h = cp_complete(tensor, mask, rank=rank, n_sweeps=sweeps, seed=seed, track_error=variant != "direct-loop",
                       **kw)
    steps = np.asarray(h.step_seconds)
    n_steps = n_sweeps * tensor.ndim
    total = h.setup_seconds + float(np.median(steps)) * n_steps if variant == "direct-loop" else h.seconds
    return {"total": total, "step_median": float(np.median(steps)), "updates": float(np.mean(h.inner_updates)),
            "test_rre": h.final("test_rre") if h.sweeps and "test_rre" in h.sweeps[-1] else float("nan"),
            "train_rre": h.final("train_rre") if h.sweeps and "train_rre" in h.sweeps[-1] else float("nan"),
            "history": h}


def run_benchmark(*, kind: str, shape: Sequence[int], rank: int, ps: Sequence[float], solvers: Sequence[str],
                  tol: float, n_sweeps: int, loop_sweeps: int, seed: int) -> list[dict[str, Any]]:
    tensor = make_tensor(kind, shape=shape, rank=rank, seed=seed)
    rows = []
    for p in ps:
        mask = sample_mask(tensor.shape, p, seed=seed + 1)
        res = {v: timed_run(tensor, mask, v, rank=rank, n_sweeps=n_sweeps, seed=seed, tol=tol,
                            loop_sweeps=loop_sweeps) for v in solvers}
        for v, r in res.items():
            if v == "direct-loop" and "direct" in res:
                r["test_rre"] = res["direct"]["test_rre"]
            rows.append({
                "p": p, "solver": v, "total s": round(r["total"], 4), "ms / ALS step": round(1e3 * r["step_median"], 3),
                "inner updates / step": round(r["updates"], 2), "held-out RRE": round(r["test_rre"], 5),
                "speed-up vs direct": (round(res["direct"]["total"] / r["total"], 3) if "direct" in res else None),
                "speed-up vs loop": (round(res["direct-loop"]["total"] / r["total"], 3)
                                     if "direct-loop" in res else None)})
    return rows
