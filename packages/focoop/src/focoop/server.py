"""FOCoOp server: FedAvg of the shared contexts, then (optionally) the semi-unbalanced-OT calibration (GOC).

Per round (Alg. 1, server side): given the replies of the participating clients *in client order*,

1. FedAvg: θ ← Σ_j w_j θ_j / Σ_j w_j for ctx_global and ctx_ood, with w_j = the client's number of batches;
2. with OT calibration: :func:`focoop.ot.calibrate` on the stacked per-client OOD contexts (n_clients, K, M, w) and the
   averaged global contexts, which returns calibrated global ID contexts and new global OOD contexts.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from focoop.config import FedConfig
from focoop.errors import FOCoOpConfigError
from focoop.ot import calibrate


def fedavg(states: Sequence[dict[str, torch.Tensor]], weights: Sequence[float]) -> dict[str, torch.Tensor]:
    """Weighted average of a list of state dicts with the same keys/shapes; weights are normalised to sum 1."""
    if not states:
        raise FOCoOpConfigError("fedavg needs at least one client state")
    w = torch.as_tensor([float(x) for x in weights], dtype=torch.float64)
    if w.numel() != len(states) or bool((w < 0).any()) or float(w.sum()) <= 0:
        raise FOCoOpConfigError(f"fedavg weights must be non-negative with a positive sum, got {list(weights)}")
    w = w / w.sum()
    out = {}
    for key in states[0]:
        stack = torch.stack([s[key].double() for s in states])  # (n_clients, ...)
        out[key] = torch.tensordot(w, stack, dims=1).to(states[0][key].dtype)
    return out


def server_aggregate(cfg: FedConfig, replies: Sequence[tuple[int, dict[str, torch.Tensor], float]],
                     ) -> tuple[dict[str, torch.Tensor], dict[str, float]]:
    """New global state from replies ``(cid, upload, n_batches)``; sorted by cid so engines agree exactly."""
    replies = sorted(replies, key=lambda r: r[0])
    live = [r for r in replies if r[2] > 0] or replies
    weights = [r[2] for r in live] if any(r[2] > 0 for r in live) else [1.0] * len(live)
    new = fedavg([r[1] for r in live], weights)
    info: dict[str, float] = {"n_clients": float(len(live))}
    if cfg.spec.ot and cfg.k:
        pooled = torch.stack([r[1]["ctx_ood"] for r in live])  # (n_clients, K, M, w)
        res = calibrate(pooled, new["ctx_global"], uot=cfg.uot, reg_m=cfg.reg_m, reg=cfg.ot_reg, ema=cfg.ema,
                        normalize_plan=cfg.normalize_plan, ood_selection=cfg.ood_selection)
        new["ctx_global"], new["ctx_ood"] = res.global_ctx, res.ood_ctx
        info.update(plan_mass=res.plan_mass, n_selected=float(res.n_selected), n_distinct=float(res.n_distinct))
    return new, info
