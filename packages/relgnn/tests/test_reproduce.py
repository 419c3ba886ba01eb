"""Tuning protocol of ``reproduce``: the validation split it tunes on is disjoint from the test split (rows and label
windows), the floor is scored on the split asked for, and every competitor gets a grid of the same size."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from relgnn.baselines import floor_predictions
from relgnn.graph import build_graph
from relgnn.reproduce import GBDT_LR_GRID, LR_GRID, PLANS, POP_LOOKBACK_GRID, _grids
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
    for n in (1, 3):
        sizes = {len(next(iter(g.values()))) for g in _grids(n)}
        assert sizes == {n}
    assert len(LR_GRID) == len(GBDT_LR_GRID) == len(POP_LOOKBACK_GRID)
    assert all(p["grid"] in (1, 3) for p in PLANS.values()) and len(PLANS["full"]["seeds"]) >= 5
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
