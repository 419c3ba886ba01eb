"""Competence gates (every method over all its rows to a plateau, beating p⁰ on its own objective) and held-out
greedy accuracy of PIPA-M/N vs the tuned baselines in the four data settings."""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Claim, mean_sd
from icml25.experiment import Section
from icml25.plots import grouped_bars
from icml25.tuning import selections_table

from pipa.config import Budget
from pipa.reproduce.common import (
    METHODS,
    OBJECTIVE,
    PAPER,
    PIPA_RUNS,
    SETTINGS,
    gate_name,
    kind_of,
    reuse,
    shared_run,
    short,
    snote,
)

PAIRS = [
    ("PIPA-M (paired)", "DPO", "paired answer-level"),
    ("PIPA-N (paired)", "DPO", "paired answer-level"),
    ("PIPA-M (paired)", "IPO", "paired answer-level"),
    ("PIPA-N (paired)", "IPO", "paired answer-level"),
    ("PIPA-M (unpaired)", "KTO", "unpaired answer-level"),
    ("PIPA-N (unpaired)", "KTO", "unpaired answer-level"),
    ("PIPA-M (step-paired)", "Step-DPO", "paired step-level"),
    ("PIPA-N (step-paired)", "Step-DPO", "paired step-level"),
    ("PIPA-M (step)", "Step-KTO", "unpaired step-level"),
    ("PIPA-N (step)", "Step-KTO", "unpaired step-level"),
]


def gates(b: Budget, seeds: list[int], out: Path) -> Section:
    """One gate per method: ≥ 1 epoch over all its rows, validation plateau, and its own objective on held-out test
    rows below the prior's (step 0, policy = p⁰), paired by seed."""
    res = shared_run(b, seeds, out)
    R = res["results"]
    sec = Section("gates")
    for name, setting, kind in METHODS:
        r = R[name]
        sec.add(Claim.gate(
            claim=gate_name(name), metric=f"{OBJECTIVE[kind]} on held-out test rows (lower is better)",
            ours=r["test_best"], controls={"prior p⁰ (step 0, same objective)": r["test_prior"]},
            curves=r["curves"], higher_is_better=False, paired=True,
            note=(f"{setting} rows, all of them, batch {b.batch_size}: {short(mean_sd(r['rows'])[0])} rows, "
                  f"{short(mean_sd(r['steps'])[0])} steps = {short(mean_sd(r['epochs'])[0])} epochs on average "
                  f"(min 1, max {b.max_epochs}); stopped by {', '.join(r['stopped_by'])}; best validation "
                  f"checkpoint kept (mean step {short(mean_sd(r['best_step'])[0])}); validation rows sampled from "
                  "p⁰ on the validation prompts, test rows on test prompts")))
    rows = []
    for name, setting, kind in METHODS:
        r = R[name]
        rows.append([name, setting, OBJECTIVE[kind], round(mean_sd(r["rows"])[0], 1), round(mean_sd(r["epochs"])[0], 2),
                     round(mean_sd(r["steps"])[0], 1), "/".join(sorted(set(r["stopped_by"]))),
                     round(mean_sd(r["val_prior"])[0], 4), round(mean_sd(r["val_best"])[0], 4),
                     round(mean_sd(r["test_prior"])[0], 4), round(mean_sd(r["test_best"])[0], 4)])
    sec.table("training to a plateau (own objective; mean over seeds)",
              ["method", "rows", "objective", "train rows", "epochs", "steps", "stopped by", "val loss p⁰",
               "val loss best", "test loss p⁰", "test loss best"], rows)
    fig = _curves_figure(R, Path(out) / "curves.png")
    if fig is not None:
        sec.figures.append(fig)
    sec.notes.append(f"validation / test rows per setting (own-objective evaluation): {res['eval_rows']}")
    return sec


def _curves_figure(R: dict, path: Path) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover
        return None
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.2))
    for ax, setting in zip(axes, SETTINGS):
        for name, st, _ in METHODS:
            if st != setting:
                continue
            c = R[name]["curves"][0]
            v0 = c.values[0] if c.values[0] != 0 else 1.0
            epoch = R[name]["steps"][0] / max(R[name]["epochs"][0], 1e-9)
            ax.plot([s / epoch for s in c.steps], [v / v0 for v in c.values], marker=".", label=name)
        ax.set_title(setting)
        ax.set_xlabel("epochs")
        ax.axhline(1.0, color="grey", lw=0.5)
        ax.legend(fontsize=6)
    axes[0].set_ylabel("val loss / p⁰'s (own objective)")
    fig.suptitle("validation curves, first seed (early stopping keeps the best point)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=70)
    plt.close(fig)
    return path.name


def accuracy(b: Budget, seeds: list[int], out: Path) -> Section:
    """PIPA-M/N vs the tuned baselines in the four settings, and vs the prior they start from."""
    res = shared_run(b, seeds, out)
    R, sel, prior = res["results"], res["selections"], res["prior_accuracy"]
    reused = reuse(b)
    sec = Section("accuracy")
    acc = lambda m: R[m]["accuracy"]  # noqa: E731
    for ours, base, setting in PAIRS:
        sec.add(Claim.compare(
            claim=f"{ours} beats tuned {base} ({setting})", metric="held-out greedy accuracy (test prompts)",
            ours=acc(ours), baseline=acc(base), baseline_name=base, paper=PAPER, kind="paper", paired=True,
            gates=[gate_name(ours), gate_name(base)],
            note=f"{snote(sel, ours, reused)}; {snote(sel, base, reused)}; same seeds and data (paired t-test)"))
    for name in PIPA_RUNS:
        sec.add(Claim.threshold(
            claim=f"{name} improves on the prior p⁰ it starts from", metric="held-out greedy accuracy (test prompts)",
            ours=acc(name), threshold=prior, kind="paper", gates=[gate_name(name)],
            paper="alignment improves the SFT model (GSM8K/MATH)",
            note=f"threshold = p⁰'s accuracy on the same test prompts (p⁰ is deterministic for its seed); "
                 f"{snote(sel, name, reused)}"))
    cols, rows = selections_table(sel)
    rows = [[f"{r[0]} (reuses {reused[r[0]]})" if r[0] in reused else r[0], *r[1:]] for r in rows]
    sec.table("hyper-parameters chosen on the validation prompts", cols, rows)
    rows = [["prior p⁰ (no alignment)", "—", "—", round(prior, 4), 0.0, None, None, None, None, None]]
    for name, setting, _kind in METHODS:
        r = R[name]
        m, sd = mean_sd(r["accuracy"])
        chosen = ", ".join(f"{k}={short(v)}" for k, v in sel[name].params.items())
        g = round(mean_sd(r["g_auc"])[0], 4) if "g_auc" in r else None
        post = round(mean_sd(r["posterior_auc"])[0], 4) if "posterior_auc" in r else None
        rew = round(mean_sd(r["reward_auc"])[0], 4) if "reward_auc" in r else None
        rows.append([name, setting, chosen, round(m, 4), round(sd, 4), round(mean_sd(r["epochs"])[0], 2),
                     round(mean_sd(r["seconds_per_step"])[0] * 1000, 1), g, post, rew])
    sec.table("all methods (test prompts, mean over seeds)",
              ["method", "data", "chosen", "accuracy", "sd", "epochs", "ms/step", "g AUC", "posterior AUC",
               "implicit-reward AUC"], rows)
    sec.table("data", list(res["data"][0].keys()), [list(d.values()) for d in res["data"]])
    fig = grouped_bars(
        {setting: {name: R[name]["accuracy"] for name, st, _ in METHODS if st == setting} for setting in SETTINGS},
        Path(out) / "accuracy.png", ylabel="held-out greedy accuracy", title="PIPA vs tuned trl baselines (tiny LM)")
    sec.figures.append(fig.name)
    sec.notes.append(f"prior p⁰ held-out greedy accuracy (test prompts): {prior:.3f}")
    sec.notes.append(
        f"tuning: every method on a grid of {sel['DPO'].grid_size} points (baselines lr {list(b.baseline_lrs)} × β "
        f"{list(b.betas)}; PIPA lr {list(b.pipa_lrs)}; extend={b.extend}), first seed's training data, each trial "
        f"trained to its plateau, scored by greedy accuracy on {res['n_val']} validation prompts disjoint from the "
        f"{res['n_test']} test prompts; "
        + (f"tuned in the answer-level settings, reused at step level ({', '.join(f'{k} ← {v}' for k, v in reused.items())})"
           if reused else "every setting tuned on its own grid, the step-level ones included"))
    sec.notes.append(f"budget: {b}")
    assert all(kind_of(n).startswith("pipa") for n in PIPA_RUNS)
    return sec
