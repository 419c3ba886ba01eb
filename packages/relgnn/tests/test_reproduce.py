"""Tuning protocol of ``reproduce``: the validation split it tunes on is disjoint from the test split (rows and label
windows), the floor is scored on the split asked for, every competitor gets a grid of the same size, and the full
budget has >= 5 seeds and a test split of >= 1,000 rows per task."""

from __future__ import annotations

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
    assert len(full.lr_grid) > 1 and len(full.depth_grid) > 1 and len(full.channels_grid) > 1
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
    from relgnn.reproduce import valid_point

    assert valid_point({"lr": 1e-2, "num_layers": 2, "channels": 16})
    assert not valid_point({"lr": 1e-2, "num_layers": 0.5, "channels": 16})  # depth grid (1, 2) extended down
    assert not valid_point({"lr": 1e-2, "num_layers": 1, "channels": 0})
    fitted = []

    def score(p):  # fewer layers are better: the tuner extends below the grid's edge
        if not valid_point(p):
            return float("nan")
        fitted.append(p["num_layers"])
        return -float(p["num_layers"])

    sel = select(score, {"lr": [1e-2], "num_layers": [1, 2], "channels": [16]}, extend=1)
    assert sel.params["num_layers"] == 1 and sorted(fitted) == [1, 2]  # 0.5 proposed, scored NaN, never fitted
    # control: more layers better -> the upward extension (depth 4) is fitted and chosen
    sel = select(lambda p: float(p["num_layers"]), {"lr": [1e-2], "num_layers": [1, 2], "channels": [16]}, extend=1)
    assert sel.params["num_layers"] == 4
