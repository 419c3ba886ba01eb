"""Training: determinism (same seed, same numbers) on entity and recommendation tasks; regression clamp."""

from __future__ import annotations

import numpy as np
import pytest
from relgnn.graph import build_graph
from relgnn.train import FitConfig, fit, prepare_task


@pytest.mark.parametrize("task_name", ["user-churn", "user-item-purchase", "user-ltv"])
def test_fit_is_deterministic(tiny_synth, task_name):
    task = tiny_synth.tasks[task_name]
    graph = build_graph(task.get_db())
    td = prepare_task(task, graph)
    cfg = FitConfig(gnn="relgnn", num_layers=1, channels=8, num_heads=2, epochs=1, seed=3, num_neighbors=(8, 4))
    a, b = fit(graph, td, cfg), fit(graph, td, cfg)
    assert np.array_equal(a.test_pred, b.test_pred) and a.test == b.test
    if td.kind == "recommendation":
        assert a.test_pred.shape == (td.n_rows["test"], td.k)
        assert 0.0 <= a.test <= 1.0
    if td.kind == "regression":
        lo, hi = td.clamp
        assert lo == np.percentile(td.targets["train"], 2) and hi == np.percentile(td.targets["train"], 98)
        assert a.test_pred.min() >= lo and a.test_pred.max() <= hi
