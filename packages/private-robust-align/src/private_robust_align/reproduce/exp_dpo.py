"""Part of the reproduction: see ``private_robust_align.reproduce``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from icml25.claims import Claim
from icml25.experiment import Section

from private_robust_align.config import Config
from private_robust_align.reproduce.common import _fmt


# ---------------------------------------------------------------------------------------------------- 6. DPO demo
def dpo(cfg: Config, seeds: list[int], out: Path) -> Section:
    sec = Section("dpo")
    if cfg.dpo_seeds == 0:
        sec.notes.append("dpo: skipped at this budget (the tiny-LM DPO demo needs trl; run --quick or the full run)")
        return sec
    from icml25.tuning import selections_table, tune_alike

    from private_robust_align.dpo import run_dpo
    from private_robust_align.mechanism import flip_rate

    ss = seeds[:cfg.dpo_seeds]
    lab = {"sigmoid": "trl DPO sigmoid on swapped pairs (naive)",
           "robust": "trl robust DPO, label_smoothing = ρ (rDPO = the paper's debiased loss, ours)",
           "conservative": "conservative DPO (cDPO: (1 − ρ)·softplus(−m) + ρ·softplus(m) from trl's terms)",
           "clean": "trl DPO sigmoid on clean pairs (oracle)"}
    # the learning rate of every loss, chosen alike (same grid, same steps, same extension rule) on RR-swapped
    # validation pairs of a validation seed (a criterion a learner who sees only privatized pairs can compute): by
    # default the labels' likelihood under the model composed with the RR channel (proper, bounded); the debiased
    # (rDPO) loss is unbiased but unbounded below in the margin, so on a finite split it rewards the largest lr
    vs = 10_000 + ss[0]
    crit = ("negative log-likelihood of the released labels under the model composed with the RR channel"
            if cfg.dpo_val_criterion == "channel" else "debiased DPO loss")
    field = "val_channel_nll" if cfg.dpo_val_criterion == "channel" else "val_loss"

    def ev(loss: str):
        return lambda p: getattr(run_dpo(loss, epsilon=cfg.dpo_epsilon, steps=cfg.dpo_steps, seed=vs, lr=p["lr"],
                                         validation=True), field)
    sel = tune_alike({lab[k]: (ev(k), {"lr": list(cfg.dpo_lr_grid)}) for k in ("sigmoid", "robust", "conservative")},
                     higher_is_better=False, extend=cfg.dpo_lr_extend)
    lr = {k: sel[lab[k]].params["lr"] for k in ("sigmoid", "robust", "conservative")}
    lr["clean"] = lr["sigmoid"]
    runs = {k: [] for k in ("sigmoid", "robust", "conservative", "clean")}
    for s in ss:
        kw = dict(epsilon=cfg.dpo_epsilon, steps=cfg.dpo_steps, seed=s)
        for k in ("sigmoid", "robust", "conservative"):
            runs[k].append(run_dpo(k, lr=lr[k], **kw))
        runs["clean"].append(run_dpo("sigmoid", clean=True, lr=lr["clean"], **kw))
    sec.table(f"Tiny-LM DPO on RR-swapped sort pairs (ε = {cfg.dpo_epsilon:g}, ρ = {flip_rate(cfg.dpo_epsilon):.3f}, "
              f"{cfg.dpo_steps} steps, batch 16, β = 0.1, lr tuned per loss, {len(ss)} seeds): held-out pairs",
              ["loss", "lr", "preference accuracy", "win probability σ(margin)", "mean margin", "seconds per run"],
              [[lab[k], f"{lr[k]:g}", _fmt([r.accuracy for r in v]), _fmt([r.win_probability for r in v]),
                _fmt([r.mean_margin for r in v]), f"{np.mean([r.seconds for r in v]):.1f}"] for k, v in runs.items()])
    sec.table(f"DPO learning rates, chosen alike ({crit} on RR-swapped validation pairs; lower is better)",
              *selections_table(sel))
    paper = "rDPO (trl robust) is the debiased loss for DPO under RR; the paper's numbers are not available"
    note = (f"β and steps fixed and equal for every loss; lr tuned alike ({crit}) on "
            f"{list(cfg.dpo_lr_grid)}: " + "; ".join(v.note() for v in sel.values()))
    for base in ("sigmoid", "conservative"):
        sec.add(Claim.compare(
            claim=f"DPO: the robust (debiased) loss is not less accurate than {lab[base].split(' (')[0]} on privatized "
                  f"pairs (ε = {cfg.dpo_epsilon:g})", metric="held-out preference accuracy",
            ours=[r.accuracy for r in runs["robust"]], baseline=[r.accuracy for r in runs[base]],
            baseline_name=lab[base], paper=paper, paired=True, margin=-0.02, note=note + "; margin 0.02"))
        sec.add(Claim.compare(
            claim=f"DPO: the robust loss is less attenuated by the label noise than {lab[base].split(' (')[0]} "
                  f"(ε = {cfg.dpo_epsilon:g})",
            metric="held-out win probability σ(β Δ log-ratio) of the truly preferred completion",
            ours=[r.win_probability for r in runs["robust"]], baseline=[r.win_probability for r in runs[base]],
            baseline_name=lab[base], paper=paper, paired=True,
            note=note + ("; the naive loss's optimum is σ(margin) = 1 − ρ on noisy pairs" if base == "sigmoid" else
                         "; cDPO's optimum is also σ(margin) = 1 − ρ (it smooths the targets instead of debiasing)")))
    return sec
