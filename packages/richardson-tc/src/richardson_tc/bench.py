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
}


def timed_run(tensor, mask, variant: str, *, rank: int, n_sweeps: int, seed: int, tol: float = 1e-3,
              loop_sweeps: int = 1, stop_rule: str = "step", max_inner: int = 1024) -> dict[str, Any]:
    """One completion run of a named variant; returns times, inner updates and errors."""
    kw = dict(VARIANTS[variant])
    if kw["solver"] == "lifted":
        kw.update(tol=tol, stop_rule=stop_rule, max_inner=max_inner)
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
