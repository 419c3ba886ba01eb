"""Prompt parameters of FOCoOp and the baselines, and the mixing of global and local contexts.

Each client holds (official layout, C classes, K OOD prompts, M context vectors of width w):

* ``ctx_global`` (C, M, w) — class-specific (or (1, M, w) shared for PromptFL/PromptFolio), uploaded and FedAvg-ed;
* ``ctx_local``  same shape — **private**, never uploaded;
* ``ctx_ood``    (K, M, w) — OOD prompts "[SOS] ctx_k {negative word k}." (extra negative classes), uploaded.

FOCoOp mixes in context space, ctx_c = (1 − frac)·ctx_local,c + frac·ctx_global,c (frac = 0 → local exactly,
frac = 1 → global exactly); PromptFolio mixes normalised text features, t = frac·t_global + (1 − frac)·t_local
(not re-normalised, as in the official baseline).
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
    if not spec.local or loc is None:
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
