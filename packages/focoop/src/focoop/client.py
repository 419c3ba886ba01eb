"""FOCoOp client: local training of the prompts (Alg. 1, client side) and per-client evaluation.

One round on client j: start from the broadcast global state (ctx_global, ctx_ood) and the client's private
ctx_local (initialised as a copy of ctx_global in its first round), run ``local_epochs`` epochs of plain SGD over
its few-shot features, and upload (ctx_global, ctx_ood) with the number of batches as FedAvg weight. The loss is

* baselines without OOD prompts: CE over the C ID classes;
* FOCoOp without DRO: CE over the C + K columns (OOD prompts act as extra negative classes);
* FOCoOp: the BiDRO objective of :mod:`focoop.dro`, multipliers γ₁, γ₂ carried across rounds.

All randomness (batch order, δ initialisation) comes from a generator seeded by (seed, round, client), so any
engine (in-process loop or Flower) reproduces the same numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from focoop.config import FedConfig
from focoop.dro import DROState, bidro_loss, update_multipliers
from focoop.metrics import auroc, fpr_at_95_tpr, fpr_at_95_tpr_official
from focoop.prompts import text_features
from focoop.scores import ood_score
from focoop.setup import FederationSetup


def client_generator(seed: int, server_round: int, cid: int) -> torch.Generator:
    """Deterministic per-(seed, round, client) generator."""
    return torch.Generator().manual_seed((seed * 1_000_003 + server_round * 10_007 + cid * 101 + 1) % (2**62))


@dataclass
class FitResult:
    """Upload (shared contexts), the client's private state after the round, FedAvg weight and metrics."""

    upload: dict[str, torch.Tensor]
    local: dict[str, torch.Tensor]
    dro: DROState | None
    n_batches: int
    metrics: dict[str, float]


def client_fit(setup: FederationSetup, cfg: FedConfig, *, cid: int, server_round: int,
               global_state: dict[str, torch.Tensor], local_state: dict[str, torch.Tensor] | None,
               dro_state: DROState | None) -> FitResult:
    """One round of local training on client ``cid`` (see the module docstring)."""
    spec = cfg.spec
    data = setup.clients[cid]
    gen = client_generator(cfg.seed, server_round, cid)
    params = {k: v.detach().clone().requires_grad_(True) for k, v in global_state.items()}
    if spec.local:
        loc = local_state["ctx_local"] if local_state else global_state["ctx_global"]
        params["ctx_local"] = loc.detach().clone().requires_grad_(True)
    if spec.dro and dro_state is None:
        dro_state = DROState(gamma_id=cfg.gamma_init, gamma_ood=cfg.gamma_init)
    opt = torch.optim.SGD(list(params.values()), lr=cfg.lr)
    n = data.train_y.numel()
    n_batches, losses, ess = 0, [], []
    for _ in range(cfg.local_epochs if n else 0):
        perm = torch.randperm(n, generator=gen)
        for start in range(0, n, cfg.batch_size):
            idx = perm[start:start + cfg.batch_size]
            f, y = data.train_x[idx], data.train_y[idx]
            t_id, t_ood = text_features(setup, cfg, params)
            scale = setup.logit_scale
            if spec.dro:
                loss, d_id, d_ood, e = bidro_loss(
                    f, y, t_id, t_ood, scale=scale, state=dro_state, tau=cfg.tau, n_iter=cfg.adv_iters,
                    adv_step=cfg.adv_step, det_weight=cfg.det_weight, generator=gen, official_reg=cfg.official_reg)
                ess.append(e)
            else:
                cols = t_id if t_ood is None else torch.cat([t_id, t_ood], dim=0)
                loss = F.cross_entropy(scale * f @ cols.T, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if spec.dro:
                dro_state = update_multipliers(dro_state, d_id, d_ood, beta=cfg.beta, rho=cfg.rho,
                                               gamma_init=cfg.gamma_init, gamma_floor=cfg.gamma_floor)
            if not math.isfinite(float(loss.detach())):
                raise FloatingPointError(f"non-finite loss on client {cid} in round {server_round}")
            losses.append(float(loss.detach()))
            n_batches += 1
    upload = {k: params[k].detach().clone() for k in global_state}
    local = {"ctx_local": params["ctx_local"].detach().clone()} if spec.local else {}
    metrics = {"loss": float(np.mean(losses)) if losses else float("nan"), "n_batches": float(n_batches)}
    if spec.dro:
        metrics.update(gamma_id=dro_state.gamma_id, gamma_ood=dro_state.gamma_ood,
                       ess=float(np.mean(ess)) if ess else float("nan"))
    return FitResult(upload=upload, local=local, dro=dro_state, n_batches=n_batches, metrics=metrics)


def _accuracy(logits: torch.Tensor, y: torch.Tensor, n_id: int, columns: str, per_batch: bool) -> float:
    if y.numel() == 0:
        return float("nan")
    pred = (logits[:, :n_id] if columns == "id" else logits).argmax(-1)
    correct = (pred == y).double()
    if not per_batch:
        return float(correct.mean())
    # official: mean of per-batch accuracies over class-sorted batches of 32, skipping batches of size 1
    order = torch.argsort(y, stable=True)
    chunks = [c for c in correct[order].split(32) if c.numel() > 1]
    return float(torch.stack([c.mean() for c in chunks]).mean()) if chunks else float(correct.mean())


@torch.no_grad()
def client_evaluate(setup: FederationSetup, cfg: FedConfig, *, cid: int, global_state: dict[str, torch.Tensor] | None,
                    local_state: dict[str, torch.Tensor] | None, split: str = "test") -> dict[str, float]:
    """ACC, CACC, FPR95 and AUROC (all / far / near OOD) of client ``cid`` with its own (mixed) prompts.

    ``split="val"`` returns only the client's validation accuracy (``n_val``, ``acc``): the score hyper-parameters
    are chosen on; it touches neither the test split nor the OOD sets. With ``cfg.neg_columns`` the zero-shot text
    features of the first ``cfg.n_ood`` negative words are appended as extra columns (ACC and CACC still take the
    argmax over the C ID columns, so only the OOD scores change)."""
    if split not in ("test", "val"):
        raise ValueError(f"split must be 'test' or 'val', got {split!r}")
    data = setup.clients[cid]
    c = setup.n_classes
    if not cfg.spec.trains or global_state is None:
        cols = setup.zeroshot_text
    else:
        params = dict(global_state)
        if cfg.spec.local and local_state:
            params.update(local_state)
        elif cfg.spec.local:
            params["ctx_local"] = global_state["ctx_global"]
        t_id, t_ood = text_features(setup, cfg, params)
        cols = t_id if t_ood is None else torch.cat([t_id, t_ood], dim=0)
    if cfg.neg_columns:
        if setup.neg_text is None or setup.neg_text.shape[0] < cfg.n_ood:
            have = 0 if setup.neg_text is None else setup.neg_text.shape[0]
            raise ValueError(f"neg_columns needs {cfg.n_ood} negative words, the setup has {have}")
        cols = torch.cat([cols, setup.neg_text[:cfg.n_ood]], dim=0)
    s = setup.logit_scale

    def logits(x):
        return s * x @ cols.T

    if split == "val":
        return {"n_val": float(data.val_y.numel()),
                "acc": _accuracy(logits(data.val_x), data.val_y, c, "id", False) if data.val_y.numel()
                else float("nan")}
    out = {"n_test": float(data.test_y.numel())}
    out["acc"] = _accuracy(logits(data.test_x), data.test_y, c, "id", cfg.per_batch_accuracy)
    out["cacc"] = _accuracy(logits(data.test_c_x), data.test_c_y, c, cfg.cacc_columns, cfg.per_batch_accuracy)
    out["cacc_all_columns"] = _accuracy(logits(data.test_c_x), data.test_c_y, c, "all", False)
    if data.test_y.numel() == 0:
        return out | {"fpr95": float("nan"), "auroc": float("nan")}
    s_id = ood_score(logits(data.test_x), n_id=c, method=cfg.score, official=cfg.official_metrics).numpy()
    s_ood = ood_score(logits(setup.ood_x), n_id=c, method=cfg.score, official=cfg.official_metrics).numpy()
    kind = setup.ood_kind.numpy()
    fpr = fpr_at_95_tpr_official if cfg.official_metrics else fpr_at_95_tpr
    out["fpr95"], out["auroc"] = fpr(s_id, s_ood), auroc(s_id, s_ood)
    for name, flag in (("far", 0), ("near", 1)):
        if (kind == flag).any():
            out[f"fpr95_{name}"] = fpr(s_id, s_ood[kind == flag])
            out[f"auroc_{name}"] = auroc(s_id, s_ood[kind == flag])
    return out
