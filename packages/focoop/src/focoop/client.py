"""FOCoOp client: local training of the prompts (Alg. 1, client side) and per-client evaluation.

One round on client j: start from the broadcast global state (ctx_global, ctx_ood) and the client's private
ctx_local (initialised as a copy of ctx_global in its first round), run ``local_epochs`` epochs of plain SGD over
its few-shot features, and upload (ctx_global, ctx_ood) with the number of batches as FedAvg weight. The loss is

* baselines without OOD prompts: CE over the C ID classes;
* FOCoOp without DRO: CE over the C + K columns (OOD prompts act as extra negative classes);
* FOCoOp: the BiDRO objective of :mod:`focoop.dro`, multipliers γ₁, γ₂ carried across rounds;
* FedOTP: CE over the C OT logits of :func:`focoop.baselines.otp_logits` (patch features × [global, local] prompts);
* FedPGP: CE over the personalised prompts + μ·(prompt-wise contrastive loss), :mod:`focoop.baselines`.

All randomness (batch order, δ initialisation) comes from a generator seeded by (seed, round, client), so any
engine (in-process loop or Flower) reproduces the same numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from focoop.baselines import otp_logits, pgp_contrastive_loss
from focoop.config import FedConfig
from focoop.dro import DROState, bidro_loss, update_multipliers
from focoop.metrics import auroc, fpr_at_95_tpr, fpr_at_95_tpr_official
from focoop.prompts import init_local_state, text_features
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
    dev = setup.device  # the client trains where the setup lives; states travel on the CPU (server side)
    params = {k: v.detach().to(dev, copy=True).requires_grad_(True) for k, v in global_state.items()}
    if spec.local:
        loc = local_state if local_state else init_local_state(setup, cfg, global_state)
        params.update({k: v.detach().to(dev, copy=True).requires_grad_(True) for k, v in loc.items()})
    if spec.dro and dro_state is None:
        dro_state = DROState(gamma_id=cfg.gamma_init, gamma_ood=cfg.gamma_init)
    opt = torch.optim.SGD(list(params.values()), lr=cfg.lr)
    n = data.train_y.numel()
    n_batches, losses, ess, dn_id, dn_ood = 0, [], [], [], []
    for _ in range(cfg.local_epochs if n else 0):
        perm = torch.randperm(n, generator=gen)
        for start in range(0, n, cfg.batch_size):
            idx = perm[start:start + cfg.batch_size]
            f, y = data.train_x[idx], data.train_y[idx]
            t_id, t_ood = text_features(setup, cfg, params)
            scale = setup.logit_scale
            if spec.dro and t_ood is None:
                t_ood = t_id.new_zeros(0, t_id.shape[-1])  # −OOD prompts ablation: no distribution level
            if spec.mix_space == "ot":
                loss = F.cross_entropy(id_logits(setup, cfg, t_id, f, _tokens(data.train_tok, idx, f)), y)
            elif spec.mix_space == "lowrank":
                t_g = setup.id_bank.encode(setup.tower, params["ctx_global"])
                loss = F.cross_entropy(scale * f @ t_id.T, y) + cfg.pgp_mu * pgp_contrastive_loss(
                    t_g, setup.zeroshot_text, t_id, temperature=cfg.pgp_temp)
            elif spec.dro:
                loss, d_id, d_ood, e = bidro_loss(
                    f, y, t_id, t_ood, scale=scale, state=dro_state, tau=cfg.tau, n_iter=cfg.adv_iters,
                    adv_step=cfg.adv_step, det_weight=cfg.det_weight, generator=gen, official_reg=cfg.official_reg)
                ess.append(e)
                dn_id.append(float(d_id.norm(dim=-1).mean()))  # mean row L2 norm of δ (text features are unit)
                dn_ood.append(float(d_ood.norm(dim=-1).mean()) if d_ood.numel() else 0.0)
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
    upload = {k: params[k].detach().to("cpu", copy=True) for k in global_state}
    local = {k: params[k].detach().to("cpu", copy=True) for k in params if k not in global_state}
    metrics = {"loss": float(np.mean(losses)) if losses else float("nan"), "n_batches": float(n_batches)}
    if spec.dro:
        metrics.update(gamma_id=dro_state.gamma_id, gamma_ood=dro_state.gamma_ood,
                       ess=float(np.mean(ess)) if ess else float("nan"),
                       delta_id_norm=float(np.mean(dn_id)) if dn_id else float("nan"),
                       delta_ood_norm=float(np.mean(dn_ood)) if dn_ood else float("nan"))
    return FitResult(upload=upload, local=local, dro=dro_state, n_batches=n_batches, metrics=metrics)


def _tokens(tok: torch.Tensor | None, idx, f: torch.Tensor) -> torch.Tensor:
    """Patch features (B, N, e) of the rows ``idx``; without stored patch features the pooled feature is the one
    "patch" (N = 1), where FedOTP's OT reduces to a weighted mix of the two prompts' similarities."""
    if tok is None or tok.numel() == 0:
        return f[:, None, :]
    return tok if idx is None else tok[idx]


def id_logits(setup: FederationSetup, cfg: FedConfig, t_id: torch.Tensor, f: torch.Tensor,
              tok: torch.Tensor | None = None) -> torch.Tensor:
    """Logits (B, C) over the ID classes: s·f t_idᵀ, or FedOTP's OT logits when t_id is (C, 2, e)."""
    if t_id.ndim == 3:
        tok = f[:, None, :] if tok is None else tok
        return otp_logits(tok, t_id, scale=setup.logit_scale, eps=cfg.otp_eps, mass=cfg.otp_mass,
                          n_iter=cfg.otp_iters)
    return setup.logit_scale * f @ t_id.T


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
                    local_state: dict[str, torch.Tensor] | None, split: str = "test",
                    variants: dict[str, FedConfig] | None = None) -> dict:
    """ACC, CACC, FPR95 and AUROC (all / far / near OOD) of client ``cid`` with its own (mixed) prompts.

    ``split="val"`` returns only the client's validation accuracy (``n_val``, ``acc``): the score hyper-parameters
    are chosen on; it touches neither the test split nor the OOD sets. With ``cfg.neg_columns`` the zero-shot text
    features of the first ``cfg.n_ood`` negative words are appended as extra columns (ACC and CACC still take the
    argmax over the C ID columns, so only the OOD scores change). ``variants`` (name → config differing only in
    ``score``/``neg_columns``/``official_metrics``) scores the same logits several ways in one pass and returns
    name → metrics."""
    if split not in ("test", "val"):
        raise ValueError(f"split must be 'test' or 'val', got {split!r}")
    data = setup.clients[cid]
    c = setup.n_classes
    if not cfg.spec.trains or global_state is None:
        t_id, t_ood = setup.zeroshot_text, None
    else:
        params = dict(global_state)
        if cfg.spec.local:
            params.update(local_state if local_state else init_local_state(setup, cfg, global_state))
        params = {k: v.to(setup.device) for k, v in params.items()}
        t_id, t_ood = text_features(setup, cfg, params)
    cfgs = variants if variants is not None else {"": cfg}
    with_neg = any(v.neg_columns for v in cfgs.values())
    extra = [] if t_ood is None else [t_ood]  # columns scored on the pooled image feature
    n_own = c + (0 if t_ood is None else t_ood.shape[0])
    if with_neg:
        if setup.neg_text is None or setup.neg_text.shape[0] < cfg.n_ood:
            have = 0 if setup.neg_text is None else setup.neg_text.shape[0]
            raise ValueError(f"neg_columns needs {cfg.n_ood} negative words, the setup has {have}")
        extra.append(setup.neg_text[:cfg.n_ood])
    s = setup.logit_scale

    def logits(x, tok):
        out = [id_logits(setup, cfg, t_id, x, _tokens(tok, None, x))]
        if extra:
            out.append(s * x @ torch.cat(extra, dim=0).T)
        return torch.cat(out, dim=1)

    if split == "val":
        res = {"n_val": float(data.val_y.numel()),
               "acc": _accuracy(logits(data.val_x, data.val_tok), data.val_y, c, "id", False) if data.val_y.numel()
               else float("nan")}
        return res if variants is None else {k: dict(res) for k in cfgs}
    lt_all, lc_all = logits(data.test_x, data.test_tok), logits(data.test_c_x, data.test_c_tok)
    lo_all = logits(setup.ood_x, setup.ood_tok) if data.test_y.numel() else None
    kind = setup.ood_kind.cpu().numpy()
    results = {}
    for name, v in cfgs.items():
        cols = slice(None) if v.neg_columns or not with_neg else slice(0, n_own)
        lt, lc = lt_all[:, cols], lc_all[:, cols]
        out = {"n_test": float(data.test_y.numel())}
        out["acc"] = _accuracy(lt, data.test_y, c, "id", v.per_batch_accuracy)
        out["cacc"] = _accuracy(lc, data.test_c_y, c, v.cacc_columns, v.per_batch_accuracy)
        out["cacc_all_columns"] = _accuracy(lc, data.test_c_y, c, "all", False)
        if lo_all is None:
            results[name] = out | {"fpr95": float("nan"), "auroc": float("nan")}
            continue
        s_id = ood_score(lt, n_id=c, method=v.score, official=v.official_metrics).cpu().numpy()
        s_ood = ood_score(lo_all[:, cols], n_id=c, method=v.score, official=v.official_metrics).cpu().numpy()
        fpr = fpr_at_95_tpr_official if v.official_metrics else fpr_at_95_tpr
        out["fpr95"], out["auroc"] = fpr(s_id, s_ood), auroc(s_id, s_ood)
        for nm, flag in (("far", 0), ("near", 1)):
            if (kind == flag).any():
                out[f"fpr95_{nm}"] = fpr(s_id, s_ood[kind == flag])
                out[f"auroc_{nm}"] = auroc(s_id, s_ood[kind == flag])
        results[name] = out
    return results if variants is not None else results[""]
