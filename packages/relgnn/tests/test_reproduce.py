"""Tuning protocol of ``reproduce``: the validation split it tunes on is disjoint from the test split (rows and label
windows), the floor is scored on the split asked for, every competitor gets a grid of the same size, and the full
budget has >= 5 seeds and a test split of >= 1,000 rows per task."""

from __future__ import annotations

from itertools import product

import numpy as np
import pandas as pd
import pytest
from icml25.tuning import grid_size
from relgnn.baselines import floor_predictions
from relgnn.config import BUDGETS
from relgnn.graph import build_graph
from relgnn.reproduce import floor_grid, gnn_grid
from relgnn.train import evaluate_predictions, prepare_task


@pytest.mark.parametrize("task_name", ["user-churn", "user-ltv", "user-item-purchase", "post-reply"])
def test_validation_split_is_disjoint_from_test(tiny_synth, task_name):
    task = tiny_synth.tasks[task_name]
    td = prepare_task(task, build_graph(task.get_db()), db=task.get_db(upto_test_timestamp=False))
    times = {s: sorted(g.t for g in td.splits[s]) for s in ("train", "val", "test")}
    delta = int(pd.Timedelta(task.timedelta).total_seconds())
    assert times["val"] and times["test"]
    # seed times are disjoint and ordered, and every label window (t, t + delta] ends before the next split starts
    assert max(times["train"]) + delta <= min(times["val"])
    assert max(times["val"]) + delta <= min(times["test"])
    assert not set(times["val"]) & set(times["test"])


def test_grids_are_alike_and_floor_uses_the_split_asked_for(tiny_synth):
    for mode in ("smoke", "quick", "full"):
        cfg = getattr(BUDGETS, mode)
        n = grid_size(gnn_grid(cfg))
        assert grid_size(floor_grid(cfg, "binary")) == n == grid_size(floor_grid(cfg, "recommendation"))
    full = BUDGETS.full
    assert full.seeds >= 5 and len(full.tasks) >= 4
    assert len(full.depth_grid) > 1 and grid_size(gnn_grid(full)) >= 2  # RelGNN and SAGE each pick their depth
    assert full.max_train_rows is None  # every model and the floor train on every training row
    assert full.patience < full.max_epochs  # early stopping can fire inside the budget
    assert "user-churn" in full.ablation_tasks  # the attention ablation on the selective-relevance task
    for task_name in ("user-churn", "user-item-purchase"):
        task = tiny_synth.tasks[task_name]
        graph = build_graph(task.get_db())
        td = prepare_task(task, graph)
        num_dst = graph.num_nodes(td.dst) if td.dst else None
        for split in ("val", "test"):
            pred = floor_predictions(graph, td, split, learning_rate=0.1, lookback=2)
            assert len(pred) == td.n_rows[split]
            assert np.isfinite(evaluate_predictions(td, split, pred, num_dst=num_dst))
    with pytest.raises(ValueError, match="split"):
        floor_predictions(graph, td, "train")


def test_grid_extension_never_fits_an_invalid_depth_or_width():
    from icml25.tuning import select
    from relgnn.reproduce import STEPS, valid_point

    assert valid_point({"lr": 1e-2, "num_layers": 2, "channels": 16})
    assert not valid_point({"lr": 1e-2, "num_layers": 0, "channels": 16})  # depth grid (1, 2) extended down
    assert not valid_point({"lr": 1e-2, "num_layers": 0.5, "channels": 16})
    assert not valid_point({"lr": 1e-2, "num_layers": 1, "channels": 0})
    from relgnn.reproduce import valid_floor_point

    assert valid_floor_point({"learning_rate": 0.009, "max_leaf_nodes": 3, "max_iter": 33})
    assert valid_floor_point({"lookback": 1}) and not valid_floor_point({"lookback": 0})
    assert not valid_floor_point({"learning_rate": 0.03, "max_leaf_nodes": 1, "max_iter": 100})  # (3, 7) extended
    assert not valid_floor_point({"learning_rate": 0.0, "max_leaf_nodes": 7, "max_iter": 100})
    fitted = []
    grid = {"lr": [1e-2], "num_layers": [1, 2], "channels": [16, 32]}

    def score(p):  # fewer layers and more channels are better: the tuner extends past both edges
        if not valid_point(p):
            return float("nan")
        fitted.append((p["num_layers"], p["channels"]))
        return -float(p["num_layers"]) + p["channels"] / 100

    sel = select(score, grid, extend=1, steps={k: STEPS[k] for k in grid if k in STEPS})
    assert sel.params == {"lr": 1e-2, "num_layers": 1, "channels": 64}  # width 32 -> 64 (an integer)
    assert (0, 32) not in fitted and len(fitted) == 5  # depth 0 proposed, scored NaN, never fitted
    # control: more layers better -> depth extends by one layer (3), not geometrically to 4
    sel = select(lambda p: float(p["num_layers"]), grid, extend=1, steps={"num_layers": STEPS["num_layers"]})
    assert sel.params["num_layers"] == 3
    assert select(lambda p: float(p["num_layers"]), grid, extend=1).params["num_layers"] == 4  # the default step


def test_tuning_in_parallel_passes_equals_the_sequential_tuner():
    from icml25.tuning import select
    from relgnn.reproduce import STEPS, tune_in_passes

    grid = {"lr": [3e-3, 1e-2], "num_layers": [1, 2], "channels": [16, 32]}
    steps = {k: STEPS[k] for k in grid if k in STEPS}
    f = lambda p: -abs(p["num_layers"] - 3) - abs(p["channels"] - 64) / 16 - abs(np.log10(p["lr"]) + 1.5)
    res = {tuple(p): f(dict(zip(grid, p))) for p in product(*grid.values())}  # the grid, fitted up front
    on_grid = dict(res)
    missing, batches = set(), []

    def probe(p):
        key = tuple(p.values())
        if key not in res:
            if not missing:  # only the first unfitted point of a pass is collected
                missing.add(key)
            return float("nan")
        return res[key]

    def fit(keys):
        batches.append(keys)
        res.update({k: f(dict(zip(grid, k))) for k in keys})

    got = tune_in_passes(lambda: select(probe, grid, extend=2, steps=steps), missing, fit)
    want = select(f, grid, extend=2, steps=steps)
    assert got.params == want.params and got.trials == want.trials and got.at_edge == want.at_edge
    assert want.params == {"lr": pytest.approx(1e-2 / 0.3), "num_layers": 3, "channels": 64} and len(batches) >= 2
    assert sum(map(len, batches)) == len(want.trials) - 8  # every extension fitted once, nothing on speculation
    # negative control: one pass without the fits stops at the grid's edge
    one = select(lambda p: on_grid.get(tuple(p.values()), float("nan")), grid, extend=2, steps=steps)
    assert one.params == {"lr": 1e-2, "num_layers": 2, "channels": 32} != want.params


def test_trivial_controls_and_the_floor_on_the_same_rows():
    """The controls are what they say (constant score: ROC-AUC 0.5; training median: its MAE; random ranking: a
    MAP@k far below popularity's), and ``train_rows`` makes the floor train on exactly those rows (negative
    control: other rows give other predictions). A database of 150 users: on the 30-user fixture a churn half has
    ~7 rows, too few for a tree split, and both halves can have the same prevalence (equal constant predictions)."""
    from relgnn.metrics import mae
    from relgnn.reproduce import trivial_control
    from relgnn.synthetic import make_database

    sdb = make_database(num_users=150, num_items=30, num_stores=3, num_windows=9, seed=1)
    for name in ("user-churn", "user-ltv", "user-item-purchase"):
        task = sdb.tasks[name]
        graph = build_graph(task.get_db())
        td = prepare_task(task, graph)
        label, value = trivial_control(graph, td, "test")
        if td.kind == "binary":
            assert value == 0.5 and "majority" in label
        elif td.kind == "regression":
            assert value == pytest.approx(mae(td.targets["test"], np.full(td.n_rows["test"],
                                                                           np.median(td.targets["train"]))))
        else:
            assert "random" in label and 0.0 <= value < 1.0
        n = td.n_rows["train"]
        half = np.arange(n // 2)
        a = floor_predictions(graph, td, "test", train_rows=half, lookback=None)
        b = floor_predictions(graph, td, "test", train_rows=half, lookback=None)
        c = floor_predictions(graph, td, "test", train_rows=np.arange(n // 2, n), lookback=None)
        assert np.array_equal(a, b) and not np.array_equal(a, c)
        full = floor_predictions(graph, td, "test", lookback=None)
        assert np.array_equal(full, floor_predictions(graph, td, "test", train_rows=np.arange(n), lookback=None))


def test_gate_names_the_paper_claims_rely_on():
    """RelGNN vs GraphSAGE relies on both GNN gates (plateau + floor + trivial control) and the floor's gate; the
    ablated model's gate is the plateau and the trivial control only (not the floor it may fall to)."""
    from relgnn.reproduce.gates import floor_gate_name, gate_names, gnn_gate_name

    g = gate_names(None, "user-churn", ("relgnn", "sage"))
    assert g == [gnn_gate_name("user-churn", "relgnn"), gnn_gate_name("user-churn", "sage"),
                 floor_gate_name("user-churn")]
    assert all("no-relation floor" in x for x in g[:2])
    assert "floor" not in gnn_gate_name("user-churn", "relgnn-mean")
    assert len(set(g)) == 3
