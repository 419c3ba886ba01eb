"""Competence gates and retention helpers of ``lift reproduce``: validation curves, the per-method gate, the
source-retention gate, retention at a matched target accuracy, the trade-off figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from icml25.claims import Claim
from icml25.experiment import Section

from lift.config import SOURCE_TASK, Config


def retention_at(runs: list[dict[str, Any]], level: float, *, key: str = "retention_token") -> float | None:
    """Source retention where the method's target accuracy first reaches ``level`` along its lr curve (runs sorted
    by lr), linearly interpolated between the two grid points around the crossing; ``None`` if never reached."""
    pts = sorted(runs, key=lambda r: r["lr"])
    for a, b in zip([None] + pts[:-1], pts):
        if b["target"] >= level:
            if a is None or b["target"] == a["target"]:
                return float(b[key])
            w = (level - a["target"]) / (b["target"] - a["target"])
            return float(a[key] + w * (b[key] - a[key]))
    return None


def matched_retention(curves: dict[str, list[list[dict[str, Any]]]], *, key: str = "retention_token"
                      ) -> tuple[list[float], dict[str, list[float | None]]]:
    """Per-seed retention at matched target accuracy: ``curves[method][seed]`` is that seed's lr curve (runs with
    ``lr``, ``target`` and ``key``). On each seed the level is the highest target accuracy *every* method reaches
    on its curve; each method's retention is :func:`retention_at` that level. Returns ``(levels, {method:
    [retention per seed]})``."""
    n = len(next(iter(curves.values())))
    levels = [min(max(p["target"] for p in curves[m][i]) for m in curves) for i in range(n)]
    return levels, {m: [retention_at(curves[m][i], levels[i], key=key) for i in range(n)] for m in curves}


def _tradeoff_plot(grid: dict[str, list[dict[str, Any]]], level: float | None, path: Path) -> None:
    """Target accuracy vs graded source retention over each method's lr grid (first seed): forgetting trade-off."""
    from icml25.plots import save_figure
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 4.5))
    ax = fig.add_subplot()
    for name, runs in grid.items():
        runs = sorted(runs, key=lambda r: r["lr"])
        ax.plot([r["retention_token"] for r in runs], [r["target"] for r in runs], marker="o",
                lw=2.5 if name == "lift" else 1.0, label=name)
    if level is not None:
        ax.axhline(level, color="grey", ls=":", lw=1, label="matched target accuracy")
    ax.set_xlabel("source retention (answer-token accuracy after / before)")
    ax.set_ylabel("target exact match (held-out)")
    ax.set_title("one point per lr of the grid (first seed)")
    ax.legend(fontsize=7)
    save_figure(fig, path)


_PAPERS = {
    "full_ft": "LIFT beats Full FT on reasoning SFT (paper Tab. 1-2: higher average accuracy than Full FT on "
               "arithmetic and commonsense reasoning with LLaMA/Mistral models)",
    "lora": "LIFT beats LoRA and other PEFT at equal budget (paper Tab. 1-2)",
    "magnitude": "magnitude-based sparse FT is poor before rank reduction, strong after (paper Sec. 3)",
    "random": "principal weights beat random sparse weights at equal budget (paper ablations)",
    "lift_static": "dynamic mask updates help vs. a static principal mask (paper Sec. 3, update interval)",
    "lift_smallest": "paper defines principal weights as the LARGEST entries of the low-rank approximation; "
                     "the released scripts select the smallest",
    "gradient": "official code's training-statistics masks (grad_mag / momentum / movement_v2); the paper "
                "reports principal weights as the best selection criterion (Sec. 3)",
}


def val_curves(runs: list[dict[str, Any]], cfg: Config) -> list[Any]:
    """The validation curves (:class:`icml25.train.Curve`, one per seed) of ``runs``; ``[]`` without curves. The
    metric is an exact-match rate, so its ceiling is 1: a curve that reaches it (within the plateau threshold) has
    no room left to improve and counts as plateaued even when it got there inside the last window."""
    from icml25.train import Curve

    return [Curve(steps=list(r["curve"]["steps"]), values=list(r["curve"]["values"]), min_delta=cfg.plateau_delta,
                  ceiling=1.0)
            for r in runs if r.get("curve") and r["curve"]["steps"]]


def gate_name(method: str, task: str) -> str:
    """The claim text of ``method``'s competence gate on ``task``."""
    return f"{method} learned the target task ({task}): validation plateaued, beats the prior model"


def method_gates(sec: Section, M: dict[str, dict[str, list[Any]]], cfg: Config, target_before: float, *,
                 scale: str = "") -> dict[str, str]:
    """One gate claim per method of ``M`` (per-seed lists with ``target`` and ``curve``): its validation curves
    plateaued (:func:`icml25.train.plateau_check`, last 3 evaluations) and its held-out exact match beats the
    prior model's (no fine-tuning) by more than ``cfg.gate_margin``. Returns ``{method: gate claim text}``."""
    out = {}
    for name, r in M.items():
        runs = [{"curve": cv} for cv in r.get("curve", [])]
        curves = val_curves(runs, cfg)
        g = sec.add(Claim.gate(
            claim=gate_name(name, cfg.target_task),
            metric=f"{cfg.target_task} exact match (held-out operands); validation exact match every "
                   f"{cfg.curve_every} steps",
            ours=[float(v) for v in r["target"]], controls={"prior model (no fine-tuning)": float(target_before)},
            curves=curves or None, margin=cfg.gate_margin,
            note=f"margin {cfg.gate_margin:g} over the prior model; plateau: best validation exact match rose by at "
                 f"most max({cfg.plateau_delta:g}, seed sd of the bests) over the last 3 evaluations"
                 + (f"; {scale}" if scale else "")))
        out[name] = g.claim
    return out


def retention_gate(sec: Section, M: dict[str, dict[str, list[Any]]], cfg: Config, source_before: float) -> str:
    """The gate of the retention claims: on each seed some method keeps source exact match above
    ``cfg.retention_floor`` after fine-tuning (if every method erases the source skill, comparing what is left
    says nothing about retention). Returns the gate's claim text."""
    names = list(M)
    n = len(M[names[0]]["source"])
    best = [max(float(M[m]["source"][i]) for m in names) for i in range(n)]
    who = [max(names, key=lambda m: float(M[m]["source"][i])) for i in range(n)]
    g = sec.add(Claim.gate(
        claim=f"the source skill ({SOURCE_TASK}) survives fine-tuning in at least one method",
        metric=f"{SOURCE_TASK} exact match after fine-tuning, best method on each seed",
        ours=best, controls={"source skill erased": 0.0}, margin=cfg.retention_floor,
        note=f"source exact match before fine-tuning {source_before:.3f}; best method per seed: "
             + ", ".join(who) + f"; floor {cfg.retention_floor:g}"))
    return g.claim
