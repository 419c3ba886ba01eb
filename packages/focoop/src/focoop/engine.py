"""Deterministic in-process federated engine: the same client and server functions as the Flower apps.

``run_inprocess(setup, cfg)`` loops over rounds; in each round every client (in client order) runs
:func:`focoop.client.client_fit` from the broadcast global state and its private state, the server runs
:func:`focoop.server.server_aggregate`, and at the end every client is evaluated with its own prompts
(:func:`focoop.client.client_evaluate`). Returns a :class:`FedResult` with per-client metrics and their summary
(mean and across-client standard deviation).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from focoop.client import client_evaluate, client_fit
from focoop.config import FedConfig
from focoop.prompts import init_global_state
from focoop.server import server_aggregate
from focoop.setup import FederationSetup

METRICS = ("acc", "cacc", "fpr95", "auroc")


@dataclass
class FedResult:
    """Outcome of one federated run."""

    method: str
    per_client: list[dict[str, float]]
    global_state: dict[str, torch.Tensor]
    history: list[dict[str, float]] = field(default_factory=list)
    seconds: float = 0.0
    seconds_per_round: float = 0.0
    engine: str = "inprocess"
    local_states: list = field(default_factory=list)  # each client's private state (to re-evaluate the run)

    def summary(self) -> dict[str, float]:
        """Mean over clients with a test split, and the across-client std (``<metric>_std``), per metric."""
        out: dict[str, float] = {}
        rows = [r for r in self.per_client if r.get("n_test", 0) > 0]
        keys = sorted({k for r in rows for k in r if k != "n_test"})
        for k in keys:
            vals = np.array([r[k] for r in rows if k in r and np.isfinite(r[k])], dtype=np.float64)
            out[k] = float(vals.mean()) if vals.size else float("nan")
            out[f"{k}_std"] = float(vals.std()) if vals.size else float("nan")
        return out


def evaluate_all(setup: FederationSetup, cfg: FedConfig, global_state, local_states, *,
                 split: str = "test") -> list[dict[str, float]]:
    """:func:`focoop.client.client_evaluate` of every client (``split`` = "test" or "val")."""
    return [client_evaluate(setup, cfg, cid=j, global_state=global_state, local_state=local_states[j], split=split)
            for j in range(len(setup.clients))]


def evaluate_result(setup: FederationSetup, cfg: FedConfig, res: FedResult, *, split: str = "test") -> FedResult:
    """Re-evaluate a finished run with another evaluation config (e.g. ``score``, ``neg_columns``) or on the
    validation split; training is not repeated. Returns a copy of ``res`` with the new per-client metrics."""
    cfg.validate()
    locs = res.local_states or [None] * len(setup.clients)
    per = evaluate_all(setup, cfg, res.global_state or None, locs, split=split)
    return FedResult(method=res.method, per_client=per, global_state=res.global_state, history=res.history,
                     seconds=res.seconds, seconds_per_round=res.seconds_per_round, engine=res.engine,
                     local_states=res.local_states)


def evaluate_variants(setup: FederationSetup, cfg: FedConfig, res: FedResult,
                      variants: dict[str, FedConfig]) -> dict[str, FedResult]:
    """Re-evaluate a finished run under several scorings (configs differing from ``cfg`` only in ``score`` /
    ``neg_columns`` / ``official_metrics``) from one pass over the logits; same numbers as :func:`evaluate_result`
    called once per variant."""
    for v in variants.values():
        v.validate()
    locs = res.local_states or [None] * len(setup.clients)
    per = [client_evaluate(setup, cfg, cid=j, global_state=res.global_state or None, local_state=locs[j],
                           variants=variants) for j in range(len(setup.clients))]
    return {name: FedResult(method=res.method, per_client=[p[name] for p in per], global_state=res.global_state,
                            history=res.history, seconds=res.seconds, seconds_per_round=res.seconds_per_round,
                            engine=res.engine, local_states=res.local_states) for name in variants}


def validation_accuracy(setup: FederationSetup, cfg: FedConfig, res: FedResult) -> float:
    """Mean over clients (with a validation split) of the validation accuracy of a finished run."""
    per = evaluate_result(setup, cfg, res, split="val").per_client
    vals = [r["acc"] for r in per if r["n_val"] > 0]
    if not vals:
        raise ValueError("no client has a validation split; build the setup with client_val")
    return float(np.mean(vals))


def run_inprocess(setup: FederationSetup, cfg: FedConfig, *, progress: bool = False,
                  device: torch.device | str | None = None) -> FedResult:
    """Run ``cfg.rounds`` rounds of federated prompt learning on all clients in this process.

    ``device``: where the clients train and evaluate (the setup is copied there); the server's aggregation and
    calibration, and every state that travels between server and clients, stay on the CPU."""
    cfg.validate()
    if device is not None:
        setup = setup.to(device)
    if cfg.n_clients != len(setup.clients):
        raise ValueError(f"n_clients={cfg.n_clients} but the setup has {len(setup.clients)} clients")
    t0 = time.perf_counter()
    if not cfg.spec.trains:
        per_client = evaluate_all(setup, cfg, None, [None] * cfg.n_clients)
        return FedResult(method=cfg.method, per_client=per_client, global_state={},
                         seconds=time.perf_counter() - t0)
    state = init_global_state(setup, cfg)
    local: list[dict | None] = [None] * cfg.n_clients
    dro: list = [None] * cfg.n_clients
    history = []
    rounds = range(1, cfg.rounds + 1)
    if progress:
        from tqdm.auto import tqdm

        rounds = tqdm(rounds, desc=cfg.method, leave=False)
    for rnd in rounds:
        replies, losses = [], []
        for j in range(cfg.n_clients):
            res = client_fit(setup, cfg, cid=j, server_round=rnd, global_state=state, local_state=local[j],
                             dro_state=dro[j])
            local[j], dro[j] = res.local, res.dro
            replies.append((j, res.upload, float(res.n_batches)))
            losses.append(res.metrics)
        state, info = server_aggregate(cfg, replies)
        row = {"round": rnd, "loss": float(np.nanmean([m["loss"] for m in losses])), **info}
        if cfg.spec.dro:
            row["gamma_ood_mean"] = float(np.mean([m["gamma_ood"] for m in losses if "gamma_ood" in m]))
            row["ess_mean"] = float(np.nanmean([m.get("ess", np.nan) for m in losses]))
            # mean over clients and batches of the mean row L2 norm of the adversary's δ (text features: norm 1)
            row["delta_id_norm"] = float(np.nanmean([m.get("delta_id_norm", np.nan) for m in losses]))
            row["delta_ood_norm"] = float(np.nanmean([m.get("delta_ood_norm", np.nan) for m in losses]))
        history.append(row)
    t_train = time.perf_counter() - t0
    per_client = evaluate_all(setup, cfg, state, local)
    return FedResult(method=cfg.method, per_client=per_client, global_state=state, history=history,
                     seconds=time.perf_counter() - t0, seconds_per_round=t_train / cfg.rounds, local_states=local)
