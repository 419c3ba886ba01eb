"""Training: determinism (same seed, same numbers) for sampled mini-batches (default) and full-graph snapshots;
regression clamp; presampled batches give the same fit as a second run on them."""

from __future__ import annotations

import numpy as np
import pytest
from relgnn.graph import build_graph
from relgnn.train import FitConfig, fit, prepare_task, presample


@pytest.mark.parametrize("task_name, sampling", [("user-churn", "sampled"), ("user-churn", "full"),
                                                 ("user-item-purchase", "sampled"), ("user-ltv", "sampled")])
def test_fit_is_deterministic(tiny_synth, task_name, sampling):
    task = tiny_synth.tasks[task_name]
    graph = build_graph(task.get_db())
    td = prepare_task(task, graph)
    cfg = FitConfig(gnn="relgnn", num_layers=1, channels=8, num_heads=2, epochs=1, seed=3, num_neighbors=(8, 4),
                    batch_size=32, sampling=sampling)
    a, b = fit(graph, td, cfg), fit(graph, td, cfg)
    assert np.array_equal(a.test_pred, b.test_pred) and a.test == b.test
    if sampling == "sampled":
        assert a.steps == -(-td.n_rows["train"] // 32)  # one step per batch of seed rows
    if td.kind == "recommendation":
        assert a.test_pred.shape == (td.n_rows["test"], td.k)
        assert 0.0 <= a.test <= 1.0
    if td.kind == "regression":
        lo, hi = td.clamp
        assert lo == np.percentile(td.targets["train"], 2) and hi == np.percentile(td.targets["train"], 98)
        assert a.test_pred.min() >= lo and a.test_pred.max() <= hi


def test_presampled_batches_cover_every_row_once(tiny_synth):
    task = tiny_synth.tasks["user-churn"]
    graph = build_graph(task.get_db())
    td = prepare_task(task, graph)
    ps = presample(graph, td, FitConfig(batch_size=16, num_neighbors=(8, 4)), seed=0)
    for split, bs in (("train", ps.train), ("val", ps.val), ("test", ps.test)):
        pos = np.concatenate([b.pos for b in bs])
        assert sorted(pos.tolist()) == list(range(td.n_rows[split]))
        for b in bs:  # the seed rows read out are the entity rows of the table rows
            assert (b.sub[td.entity].n_id[b.seed_local] == td.ids[split][b.pos]).all()
            assert (b.sub[td.entity].seed_time[b.seed_local] == td.times[split][b.pos]).all()
    cfg = FitConfig(gnn="sage", num_layers=1, channels=8, epochs=2, batch_size=16, num_neighbors=(8, 4))
    a, b = fit(graph, td, cfg, batches=ps), fit(graph, td, cfg, batches=ps)
    assert a.test == b.test and a.steps == 2 * len(ps.train)


@pytest.mark.parametrize("gnn, layers", [("relgnn", 1), ("sage", 2)])
def test_sampled_batch_equals_full_snapshot(tiny_synth, gnn, layers):
    """Fan-out >= every degree (enough hops for the receptive field) and one batch holding all seeds of a seed
    time: the sampled path's loss and gradients equal the full-graph snapshot path's. Negative control: fan-out 1
    changes the loss."""
    import torch
    from relgnn.sampler import TemporalSampler
    from relgnn.train import Batch, _Runner, build_model

    task = tiny_synth.tasks["user-churn"]
    graph = build_graph(task.get_db())
    td = prepare_task(task, graph)
    g = max(td.splits["train"], key=lambda gr: len(gr.pos))
    hops = 2 * layers if gnn == "relgnn" else layers
    cfg = FitConfig(gnn=gnn, num_layers=layers, channels=8, num_heads=2, sampling="full",
                    num_neighbors=(10**6,) * hops)
    torch.manual_seed(0)
    model = build_model(cfg, graph, td).eval()  # no dropout (the torch-frame encoder's), so both losses are exact
    full = _Runner(model, graph, td, cfg)
    lf = full.group_loss(g)
    gf = torch.autograd.grad(lf, [p for p in model.parameters() if p.requires_grad], allow_unused=True)
    times = torch.full((len(g.pos),), g.t)
    sub, loc = TemporalSampler(graph, num_neighbors=cfg.num_neighbors).sample(td.entity, g.ids, times)
    ls = full.batch_loss(Batch(sub, loc, g.pos))
    gs = torch.autograd.grad(ls, [p for p in model.parameters() if p.requires_grad], allow_unused=True)
    assert torch.allclose(lf, ls, atol=1e-5)
    for a, b in zip(gf, gs):
        assert (a is None) == (b is None)
        if a is not None:
            assert torch.allclose(a, b, atol=1e-5)
    sub1, loc1 = TemporalSampler(graph, num_neighbors=(1,) * hops,
                                 generator=torch.Generator().manual_seed(0)).sample(td.entity, g.ids, times)
    assert not torch.allclose(full.batch_loss(Batch(sub1, loc1, g.pos)), lf, atol=1e-4)


def test_sampled_training_lowers_the_loss(tiny_synth):
    """Smoke: 20 Adam steps on sampled mini-batches lower the training loss on fixed batches (control: lr ~ 0
    leaves it where it was)."""
    import torch
    from relgnn.train import _Runner, build_model

    task = tiny_synth.tasks["user-churn"]
    graph = build_graph(task.get_db())
    td = prepare_task(task, graph)
    ps = presample(graph, td, FitConfig(batch_size=64, num_neighbors=(16, 8)), seed=0)
    out = {}
    for lr in (1e-2, 1e-9):
        cfg = FitConfig(gnn="relgnn", num_layers=1, channels=8, num_heads=2, lr=lr, batch_size=64,
                        num_neighbors=(16, 8))
        torch.manual_seed(0)
        model = build_model(cfg, graph, td)
        run = _Runner(model, graph, td, cfg)
        opt = torch.optim.Adam(model.parameters(), lr=lr)

        def total(run=run, model=model):  # in eval mode: the torch-frame encoder's dropout off
            model.eval()
            with torch.no_grad():
                loss = float(sum(run.batch_loss(b) for b in ps.train) / len(ps.train))
            model.train()
            return loss

        before = total()
        for i in range(20):
            opt.zero_grad()
            run.batch_loss(ps.train[i % len(ps.train)]).backward()
            opt.step()
        out[lr] = (before, total())
    assert out[1e-2][1] < out[1e-2][0] - 0.01
    assert abs(out[1e-9][1] - out[1e-9][0]) < 1e-4


def test_early_stopping_stops_at_the_plateau_and_restores_the_best_epoch(tiny_synth):
    """``fit`` trains until ``patience`` epochs bring no validation gain, returns the curve (x = optimiser steps) and
    the best epoch's weights; negative control: ``patience >= epochs`` trains every epoch (RelBench's schedule)."""
    from dataclasses import replace

    from relgnn.train import _Runner

    task = tiny_synth.tasks["user-churn"]
    graph = build_graph(task.get_db())
    td = prepare_task(task, graph)
    ps = presample(graph, td, FitConfig(batch_size=16, num_neighbors=(1000, 1000)), seed=0)
    cfg = FitConfig(gnn="sage", num_layers=1, channels=8, epochs=40, patience=2, batch_size=16, lr=0.05,
                    num_neighbors=(1000, 1000), dropout=0.0, seed=1)
    r = fit(graph, td, cfg, batches=ps)
    c = r.curve
    assert c.stopped_by == "plateau" and len(c.values) < 40 and c.values == r.val_curve
    assert max(c.values[-2:]) <= max(c.values[:-2])  # the last `patience` epochs did not beat the best before
    assert r.best_epoch == int(np.argmax(c.values)) and r.val == max(c.values)  # first best (strict improvement)
    assert c.steps == [(i + 1) * len(ps.train) for i in range(len(c.values))]
    run = _Runner(r.model, graph, td, cfg)  # the returned weights are the best epoch's, not the last one's
    assert run.score("val", run.predict("val", ps.val)) == pytest.approx(r.val, abs=1e-12)
    full = fit(graph, td, replace(cfg, epochs=6, patience=6), batches=ps)
    assert len(full.val_curve) == 6 and full.curve.stopped_by == "budget"
