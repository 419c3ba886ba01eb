"""RelGNN vs GraphSAGE (tuned alike) on the bridge tasks and on the self-FK control, and RelGNN vs the no-relation
floor; every paper claim lists the competence gates (:mod:`relgnn.reproduce.gates`) it relies on."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from icml25.claims import Claim, fmt_seeds
from icml25.experiment import Section

from relgnn.config import Config
from relgnn.reproduce.common import BRIDGE, CONTROL, FLOOR, NAMES, run_all, sel_note, tests_of
from relgnn.reproduce.gates import floor_gate_name, gate_names, gnn_gate_name

PAPER_AUC = ("RelBench entity classification, ROC-AUC x100 averaged over 12 tasks: RelGNN 78.06 vs GraphSAGE 75.83 "
             "(second-hand transcription of the paper's table); largest gain rel-f1 driver-top3 85.69 vs 75.54")
PAPER_MAE = "rel-f1 driver-position MAE: RelGNN 3.798 vs GraphSAGE 4.022 (second-hand)"
PAPER_MAP = "paper: RelGNN improves on ID-GNN on most of the 9 RelBench recommendation tasks (numbers not transcribed)"
PAPER_STACK = "paper: smallest gain on rel-stack (self-FK structure): user-engagement 90.75 vs 90.59 ROC-AUC"
PAPER_FLOOR = "paper / RelBench: GNNs beat LightGBM on the entity's own columns on most tasks (not transcribed)"
PAPER_FOR = {"user-churn": PAPER_AUC, "user-ltv": PAPER_MAE, "user-item-purchase": PAPER_MAP}
CONTROL_MARGIN = 0.01
"""The control claim: GraphSAGE is not worse than RelGNN by more than this ROC-AUC (fixed before any run)."""

_fmt = partial(fmt_seeds, spec=".3f", sd_spec=".3f")


def comparison(cfg: Config, seeds: list[int], out: Path) -> Section:
    """RelGNN vs GraphSAGE (tuned alike) on the bridge tasks and on the self-FK control."""
    info = run_all(cfg, seeds)
    s = Section("RelGNN vs GraphSAGE")
    ti = info["tasks"]
    pair = ("relgnn", "sage")
    for task in BRIDGE:
        if task not in ti or not all(m in cfg.models for m in pair):
            continue
        s.add(Claim.compare(
            claim=f"Composite message passing (RelGNN) beats GraphSAGE where a bridge table carries the label "
                  f"({task}; both tuned over lr x depth x channels, trained to a validation plateau)",
            metric=f"test {ti[task]['metric']}", ours=tests_of(info, task, "relgnn"),
            baseline=tests_of(info, task, "sage"), baseline_name="GraphSAGE (tuned alike)", paper=PAPER_FOR[task],
            kind="paper", higher_is_better=ti[task]["hib"], paired=True, gates=gate_names(info, task, pair),
            note="label depends on item columns behind the purchases bridge; "
                 + sel_note(info, task, NAMES["relgnn"], NAMES["sage"])))
    if CONTROL in ti and all(m in cfg.models for m in pair):
        s.add(Claim.compare(
            claim=f"No composite-route gain on the self-FK-only control (post-reply): GraphSAGE is not worse than "
                  f"RelGNN by more than {CONTROL_MARGIN} ROC-AUC (ours = GraphSAGE here)",
            metric="test roc_auc", ours=tests_of(info, CONTROL, "sage"), baseline=tests_of(info, CONTROL, "relgnn"),
            baseline_name="RelGNN (tuned alike)", paper=PAPER_STACK, kind="paper", margin=-CONTROL_MARGIN,
            paired=True, gates=gate_names(info, CONTROL, pair),
            note="posts only have dim-dim routes (the self-FK is isolated); "
                 + sel_note(info, CONTROL, NAMES["relgnn"], NAMES["sage"])))
    for task in cfg.tasks:
        if task == CONTROL or "relgnn" not in cfg.models:
            continue
        t = ti[task]
        s.add(Claim.compare(
            claim=f"RelGNN beats the no-relation floor ({task})", metric=f"test {t['metric']}",
            ours=tests_of(info, task, "relgnn"), baseline=info["floors"][task],
            baseline_name="GBDT on own columns" if t["kind"] != "recommendation" else "popularity",
            paper=PAPER_FLOOR, kind="paper", higher_is_better=t["hib"], paired=True,
            gates=[floor_gate_name(task)],
            note=f"the floor is deterministic given its knobs and trains on the same rows; RelGNN's own gate "
                 f"({gnn_gate_name(task, 'relgnn')!r}) adds the plateau check; "
                 + sel_note(info, task, NAMES["relgnn"], FLOOR)))
    _tables(cfg, info, s)
    s.notes.append(
        f"synthetic database {info['sizes']}; model seeds {seeds} on one generated database (same splits and "
        f"sampled sub-graphs for every model); per-table encoder {cfg.encoder} (torch-frame stypes inferred) for "
        f"every GNN; sampled mini-batch training on every training row: fan-out {list(cfg.num_neighbors)}, batch "
        f"{cfg.batch_size}, early stopping on validation (patience {cfg.patience}, at most {cfg.max_epochs} "
        f"epochs), best validation epoch; grid {dict(lr=list(cfg.lr_grid), num_layers=list(cfg.depth_grid), channels=list(cfg.channels_grid))} "
        f"for every GNN, {cfg.workers} worker process(es) with one torch thread each; run_all {info['seconds']:.0f} s")
    _figures(cfg, info, out, s)
    return s


def _tables(cfg: Config, info: dict, s: Section) -> None:
    from icml25.tuning import selections_table

    ti = info["tasks"]
    cols, rows = None, []
    for task, sel in info["selections"].items():
        c, r = selections_table(sel)
        cols = c
        rows += [[task, *x] for x in r]
    s.table("hyper-parameters chosen on the validation split", ["task", *cols], rows)
    rows = [[task, n, ", ".join(f"{k}={v:g}" for k, v in t["params"].items()),
             "past a hard bound (not fitted)" if t["score"] is None else f"{t['score']:.4g}"]
            for task, sel in info["selections"].items() for n, x in sel.items() for t in x.trials[x.grid_size:]]
    if rows:
        s.table("points added beyond the grid's edge (Config.extend), in the order tried", ["task", "method",
                "point", "validation score"], rows)
    rows = []
    for task in cfg.tasks:
        t = ti[task]
        for m in [m for m in (*cfg.models, "relgnn-mean") if (task, m) in info["per_seed"]]:
            lr, L, C = info["chosen"][(task, "relgnn" if m == "relgnn-mean" else m)]
            what = NAMES[m] + (" (ablation, RelGNN's knobs)" if m == "relgnn-mean" else "")
            rows.append([task, t["metric"], what, f"lr={lr:g}, L={L}, C={C}", _fmt(tests_of(info, task, m))])
        enc, eabl = info["encoder_ablation"]
        if task in eabl:
            lr, L, C = info["chosen"][(task, "relgnn")]
            rows.append([task, t["metric"], f"RelGNN, {enc.split('|')[1]} encoder (ablation, RelGNN's knobs)",
                         f"lr={lr:g}, L={L}, C={C}", _fmt(tests_of(info, task, enc))])
        fp = info["selections"][task][FLOOR].params
        rows.append([task, t["metric"], "no-relation floor (GBDT on own columns / popularity)",
                     ", ".join(f"{k}={v:g}" for k, v in fp.items()), _fmt(info["floors"][task])])
        rows.append([task, t["metric"], f"trivial control: {t['control_name']}", "—", f"{t['control']:.3f}"])
        if t["ceiling"] is not None:
            what = "Bayes ceiling (conditional median of the generator's exact law)" if t["kind"] == "regression" \
                else "Bayes ceiling (generator's probabilities)"
            rows.append([task, t["metric"], what, "—", f"{t['ceiling']:.3f}"])
    s.table("test metric (mean ± sd over seeds)", ["task", "metric", "model", "chosen", "test"], rows)
    s.table("data (every model and the floor train on the same rows: all training rows)",
            ["task", "train rows (used by every model)", "val rows", "test rows"],
            [[t, f"{v['rows']['train']} ({v['train_rows_used']})", str(v["rows"]["val"]), str(v["rows"]["test"])]
             for t, v in ti.items()])
    first = next(iter(ti.values()))
    s.table("column types (torch-frame's stype inference, as RelBench's get_stype_proposal)", ["table", "columns"],
            [[tab, ", ".join(f"{c}: {st}" for c, st in cols.items())] for tab, cols in first["stypes"].items()])


def _figures(cfg: Config, info: dict, out: Path, s: Section) -> None:
    import numpy as np
    from icml25.plots import grouped_bars, learning_curves

    bars, mae = {}, {}
    for task in cfg.tasks:
        t = info["tasks"][task]
        group = {NAMES[m]: tests_of(info, task, m) for m in cfg.models}
        group["floor"] = info["floors"][task]
        (bars if t["hib"] else mae)[task] = group
    grouped_bars(bars, out / "test_metric.png", ylabel="test ROC-AUC / MAP@10 (higher is better)",
                 title="Synthetic relational DB: RelGNN vs GraphSAGE (tuned alike)")
    s.figures.append("test_metric.png")
    if mae:
        grouped_bars(mae, out / "test_mae.png", ylabel="test MAE (lower is better)", title="user-ltv")
        s.figures.append("test_mae.png")
    for task in cfg.tasks:
        curves = {}
        for m in [m for m in (*cfg.models, "relgnn-mean") if (task, m) in info["per_seed"]]:
            vals = [r["values"] for r in info["per_seed"][(task, m)]]
            n = max(len(v) for v in vals)  # early stopping: pad each curve with its last value
            curves[NAMES[m]] = np.array([v + [v[-1]] * (n - len(v)) for v in vals])
        fn = f"val_curves_{task}.png"
        learning_curves(curves, out / fn, xlabel="epoch", ylabel=f"validation {info['tasks'][task]['metric']}",
                        title=f"{task}: validation curves (chosen settings; stopped curves held at their last value)")
        s.figures.append(fn)
