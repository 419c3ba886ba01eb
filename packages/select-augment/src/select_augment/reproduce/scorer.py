"""Part of the reproduction: see ``select_augment.reproduce``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from icml25.claims import Claim
from icml25.experiment import Section

from select_augment.config import Config
from select_augment.reproduce.common import PAPER_SCORE, _scored

SCORER_GATE_SHAPES = ("Scorer on the shapes (tiny CLIP pretrained on other seeds of the same generator): consistency "
                      "flags injected label noise (AUROC of -c)")


SCORER_GATE_DIGITS = ("Scorer on the digits (tiny CLIP that never saw a digit, class prototypes as text): "
                      "consistency flags injected label noise (AUROC of -c)")


def _auroc(score: np.ndarray, positive: np.ndarray) -> float:
    from scipy.stats import rankdata

    pos = np.asarray(positive, bool)
    if pos.all() or not pos.any():
        return float("nan")
    r = rankdata(score)
    return float((r[pos].sum() - pos.sum() * (pos.sum() + 1) / 2) / (pos.sum() * (~pos).sum()))


def score_detection(cfg: Config, seeds: list[int], out: Path) -> Section:
    """The scores against the generator's ground-truth flags: label noise, ambiguous overlays, near-duplicates."""
    sec = Section("score detection")
    noise_auc, amb_auc, dup_u, dup_frac, gate_prec = [], [], [], [], []
    for s in seeds:
        tr, sc, _ = _scored(cfg, "noisy", s, cfg.n_detect)
        noise_auc.append(_auroc(-sc.consistency, tr.flags["label_noisy"]))
        gated = ~sc.gate
        gate_prec.append(float(tr.flags["label_noisy"][gated].mean()) if gated.any() else float("nan"))
        tr, sc, _ = _scored(cfg, "ambiguous", s, cfg.n_detect)
        amb_auc.append(_auroc(-sc.consistency, tr.flags["ambiguous"]))
        tr, sc, _ = _scored(cfg, "duplicates", s, cfg.n_detect)
        dup = tr.flags["near_duplicate"]
        dup_u.append(float(np.median(sc.u[dup])))
        dup_frac.append(float((sc.u[dup] > 0.75).mean()))
    sec.add(Claim.gate(claim=SCORER_GATE_SHAPES, metric="AUROC", ours=noise_auc,
                       controls={"chance 0.5": 0.5, "stated 0.9": 0.9}, paper=PAPER_SCORE,
                       note="a sanity check of the scorer, not a reproduction: the tiny CLIP saw this generator"))
    sec.add(Claim.gate(claim="Scorer on the shapes: ambiguous overlays get lower consistency than clean samples "
                             "(AUROC of -c)", metric="AUROC", ours=amb_auc, controls={"chance 0.5": 0.5},
                       paper=PAPER_SCORE))
    sec.add(Claim.gate(claim="Scorer on the shapes: near-duplicates sit in the top density quartile (median "
                             "per-class density rank)", metric="median u of near-duplicates", ours=dup_u,
                       controls={"top quartile 0.75": 0.75}, paper=PAPER_SCORE))
    dig_auc, dig_prec, dig_rec = [], [], []
    if cfg.digits:
        for s_ in seeds:
            tr, sc, _ = _scored(cfg, "digits-noisy", s_, cfg.n_train)
            noisy = tr.flags["label_noisy"]
            dig_auc.append(_auroc(-sc.consistency, noisy))
            dig_prec.append(float(noisy[~sc.gate].mean()) if (~sc.gate).any() else float("nan"))
            dig_rec.append(float((~sc.gate)[noisy].mean()))
        sec.add(Claim.gate(claim=SCORER_GATE_DIGITS, metric="AUROC", ours=dig_auc, controls={"chance 0.5": 0.5},
                           paper=PAPER_SCORE, note="a scorer that never saw the evaluation data's generator"))
        sec.table("Noisy digits: the scorer that never saw a digit, per seed",
                  ["seed", "noise AUROC", "share of gated that are noisy", "share of noisy that are gated"],
                  [[s_, a_, p_, r_] for s_, a_, p_, r_ in zip(seeds, dig_auc, dig_prec, dig_rec)])
    sec.table("Score detection per seed", ["seed", "noise AUROC", "share of gated that are noisy",
                                            "ambiguous AUROC", "near-dup median u", "near-dups with u > 0.75"],
              [[s, a, p, b, u, f] for s, a, p, b, u, f in zip(seeds, noise_auc, gate_prec, amb_auc, dup_u, dup_frac)])
    sec.figures.append(_joint_figure(cfg, out, seeds[0]))
    return sec


def _joint_figure(cfg: Config, out: Path, seed: int) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from icml25.plots import save_figure

    from select_augment.scoring import joint_density

    tr, sc, _ = _scored(cfg, "noisy", seed, cfg.n_detect)
    jd = joint_density(sc, grid=40)
    fig, ax = plt.subplots(figsize=(4.2, 3.6))
    ax.contourf(jd["axis"], jd["axis"], jd["mesh"], levels=12, cmap="Greys")
    noisy = tr.flags["label_noisy"]
    ax.scatter(sc.u[~noisy], sc.v[~noisy], s=3, c="#3a7", label="clean", alpha=0.6)
    ax.scatter(sc.u[noisy], sc.v[noisy], s=3, c="#d33", label="label noise", alpha=0.6)
    ax.set_xlabel("u = density rank")
    ax.set_ylabel("v = consistency rank")
    ax.legend(fontsize=6, loc="lower left")
    ax.set_title("joint (u, v) with KDE, noisy shapes", fontsize=8)
    save_figure(fig, out / "joint_uv.png", dpi=90)
    plt.close(fig)
    return "joint_uv.png"
