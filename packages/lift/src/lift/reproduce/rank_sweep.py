"""LIFT's filter-rank sweep (:func:`rank_sweep`) at a fixed budget k."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from icml25.claims import Claim, mean_sd
from icml25.experiment import Section

from lift.config import SOURCE_TASK, Config
from lift.reproduce.gates import method_gates
from lift.reproduce.runs import _CACHE, LR_CENTRES, _setup, run_many


def rank_sweep(cfg: Config, seeds: list[int], out: Path) -> Section:
    """LIFT's filter rank r_f swept at fixed k (budget r_b) on every seed, at LIFT's tuned knobs (lr, mask interval)."""
    sec = Section("rank sweep")
    env = _setup(cfg)
    comp = _CACHE.get("compare")
    tuned = comp is not None and "lift" in comp["methods"]
    lift_params = dict(comp["methods"]["lift"]["params"][0]) if tuned else {"lr": LR_CENTRES["lift"]}
    min_dim = min(min(s) for s in (comp["shapes"] if comp else [(cfg.hidden_size, cfg.hidden_size)]))
    chosen_rf = int(comp.get("filter_rank", cfg.filter_rank)) if tuned else cfg.filter_rank
    # first-seed runs at LIFT's knobs from the comparison's r_f choice (same runs: reused, not rerun)
    seed0 = {int(x["filter_rank"]): x for x in comp.get("rf_select", [])} if tuned else {}
    runs: dict[str, list[dict[str, Any]]] = {}
    todo: list[tuple[str, int]] = []
    ranks = sorted({int(r) for r in cfg.sweep_ranks if r} | {chosen_rf}) + [0] * (0 in cfg.sweep_ranks)
    for r in ranks:
        label = "full" if r == 0 or r >= min_dim else str(r)
        if label in runs or label in dict(todo):
            continue
        if tuned and r == chosen_rf:  # the comparison's LIFT runs (same knobs)
            M = comp["methods"]["lift"]
            runs[label] = [{k: M[k][i] for k in ("target", "retention_token", "retention", "curve")}
                           for i in range(len(seeds))]
            continue
        todo.append((label, r))
    # full rank: W' = W, the |W| mask (tested), run as the magnitude method with LIFT's knobs
    jobs: list[dict[str, Any]] = []
    spans = []
    for label, r in todo:
        have = seed0.get(r) if label != "full" else None
        todo_seeds = seeds[1:] if have is not None else seeds
        spans.append((label, have, len(jobs), len(todo_seeds)))
        jobs += [{"method": "magnitude" if label == "full" else "lift", "params": lift_params, "seed": s,
                  "filter_rank": None if label == "full" else r} for s in todo_seeds]
    recs = run_many(jobs, cfg)
    for label, have, start, n in spans:
        got = ([have] if have is not None else []) + recs[start: start + n]
        if any(x.get("diverged") for x in got):
            raise FloatingPointError(f"rank sweep r_f={label} diverged at LIFT's tuned knobs {lift_params}")
        runs[label] = got
    order = {str(r) if r else "full": i for i, r in enumerate(ranks)}
    runs = dict(sorted(runs.items(), key=lambda kv: order.get(kv[0], len(order))))
    labels = list(runs)
    rows = []
    for lab in labels:
        tm, tsd = mean_sd([x["target"] for x in runs[lab]])
        km, ksd = mean_sd([x["retention_token"] for x in runs[lab]])
        rows.append([lab, f"{tm:.3f} ± {tsd:.3f}", f"{km:.3f} ± {ksd:.3f}", len(runs[lab])])
    knob_s = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in lift_params.items())
    sec.table(f"rank sweep (r_b={cfg.budget_rank}, {knob_s} = LIFT's tuned knobs)",
              ["r_f", "target acc", "retention (answer tokens)", "seeds"], rows)
    small = str(chosen_rf)
    how = (f"r_f={small} is the comparison's r_f, chosen on the validation split (first seed) from "
           "{" + ", ".join(str(r) for r in sorted(seed0)) + "}" if seed0 else
           f"r_f={small} is the comparison's pre-set r_f (not picked from the sweep)")
    if small in runs and "full" in runs:
        # gates: the small-r_f runs are the comparison's LIFT runs (its gate); full rank is run here at LIFT's knobs
        cg = _CACHE.get("gates", {})
        full_gate = method_gates(sec, {"full rank (magnitude mask at LIFT's knobs)": {
            "target": [x["target"] for x in runs["full"]], "curve": [x.get("curve") for x in runs["full"]]}},
            cfg, env["befores"]["target"])
        acc_gates = [g for g in (cg.get("lift"),) if g] + list(full_gate.values())
        ret_gates = acc_gates + [g for g in (cg.get("_retention"),) if g]
        sec.add(Claim.compare(
            claim=f"a small filter rank (r_f={small}) beats full rank (magnitude) on target accuracy",
            metric=f"{cfg.target_task} exact match (held-out operands)",
            ours=[x["target"] for x in runs[small]], baseline=[x["target"] for x in runs["full"]],
            baseline_name="r_f = full rank", kind="paper", paired=True,
            paper="principal weights emerge after rank reduction: the top-k of a low-rank approximation beat the "
                  "top-k of W itself (paper title, Sec. 3)", gates=acc_gates,
            note=f"{how}; every r_f at LIFT's tuned "
                 f"knobs {knob_s} (one setting for the sweep, not tuned per r_f), {cfg.steps} steps, "
                 f"{len(seeds)} seeds paired"))
        sec.add(Claim.compare(
            claim=f"a small filter rank (r_f={small}) retains more source knowledge than full rank",
            metric=f"{SOURCE_TASK} answer-token retention", ours=[x["retention_token"] for x in runs[small]],
            baseline=[x["retention_token"] for x in runs["full"]], baseline_name="r_f = full rank", kind="paper",
            paired=True, paper="rank reduction is what makes principal weights good (paper Sec. 3)", gates=ret_gates,
            note=f"same runs as the accuracy claim; {knob_s}"))
    from icml25.plots import save_figure
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 4.0))
    ax = fig.add_subplot()
    xs = list(range(len(labels)))
    for key, name in (("target", "target exact match"), ("retention_token", "source retention (tokens)")):
        means = [mean_sd([x[key] for x in runs[lab]]) for lab in labels]
        ax.errorbar(xs, [m for m, _ in means], yerr=[s for _, s in means], marker="o", capsize=3, label=name)
    ax.set_xticks(xs, labels)
    ax.set_xlabel("filter rank r_f (full = magnitude)")
    ax.set_ylabel("fraction")
    ax.set_title(f"LIFT rank sweep at fixed k (r_b={cfg.budget_rank}), mean ± sd over {len(seeds)} seeds")
    ax.legend(fontsize=8)
    save_figure(fig, out / "rank_sweep.png")
    sec.figures.append("rank_sweep.png")
    return sec
