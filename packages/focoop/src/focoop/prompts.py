"""Prompt parameters of FOCoOp and the baselines, and the mixing of global and local contexts.

Each client holds (official layout, C classes, K OOD prompts, M context vectors of width w):

* ``ctx_global`` (C, M, w) — class-specific (or (1, M, w) shared for PromptFL/PromptFolio), uploaded and FedAvg-ed;
* ``ctx_local``  same shape — **private**, never uploaded;
* ``ctx_ood``    (K, M, w) — OOD prompts "[SOS] ctx_k {negative word k}." (extra negative classes), uploaded.

FOCoOp mixes in context space, ctx_c = (1 − frac)·ctx_local,c + frac·ctx_global,c (frac = 0 → local exactly,
frac = 1 → global exactly); PromptFolio mixes normalised text features, t = frac·t_global + (1 − frac)·t_local
(not re-normalised, as in the official baseline).

FedOTP keeps both prompts' features per class, t_id (C, 2, e) = [global, local], for the OT logits of
:func:`focoop.baselines.otp_logits`; FedPGP's private state is the low-rank pair (U (M, r), V (r, w)) and its ID
features are those of ctx_global + U·V (:mod:`focoop.baselines`).
"""

from __future__ import annotations

import torch

from focoop.config import FedConfig
from focoop.setup import FederationSetup

SHARED_KEYS = ("ctx_global", "ctx_ood")


def init_global_state(setup: FederationSetup, cfg: FedConfig) -> dict[str, torch.Tensor]:
    """Initial server state: N(0, std²) contexts from ``cfg.seed`` (official init), shapes as in the docstring."""
    spec = cfg.spec
    g = torch.Generator().manual_seed(cfg.seed * 7919 + 17)
    n_id = setup.n_classes if spec.csc else 1
    state = {"ctx_global": torch.randn(n_id, cfg.n_ctx, setup.width, generator=g) * cfg.ctx_init_std}
    if cfg.k:
        if setup.ood_bank is None or len(setup.ood_bank) < cfg.k:
            have = 0 if setup.ood_bank is None else len(setup.ood_bank)
            raise ValueError(f"n_ood={cfg.k} OOD prompts requested but the setup has only {have} negative words")
        state["ctx_ood"] = torch.randn(cfg.k, cfg.n_ctx, setup.width, generator=g) * cfg.ctx_init_std
    return state


def init_local_state(setup: FederationSetup, cfg: FedConfig,
                     global_state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A client's private state before its first round: a copy of ctx_global (FOCoOp, PromptFolio: official); a
    separately drawn local prompt (FedOTP: the global and local prompts are two prompts of one model); U = 0 and
    V ~ N(0, std²) (FedPGP: ctx_P = ctx_G at the start). Draws depend on ``cfg.seed`` only (every client starts
    from the same copy, as when the official code deep-copies one model per client)."""
    spec = cfg.spec
    if not spec.local:
        return {}
    g = torch.Generator().manual_seed(cfg.seed * 7919 + 29)
    glob = global_state["ctx_global"]
    if spec.mix_space == "ot":
        return {"ctx_local": torch.randn(glob.shape, generator=g) * cfg.ctx_init_std}
    if spec.mix_space == "lowrank":
        return {"pgp_u": torch.zeros(cfg.n_ctx, cfg.pgp_rank),
                "pgp_v": torch.randn(cfg.pgp_rank, setup.width, generator=g) * cfg.ctx_init_std}
    return {"ctx_local": glob.detach().clone()}


def personal_context(ctx_global: torch.Tensor, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """FedPGP: ctx_P = ctx_G + U·V; ctx_G (P, M, w), U (M, r), V (r, w) → (P, M, w)."""
    return ctx_global + (u @ v).unsqueeze(0)  # (M, w) broadcast over the P prompts


def mix_contexts(ctx_local: torch.Tensor, ctx_global: torch.Tensor, frac: float) -> torch.Tensor:
    """ctx = (1 − frac)·ctx_local + frac·ctx_global (exact at the extremes)."""
    if frac == 0.0:
        return ctx_local
    if frac == 1.0:
        return ctx_global
    return (1.0 - frac) * ctx_local + frac * ctx_global


def mix_features(t_local: torch.Tensor, t_global: torch.Tensor, frac: float) -> torch.Tensor:
    """t = frac·t_global + (1 − frac)·t_local (PromptFolio; exact at the extremes)."""
    if frac == 0.0:
        return t_local
    if frac == 1.0:
        return t_global
    return frac * t_global + (1.0 - frac) * t_local


def text_features(setup: FederationSetup, cfg: FedConfig, params: dict[str, torch.Tensor]) -> tuple[torch.Tensor,
                                                                                                  torch.Tensor | None]:
    """(T_id (C, e), T_ood (K, e) or None) for a client's parameters ``params`` (ctx_global[, ctx_local, ctx_ood])."""
    spec = cfg.spec
    frac = cfg.global_frac
    tower, bank = setup.tower, setup.id_bank
    g = params["ctx_global"]
    loc = params.get("ctx_local")
    if spec.mix_space == "lowrank" and "pgp_u" in params:
        t_id = bank.encode(tower, personal_context(g, params["pgp_u"], params["pgp_v"]))
    elif spec.mix_space == "ot":
        t_g = bank.encode(tower, g)
        t_id = torch.stack([t_g, t_g if loc is None else bank.encode(tower, loc)], dim=1)  # (C, 2, e)
    elif not spec.local or loc is None:
        t_id = bank.encode(tower, g)
    elif spec.mix_space == "context":
        t_id = bank.encode(tower, mix_contexts(loc, g, frac))
    else:
        t_g = bank.encode(tower, g) if frac > 0 else None
        t_l = bank.encode(tower, loc) if frac < 1 else None
        t_id = mix_features(t_l, t_g, frac)
    t_ood = None
    if cfg.k:
        ood_bank = setup.ood_bank
        sub = _subbank(ood_bank, torch.arange(cfg.k))  # slot k is always bound to negative word k
        t_ood = sub.encode(tower, params["ctx_ood"])
    return t_id, t_ood


class _Sub:
    def __init__(self, bank, idx):
        self.prefix, self.suffix, self.eot = bank.prefix[idx], bank.suffix[idx], bank.eot[idx]
        self.n = int(idx.numel())

    def __len__(self):
        return self.n

    def embeddings(self, ctx):
        return torch.cat([self.prefix, ctx, self.suffix], dim=1)  # (K, L, w)

    def encode(self, tower, ctx, normalize=True):
        import torch.nn.functional as F

        feats = tower(self.embeddings(ctx), self.eot)
        return F.normalize(feats, dim=-1) if normalize else feats


def _subbank(bank, idx: torch.Tensor) -> _Sub:
    return _Sub(bank, idx)
