"""Side-by-side reproduction on the synthetic relational database (RelGNN vs RelBench's GraphSAGE).

Runs, on one generated database and the same splits, seeds and epochs: RelGNN (paper), HeteroGraphSAGE (sum and
mean aggregation, RelBench's recipe), the ablation "composite routes, mean instead of attention", and the
no-relation floor (gradient boosting on the entity's own columns; popularity for recommendation). Measures the
issue's claims: RelGNN vs GraphSAGE at equal depth on bridge-dependent labels (ROC-AUC, MAE, MAP@10) at 1 and 2
layers, the gap on the self-FK-only control, the attention ablation's share of the gain, and the training time
per epoch relative to GraphSAGE.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch
from icml25.claims import Claim, Report, mean_sd

PAPER_AUC = ("RelBench entity classification, ROC-AUC x100 averaged over 12 tasks: RelGNN 78.06 vs GraphSAGE 75.83 "
             "(second-hand transcription of the paper's table); largest gain rel-f1 driver-top3 85.69 vs 75.54")
PAPER_MAE = "rel-f1 driver-position MAE: RelGNN 3.798 vs GraphSAGE 4.022 (second-hand)"
PAPER_MAP = "paper: RelGNN improves on ID-GNN on most of the 9 RelBench recommendation tasks (numbers not transcribed)"
PAPER_STACK = "paper: smallest gain on rel-stack (self-FK structure): user-engagement 90.75 vs 90.59 ROC-AUC"

BRIDGE = ("user-churn", "user-ltv", "user-item-purchase")
CONTROL = "post-reply"
MODEL_NAMES = {"relgnn": "RelGNN", "sage": "GraphSAGE (sum)", "sage-mean": "GraphSAGE (mean)",
               "relgnn-mean": "RelGNN, mean instead of attention"}

ALL6 = [("relgnn", 1), ("relgnn", 2), ("sage", 1), ("sage", 2), ("sage-mean", 1), ("relgnn-mean", 1)]
PLANS = {
    "smoke": dict(num_users=30, num_items=15, num_windows=8, epochs=1, seeds=[0], channels=16, heads=2,
                  runs={"user-churn": [("relgnn", 1), ("sage", 1), ("relgnn-mean", 1), ("sage-mean", 1)],
                        CONTROL: [("relgnn", 1), ("sage", 1)]}),
    "quick": dict(num_users=100, num_items=50, num_windows=12, epochs=5, seeds=[0], channels=32, heads=2,
                  runs={"user-churn": ALL6, "user-ltv": [("relgnn", 1), ("sage", 1)],
                        "user-item-purchase": [("relgnn", 1), ("sage", 1)], CONTROL: [("relgnn", 1), ("sage", 1)]}),
    "full": dict(num_users=160, num_items=60, num_windows=12, epochs=8, seeds=[0, 1, 2], channels=32, heads=2,
                 runs={"user-churn": ALL6, "user-ltv": ALL6[:4], "user-item-purchase": ALL6[:4],
                       CONTROL: [("relgnn", 1), ("sage", 1)]}),
}


def _fmt(vals):
    m, s = mean_sd(vals)
    return f"{m:.3f} ± {s:.3f}" if len(vals) > 1 else f"{m:.3f}"


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    from icml25.plots import grouped_bars, learning_curves

    from relgnn.baselines import gbdt_floor
    from relgnn.graph import build_graph
    from relgnn.synthetic import bayes_scores, make_database
    from relgnn.train import FitConfig, evaluate_predictions, fit, prepare_task

    torch.set_num_threads(1)  # one thread is faster than two on a shared 2-core machine
    mode = "smoke" if smoke else "quick" if quick else "full"
    plan = PLANS[mode]
    seeds = [seed + s for s in plan["seeds"]]
    report = Report(method="relgnn", seeds=seeds)
    t_start = time.perf_counter()
    sdb = make_database(num_users=plan["num_users"], num_items=plan["num_items"], num_windows=plan["num_windows"],
                        seed=seed)
    sizes = {k: len(t.df) for k, t in sdb.db.table_dict.items()}
    report.notes.append(f"mode={mode}; synthetic database {sizes}; {len(seeds)} seed(s) {seeds}; "
                        f"{plan['epochs']} epochs, channels {plan['channels']}, heads {plan['heads']}, Adam lr 0.01; "
                        "entity tasks on full-graph time snapshots, recommendation on temporal 2-hop samples "
                        "(fan-out 32, 16) with the ID-GNN readout")
    from tqdm.auto import tqdm

    total = sum(len(r) for r in plan["runs"].values()) * len(seeds)
    bar = tqdm(total=total, desc="relgnn reproduce", disable=None)
    res: dict = {}  # (task, gnn, L) -> list of FitResult
    floors, ceilings, metric_of, hib = {}, {}, {}, {}
    for task_name, runs in plan["runs"].items():
        task = sdb.tasks[task_name]
        graph = build_graph(task.get_db())
        td = prepare_task(task, graph, db=task.get_db(upto_test_timestamp=False))
        metric_of[task_name], hib[task_name] = td.metric, td.higher_is_better
        floors[task_name] = evaluate_predictions(td, "test", gbdt_floor(graph, td, seed=seed),
                                                 num_dst=graph.num_nodes(td.dst) if td.dst else None)
        if td.kind == "binary":
            test_table = task.get_table("test", mask_input_cols=False, db=task.get_db(upto_test_timestamp=False))
            bs = bayes_scores(sdb, task_name, test_table)
            ceilings[task_name] = evaluate_predictions(td, "test", bs) if bs is not None else None
        for gnn, L in runs:
            for s in seeds:
                cfg = FitConfig(gnn=gnn, num_layers=L, channels=plan["channels"], num_heads=plan["heads"],
                                epochs=plan["epochs"], lr=0.01, seed=s)
                r = fit(graph, td, cfg)
                r.model = None
                bar.set_postfix_str(f"{task_name} {gnn} L{L} seed {s}: {r.test:.3f}")
                bar.update()
                res.setdefault((task_name, gnn, L), []).append(r)
        graph.cache.clear()
    bar.close()

    def test_vals(task, gnn, L):
        return [r.test for r in res.get((task, gnn, L), [])]

    # ---- claims: RelGNN vs GraphSAGE at equal depth on bridge-dependent labels
    for task_name in BRIDGE:
        for L in (1, 2):
            o, b = test_vals(task_name, "relgnn", L), test_vals(task_name, "sage", L)
            if not o or not b:
                continue
            paper = PAPER_AUC if task_name == "user-churn" else PAPER_MAE if task_name == "user-ltv" else PAPER_MAP
            report.add(Claim.compare(
                claim=f"RelGNN beats GraphSAGE at {L} layer(s) on a bridge-dependent label ({task_name})",
                metric=f"test {metric_of[task_name]}", ours=o, baseline=b, baseline_name=f"GraphSAGE (sum), L={L}",
                paper=paper, higher_is_better=hib[task_name],
                note="label needs item columns behind the purchases bridge"))
    # ---- control: gap ≈ 0 on the self-FK-only table
    o, b = test_vals(CONTROL, "relgnn", 1), test_vals(CONTROL, "sage", 1)
    if o and b:
        gap = mean_sd(o)[0] - mean_sd(b)[0]
        sd = max(mean_sd(o)[1], mean_sd(b)[1], 0.0)
        tol = max(0.03, 2 * sd)
        report.add(Claim(
            claim="No gain on the self-FK-only control (|RelGNN − GraphSAGE| ≤ max(0.03, 2 sd))",
            metric="test roc_auc", ours=mean_sd(o)[0], baseline=mean_sd(b)[0], baseline_name="GraphSAGE (sum), L=1",
            holds=bool(abs(gap) <= tol), paper=PAPER_STACK, ours_sd=mean_sd(o)[1] if len(o) > 1 else None,
            baseline_sd=mean_sd(b)[1] if len(b) > 1 else None, seeds=len(o),
            note=f"gap {gap:+.3f}, tolerance {tol:.3f}; posts only have dim-dim routes (self-FK isolated)"))
    # ---- ablation: attention's share of the gain
    for task_name in BRIDGE:
        o, m, b = (test_vals(task_name, g, 1) for g in ("relgnn", "relgnn-mean", "sage"))
        if not (o and m and b):
            continue
        sign = 1 if hib[task_name] else -1
        gain = sign * (mean_sd(o)[0] - mean_sd(b)[0])
        att = sign * (mean_sd(o)[0] - mean_sd(m)[0])
        share = att / gain if abs(gain) > 1e-12 else float("nan")
        report.add(Claim.compare(
            claim=f"Attention carries part of RelGNN's gain at 1 layer ({task_name}): RelGNN beats its mean ablation",
            metric=f"test {metric_of[task_name]}", ours=o, baseline=m, baseline_name="RelGNN, mean instead of attention",
            paper="paper: attention over fact rows is part of the composite operator (no ablation number transcribed)",
            higher_is_better=hib[task_name],
            note=f"share of the RelGNN−GraphSAGE gain due to attention: {share:.0%}" if np.isfinite(share) else ""))
    # ---- cost: epoch time relative to GraphSAGE at equal depth (CPU seconds, entity tasks on snapshots)
    for L in (1, 2):
        ratios = []
        for task_name in plan["runs"]:
            a, b = res.get((task_name, "relgnn", L)), res.get((task_name, "sage", L))
            if a and b:
                ratios += [np.mean(x.epoch_cpu_seconds) / np.mean(y.epoch_cpu_seconds) for x, y in zip(a, b)]
        if ratios:
            m, s = mean_sd(ratios)
            report.add(Claim(
                claim=f"RelGNN's training time per epoch stays within 2x of GraphSAGE's at {L} layer(s)",
                metric="CPU-seconds per epoch, RelGNN / GraphSAGE", ours=m, baseline=2.0, baseline_name="2x target",
                holds=bool(m <= 2.0), paper="issue target: extra cost within 2x of GraphSAGE at equal depth",
                higher_is_better=False, ours_sd=s if len(ratios) > 1 else None, seeds=len(ratios),
                note="per (task, seed) pair, 1 torch thread"))
    # ---- tables
    rows = []
    for task_name, runs in plan["runs"].items():
        for gnn, L in runs:
            rows.append([task_name, metric_of[task_name], f"{MODEL_NAMES[gnn]}", L, _fmt(test_vals(task_name, gnn, L))])
        rows.append([task_name, metric_of[task_name], "no-relation floor (GBDT / popularity)", 0, f"{floors[task_name]:.3f}"])
        if ceilings.get(task_name) is not None:
            rows.append([task_name, metric_of[task_name], "Bayes ceiling (generator's probabilities)", 0,
                         f"{ceilings[task_name]:.3f}"])
    report.add_table("test metric (mean ± sd over seeds)", ["task", "metric", "model", "layers", "test"], rows)
    perf = []
    for (task_name, gnn, L), rs in res.items():
        perf.append([task_name, MODEL_NAMES[gnn], L, f"{np.mean([np.mean(r.epoch_seconds) for r in rs]):.2f}",
                     f"{np.mean([np.mean(r.epoch_cpu_seconds) for r in rs]):.2f}",
                     f"{np.mean([r.train_rows_per_s for r in rs]):.0f}", f"{np.mean([r.infer_rows_per_s for r in rs]):.0f}",
                     f"{np.mean([r.activation_mb for r in rs]):.1f}", rs[0].num_params])
    report.add_table("performance (same graph, per model)",
                     ["task", "model", "layers", "wall s/epoch", "CPU s/epoch", "train rows/s", "inference rows/s",
                      "activation MB (one step)", "parameters"], perf)
    # ---- figures
    bars, mae_bars = {}, {}
    for task_name, runs in plan["runs"].items():
        group = {f"{MODEL_NAMES[g]} L{L}": test_vals(task_name, g, L) for g, L in runs}
        group["floor"] = floors[task_name]
        (bars if hib[task_name] else mae_bars)[task_name] = group
    grouped_bars(bars, out / "test_metric.png", ylabel="test ROC-AUC / MAP@10 (higher is better)",
                 title="Synthetic relational DB: RelGNN vs GraphSAGE")
    report.figures.append("test_metric.png")
    if mae_bars:
        grouped_bars(mae_bars, out / "test_mae.png", ylabel="test MAE (lower is better)", title="user-ltv")
        report.figures.append("test_mae.png")
    curves = {f"{MODEL_NAMES[g]} L{L}": np.array([r.val_curve for r in res[("user-churn", g, L)]])
              for g, L in plan["runs"]["user-churn"]}
    learning_curves(curves, out / "val_curves_churn.png", xlabel="epoch", ylabel="validation ROC-AUC",
                    title="user-churn validation ROC-AUC")
    report.figures.append("val_curves_churn.png")
    report.notes.append(f"wall time {time.perf_counter() - t_start:.0f} s (shared 2-core machine)")
    return report
