"""Stage B's experiment: open-loop prediction of the slot and holistic world models, gated at disjoint horizon
blocks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from icml25.claims import Claim
from icml25.experiment import Section

from sold.config import Config
from sold.reproduce.common import PAPER_WM, _fmt
from sold.reproduce.figures import _plot_rollout
from sold.reproduce.results import _results, _selection

KIND_NAMES = {"slots": "slot world model (SAVi + OCVP)", "holistic": "holistic world model (CNN-AE + GRU)"}


def horizon_blocks(h: int) -> dict[str, tuple[str, slice]]:
    """The scored horizons, disjoint so that no finding is counted twice: the first step and the second half."""
    return {"short": ("horizon 1", slice(0, 1)), "long": (f"horizons {h // 2 + 1}–{h}", slice(h // 2, h))}


def wm_gate_name(kind: str, block: str, h: int) -> str:
    """The claim text of the competence gate of ``kind``'s world model at a block of :func:`horizon_blocks`."""
    return (f"Gate: the {KIND_NAMES[kind]} has learned to predict ({horizon_blocks(h)[block][0]}): validation MSE "
            "plateaued, and it beats copying the last frame and the mean frame")


def open_loop(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Stage B: open-loop pixel MSE of the slot and holistic world models, their competence gates (validation
    plateau; beating copy-last-frame and the mean frame) and the comparison at disjoint horizon blocks."""
    from icml25.plots import learning_curves
    from icml25.train import Curve
    from icml25.tuning import selections_table

    sec = Section("open-loop prediction")
    res = _results(cfg, seeds)
    sel = _selection(cfg, seeds)
    kinds = ("slots", "holistic")
    lr = {k: sel[k].params["lr"] for k in kinds}
    tuned = [r for r in res if r["tuned"]]
    cols, rows = selections_table(sel)
    sec.table(f"Dynamics learning rate chosen on the validation episodes of seeds {[r['seed'] for r in tuned]} "
              f"(grids of the same size, each point trained to a validation plateau within {cfg.wm_steps} steps; "
              f"score = best validation open-loop pixel MSE, mean over horizons 1–{cfg.eval_horizon})", cols, rows)
    sec.table("Every dynamics learning rate tried (tuning seeds; validation score, lower is better)",
              ["model", "lr", "validation score", "steps trained (per seed)", "chosen"],
              [[k, f"{p:g}", float(np.mean([np.mean(r["wm"][(k, p)]["val"]) for r in tuned])),
                ", ".join(str(r["wm"][(k, p)]["steps_trained"]) for r in tuned), "yes" if p == lr[k] else ""]
               for k in kinds for p in sorted(sel[k].grid["lr"])])
    h = cfg.eval_horizon
    mse = {k: np.array([r["wm"][(k, lr[k])]["test"] for r in res]) for k in kinds}                    # [S, H]
    ctl = {"copy last frame": np.array([r["controls"]["test"]["copy_frame"] for r in res]),
           "mean frame": np.array([r["controls"]["test"]["mean_frame"] for r in res])}
    still = {k: np.array([r["wm"][(k, lr[k])]["copy_latent"] for r in res]) for k in kinds}
    curves = {k: [Curve.from_dict(r["wm"][(k, lr[k])]["curve"]) for r in res] for k in kinds}
    blocks = horizon_blocks(h)
    for k in kinds:
        for b, (label, sl) in blocks.items():
            sec.add(Claim.gate(
                claim=wm_gate_name(k, b, h), metric=f"open-loop pixel MSE, mean over {label} (test episodes, "
                                                     f"{cfg.eval_context} context frames)",
                ours=mse[k][:, sl].mean(1), controls={n: v[:, sl].mean(1) for n, v in ctl.items()},
                curves=curves[k], higher_is_better=False, paired=True,
                note=f"lr {lr[k]:g}; trained until {cfg.wm_patience} validation evaluations (every "
                     f"{cfg.wm_eval_every} steps) without a new best, at most {cfg.wm_steps} steps; best weights "
                     f"kept; steps trained per seed {[r['wm'][(k, lr[k])]['steps_trained'] for r in res]}"))
    note = (f"paired by seed; both trained to a validation plateau (at most {cfg.wm_steps} steps); "
            + "; ".join(sel[k].note() for k in sel))
    sec.add(Claim.compare(
        claim=f"Slot dynamics predict pixels better than the holistic model at long horizons ({blocks['long'][0]})",
        metric=f"open-loop pixel MSE, mean over {blocks['long'][0]} (test episodes, {cfg.eval_context} context "
               "frames)", ours=mse["slots"][:, blocks["long"][1]].mean(1),
        baseline=mse["holistic"][:, blocks["long"][1]].mean(1), baseline_name=KIND_NAMES["holistic"],
        paper=PAPER_WM, kind="paper", higher_is_better=False, paired=True, note=note,
        gates=[wm_gate_name(k, "long", h) for k in kinds]))
    sec.add(Claim.compare(
        claim="Slot dynamics predict pixels better than the holistic model at horizon 1",
        metric="open-loop pixel MSE at horizon 1", ours=mse["slots"][:, 0], baseline=mse["holistic"][:, 0],
        baseline_name=KIND_NAMES["holistic"], paper=PAPER_WM, kind="paper", higher_is_better=False,
        paired=True, note=note + "; at one step the autoencoders' reconstruction error dominates",
        gates=[wm_gate_name(k, "short", h) for k in kinds]))
    rows = [[i + 1, _fmt(mse["slots"][:, i]), _fmt(mse["holistic"][:, i]), _fmt(ctl["copy last frame"][:, i]),
             _fmt(ctl["mean frame"][:, i]), _fmt(still["slots"][:, i]), _fmt(still["holistic"][:, i])]
            for i in range(h)]
    sec.table(f"Open-loop pixel MSE per horizon on the test episodes (mean ± sd over {len(res)} seeds); controls: "
              "copy the last context frame, the mean training frame, and each autoencoder's decoded last context "
              "latent held still (its reconstruction floor without dynamics)",
              ["horizon", "SOLD slots (OCVP)", "holistic (GRU)", "copy last frame", "mean frame",
               "slots held still", "holistic held still"], rows)
    sec.table("World-model training (validation open-loop MSE until plateau; per seed at the chosen lr)",
              ["seed", "model", "steps trained", "best step", "stopped by", "best validation MSE", "seconds"],
              [[r["seed"], k, r["wm"][(k, lr[k])]["steps_trained"], r["wm"][(k, lr[k])]["best_step"],
                r["wm"][(k, lr[k])]["curve"]["stopped_by"], min(r["wm"][(k, lr[k])]["curve"]["values"]),
                r["wm"][(k, lr[k])]["seconds"]] for r in res for k in kinds])
    p = res[0]["params"]
    tot = {k: sum(p[k].values()) for k in p}
    sec.table("Parameters (autoencoder + dynamics + reward head)", ["model", "autoencoder", "dynamics", "reward",
                                                                    "total"],
              [[k, p[k]["autoencoder"], p[k]["dynamics"], p[k]["reward"], tot[k]] for k in p])
    learning_curves({"SOLD slots (OCVP)": mse["slots"], "holistic (GRU)": mse["holistic"],
                     "copy last frame": ctl["copy last frame"], "mean frame": ctl["mean frame"]},
                    out / "open_loop_mse.png", x=list(range(1, h + 1)), xlabel="open-loop horizon",
                    ylabel="pixel MSE", title="Open-loop prediction on held-out episodes (mean ± sd)")
    sec.figures.append("open_loop_mse.png")
    ex = res[0]
    if ex.get("example") is not None and "example" in ex["wm"].get(("slots", lr["slots"]), {}) \
            and "example" in ex["wm"].get(("holistic", lr["holistic"]), {}):
        _plot_rollout(ex["example"]["frames"], ex["wm"][("slots", lr["slots"])]["example"],
                      ex["wm"][("holistic", lr["holistic"])]["example"], cfg.eval_context, out / "rollout.png")
        sec.figures.append("rollout.png")
    return sec
