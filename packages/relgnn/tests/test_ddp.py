"""DDP: two gloo processes, each sampling its shard of the global batch, give the gradients of a single-process
step on the whole global batch (negative control: a one-shard step's gradients differ)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from relgnn.graph import build_graph
from relgnn.train import FitConfig, prepare_task


@pytest.mark.slow
def test_ddp_gradients_equal_single_process(tiny_synth):
    from relgnn.ddp import grads_one_step, grads_single, shard

    task = tiny_synth.tasks["user-churn"]
    graph = build_graph(task.get_db())
    td = prepare_task(task, graph)
    cfg = FitConfig(gnn="relgnn", num_layers=2, channels=8, num_heads=2, num_neighbors=(1000, 1000), seed=0)
    pos = np.random.default_rng(0).permutation(td.n_rows["train"])[:16]
    single = grads_single(graph, td, cfg, pos)
    ddp = grads_one_step(graph, td, cfg, pos, world_size=2)
    assert single.keys() == ddp.keys()
    for n in single:
        assert torch.allclose(single[n], ddp[n], atol=1e-5, rtol=1e-4), n
    half = grads_single(graph, td, cfg, shard(pos, 0, 2))  # negative control: one shard alone is not the step
    assert any(not torch.allclose(single[n], half[n], atol=1e-5, rtol=1e-4) for n in single)


@pytest.mark.slow
def test_fit_ddp_runs_and_scores(tiny_synth):
    from relgnn.ddp import fit_ddp

    task = tiny_synth.tasks["user-churn"]
    graph = build_graph(task.get_db())
    td = prepare_task(task, graph)
    cfg = FitConfig(gnn="sage", num_layers=1, channels=8, epochs=2, batch_size=32, num_neighbors=(16, 8))
    out = fit_ddp(graph, td, cfg, world_size=2)
    assert len(out["curve"]) == 2 and 0.0 <= out["test"] <= 1.0
