"""Side-by-side reproduction on the synthetic relational database (RelGNN vs RelBench's GraphSAGE).

Runs, on one generated database and the same splits, seeds and epochs: RelGNN (paper), HeteroGraphSAGE (sum and
mean aggregation, RelBench's recipe), the ablation "composite routes, mean instead of attention", and the
no-relation floor (gradient boosting on the entity's own columns; popularity for recommendation). Measures the
issue's claims: RelGNN vs GraphSAGE at equal depth on bridge-dependent labels (ROC-AUC, MAE, MAP@10) at 1 and 2
layers, the gap on the self-FK-only control, the attention ablation's share of the gain, RelGNN against the floor,
and the training time per epoch relative to GraphSAGE.

Tuned alike (:func:`icml25.tuning.tune_alike`): on every task, each GNN at each depth picks its Adam learning rate
from :data:`LR_GRID` on the validation split (first seed, best validation epoch), and the floor picks its own knob
from a grid of the same size (:data:`GBDT_LR_GRID`, :data:`POP_LOOKBACK_GRID`); an edge choice is extended by one
step. The chosen settings then run on every seed; claims are paired one-sided t-tests over the per-seed test
numbers (:meth:`icml25.claims.Claim.compare`), the cost target a threshold test (:meth:`Claim.threshold`).
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path

import numpy as np
import torch
from icml25.claims import Claim, Report, fmt_seeds, mean_sd

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
LR_GRID = (3e-3, 1e-2, 3e-2)
"""Adam learning rates tried for every GNN (RelGNN, its ablation, GraphSAGE sum/mean) at each depth and task."""
GBDT_LR_GRID = (0.03, 0.1, 0.3)
"""Learning rates tried for the GBDT floor (entity tasks): as many points as the GNNs' grid."""
POP_LOOKBACK_GRID = (2, 4, 8)
"""Training seed times counted by the popularity floor (recommendation): as many points as the GNNs' grid."""
PLANS = {
    "smoke": dict(num_users=30, num_items=15, num_windows=8, epochs=1, seeds=[0], channels=16, heads=2, grid=1,
                  runs={"user-churn": [("relgnn", 1), ("sage", 1), ("relgnn-mean", 1), ("sage-mean", 1)],
                        CONTROL: [("relgnn", 1), ("sage", 1)]}),
    "quick": dict(num_users=80, num_items=40, num_windows=10, epochs=4, seeds=[0, 1, 2], channels=16, heads=2,
                  grid=3, runs={"user-churn": [("relgnn", 1), ("sage", 1), ("relgnn-mean", 1)],
                                CONTROL: [("relgnn", 1), ("sage", 1)]}),
    "full": dict(num_users=160, num_items=60, num_windows=12, epochs=8, seeds=[0, 1, 2, 3, 4], channels=32, heads=2,
                 grid=3, runs={"user-churn": ALL6, "user-ltv": ALL6[:4], "user-item-purchase": ALL6[:4],
                               CONTROL: [("relgnn", 1), ("sage", 1)]}),
}


def _grids(n: int) -> tuple[dict, dict, dict]:
    """The GNN, GBDT and popularity grids of ``n`` points (n = 1: the middle point of each, for the smoke run)."""
    if n == 1:
        return {"lr": [LR_GRID[1]]}, {"learning_rate": [GBDT_LR_GRID[1]]}, {"lookback": [POP_LOOKBACK_GRID[1]]}
    return {"lr": list(LR_GRID)}, {"learning_rate": list(GBDT_LR_GRID)}, {"lookback": list(POP_LOOKBACK_GRID)}


_fmt = partial(fmt_seeds, spec=".3f", sd_spec=".3f")  # mean ± sd over seeds, one table cell


def _label(gnn: str, L: int) -> str:
    return f"{MODEL_NAMES[gnn]}, L={L}"


FLOOR = "no-relation floor"


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    from icml25.plots import grouped_bars, learning_curves
    from icml25.tuning import selections_table, tune_alike
    from tqdm.auto import tqdm

    from relgnn.baselines import floor_predictions
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
    gnn_grid, gbdt_grid, pop_grid = _grids(plan["grid"])
    extend = 1 if plan["grid"] > 1 else 0
    report.notes.append(
        f"mode={mode}; synthetic database {sizes}; {len(seeds)} seed(s) {seeds} (model seeds on one generated "
        f"database, same splits for every model); {plan['epochs']} epochs, channels {plan['channels']}, heads "
        f"{plan['heads']}; entity tasks on full-graph time snapshots, recommendation on temporal 2-hop samples "
        "(fan-out 32, 16) with the ID-GNN readout")
    report.notes.append(
        f"tuned alike on the validation split (seed {seeds[0]}, best validation epoch): every GNN at each depth gets "
        f"Adam lr in {gnn_grid['lr']}; the floor gets as many points (GBDT learning_rate in "
        f"{gbdt_grid['learning_rate']}, popularity lookback in {pop_grid['lookback']} training seed times); a choice "
        f"at a grid edge is extended by {extend} step; the chosen settings then run on every seed")

    n_runs = sum(len(r) for r in plan["runs"].values())
    bar = tqdm(total=n_runs * (len(gnn_grid["lr"]) + len(seeds) - 1), desc="relgnn reproduce", disable=None)
    res: dict = {}  # (task, gnn, L) -> list of FitResult over seeds (chosen lr)
    floors, ceilings, metric_of, hib, selections, chosen_lr = {}, {}, {}, {}, {}, {}
    for task_name, runs in plan["runs"].items():
        task = sdb.tasks[task_name]
        graph = build_graph(task.get_db())
        td = prepare_task(task, graph, db=task.get_db(upto_test_timestamp=False))
        metric_of[task_name], hib[task_name] = td.metric, td.higher_is_better
        num_dst = graph.num_nodes(td.dst) if td.dst else None
        cache: dict = {}

        def run_fit(gnn, L, lr, s, graph=graph, td=td, cache=cache, task_name=task_name):
            key = (gnn, L, float(lr), s)
            if key not in cache:
                cfg = FitConfig(gnn=gnn, num_layers=L, channels=plan["channels"], num_heads=plan["heads"],
                                epochs=plan["epochs"], lr=float(lr), seed=s)
                r = fit(graph, td, cfg)
                r.model, r.test_pred = None, None
                cache[key] = r
                bar.set_postfix_str(f"{task_name} {gnn} L{L} lr {lr:g} seed {s}: val {r.val:.3f}")
                bar.update()
            return cache[key]

        def floor_score(params, split, s, graph=graph, td=td, num_dst=num_dst):
            pred = floor_predictions(graph, td, split, seed=s, **params)
            return evaluate_predictions(td, split, pred, num_dst=num_dst)

        competitors = {_label(g, L): ((lambda p, g=g, L=L: run_fit(g, L, p["lr"], seeds[0]).val), gnn_grid)
                       for g, L in runs}
        competitors[FLOOR] = ((lambda p: floor_score(p, "val", seeds[0])),
                              pop_grid if td.kind == "recommendation" else gbdt_grid)
        sel = tune_alike(competitors, higher_is_better=td.higher_is_better, extend=extend)
        selections[task_name] = sel
        for g, L in runs:
            lr = sel[_label(g, L)].params["lr"]
            chosen_lr[(task_name, g, L)] = lr
            res[(task_name, g, L)] = [run_fit(g, L, lr, s) for s in seeds]
        floors[task_name] = [floor_score(sel[FLOOR].params, "test", s) for s in seeds]
        if td.kind == "binary":
            test_table = task.get_table("test", mask_input_cols=False, db=task.get_db(upto_test_timestamp=False))
            bs = bayes_scores(sdb, task_name, test_table)
            ceilings[task_name] = evaluate_predictions(td, "test", bs) if bs is not None else None
        graph.cache.clear()
    bar.close()

    def test_vals(task, gnn, L):
        return [r.test for r in res.get((task, gnn, L), [])]

    def tuned_note(task, *names):
        return "; ".join(selections[task][n].note() for n in names if n in selections[task])

    # ---- claims: RelGNN vs GraphSAGE at equal depth on bridge-dependent labels (paired by model seed)
    for task_name in BRIDGE:
        for L in (1, 2):
            o, b = test_vals(task_name, "relgnn", L), test_vals(task_name, "sage", L)
            if not o or not b:
                continue
            paper = PAPER_AUC if task_name == "user-churn" else PAPER_MAE if task_name == "user-ltv" else PAPER_MAP
            report.add(Claim.compare(
                claim=f"RelGNN beats GraphSAGE at {L} layer(s) on a bridge-dependent label ({task_name})",
                metric=f"test {metric_of[task_name]}", ours=o, baseline=b, baseline_name=f"GraphSAGE (sum), L={L}",
                paper=paper, kind="paper", higher_is_better=hib[task_name], paired=True,
                note="label needs item columns behind the purchases bridge; "
                     + tuned_note(task_name, _label("relgnn", L), _label("sage", L))))
    # ---- control: no composite-route gain on the self-FK-only table (one-sided, margin 0.03 ROC-AUC)
    o, b = test_vals(CONTROL, "relgnn", 1), test_vals(CONTROL, "sage", 1)
    if o and b:
        report.add(Claim.compare(
            claim="No gain on the self-FK-only control: GraphSAGE is not worse than RelGNN by more than 0.03 "
                  "ROC-AUC (ours = GraphSAGE here)",
            metric="test roc_auc", ours=b, baseline=o, baseline_name="RelGNN, L=1", paper=PAPER_STACK,
            kind="paper", margin=-0.03, paired=True,
            note="posts only have dim-dim routes (self-FK isolated); "
                 + tuned_note(CONTROL, _label("relgnn", 1), _label("sage", 1))))
    # ---- ablation: attention's share of the gain
    for task_name in BRIDGE:
        o, m, b = (test_vals(task_name, g, 1) for g in ("relgnn", "relgnn-mean", "sage"))
        if not (o and m and b):
            continue
        sign = 1 if hib[task_name] else -1
        gain = sign * (mean_sd(o)[0] - mean_sd(b)[0])
        att = sign * (mean_sd(o)[0] - mean_sd(m)[0])
        share = (f"share of the mean RelGNN−GraphSAGE gain due to attention: {att / gain:.0%}; " if gain > 1e-12
                 else "RelGNN has no mean gain over GraphSAGE here; ")
        report.add(Claim.compare(
            claim=f"Attention matters at 1 layer ({task_name}): RelGNN beats its ablation with mean instead of "
                  "attention",
            metric=f"test {metric_of[task_name]}", ours=o, baseline=m, baseline_name="RelGNN, mean instead of attention",
            paper="paper: attention over fact rows is part of the composite operator (no ablation number transcribed)",
            kind="paper", higher_is_better=hib[task_name], paired=True,
            note=share + tuned_note(task_name, _label("relgnn", 1), _label("relgnn-mean", 1))))
    # ---- RelGNN vs the no-relation floor (tuned GBDT on the entity's own columns / tuned popularity)
    for task_name in BRIDGE:
        o = test_vals(task_name, "relgnn", 1)
        if not o:
            continue
        report.add(Claim.compare(
            claim=f"RelGNN (1 layer) beats the no-relation floor ({task_name})",
            metric=f"test {metric_of[task_name]}", ours=o, baseline=floors[task_name],
            baseline_name="GBDT on own columns" if task_name != "user-item-purchase" else "popularity",
            paper="paper / RelBench: GNNs beat LightGBM on the entity's own columns on most tasks (not transcribed)",
            kind="paper", higher_is_better=hib[task_name], paired=True,
            note="the floor is deterministic given its knobs (same value on every seed); "
                 + tuned_note(task_name, _label("relgnn", 1), FLOOR)))
    # ---- cost: epoch time relative to GraphSAGE at equal depth (CPU seconds; same task, seed and lr grid point)
    for L in (1, 2):
        ratios = []
        for task_name in plan["runs"]:
            a, b = res.get((task_name, "relgnn", L)), res.get((task_name, "sage", L))
            if a and b:
                ratios += [np.mean(x.epoch_cpu_seconds) / np.mean(y.epoch_cpu_seconds) for x, y in zip(a, b)]
        if ratios:
            report.add(Claim.threshold(
                claim=f"RelGNN's training time per epoch stays within 2x of GraphSAGE's at {L} layer(s)",
                metric="CPU-seconds per epoch, RelGNN / GraphSAGE", ours=ratios, threshold=2.0,
                paper="issue target: extra cost within 2x of GraphSAGE at equal depth", kind="target",
                higher_is_better=False, note="one value per (task, seed) pair, 1 torch thread"))
    # ---- tables
    cols, _ = selections_table(next(iter(selections.values())))
    tuned_rows = []
    for task_name, sel in selections.items():
        tuned_rows += [[task_name, *r] for r in selections_table(sel)[1]]
    report.add_table("hyper-parameters chosen on the validation split", ["task", *cols], tuned_rows)
    rows = []
    for task_name, runs in plan["runs"].items():
        for gnn, L in runs:
            rows.append([task_name, metric_of[task_name], MODEL_NAMES[gnn], L, f"{chosen_lr[(task_name, gnn, L)]:g}",
                         _fmt(test_vals(task_name, gnn, L))])
        fp = selections[task_name][FLOOR].params
        rows.append([task_name, metric_of[task_name], "no-relation floor (GBDT / popularity)", 0,
                     ", ".join(f"{k}={v:g}" for k, v in fp.items()), _fmt(floors[task_name])])
        if ceilings.get(task_name) is not None:
            rows.append([task_name, metric_of[task_name], "Bayes ceiling (generator's probabilities)", 0, "—",
                         f"{ceilings[task_name]:.3f}"])
    report.add_table("test metric (mean ± sd over seeds)", ["task", "metric", "model", "layers", "chosen", "test"], rows)
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
