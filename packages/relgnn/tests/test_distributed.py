"""Data-parallel training (torch DDP, gloo, 2 CPU processes): a sharded step equals a single-process step on the same
global batch; an end-to-end `spawn_fit` trains. Slow (process start-up), so deselected by default."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from relgnn.config import FitConfig
from relgnn.distributed import shard_gradients, spawn, spawn_fit
from relgnn.errors import ConfigError
from relgnn.graph import build_graph
from relgnn.train import Batch, _Runner, build_model, prepare_task

# fan-outs above every degree: each seed's sub-graph is its whole time-correct neighbourhood, whatever the RNG.
# Dropout off: the step runs in training mode (as fit does, so a batch-coupled layer such as BatchNorm would show),
# where each process would draw its own dropout masks and the sharded step could equal the global one only in
# distribution; with the torch-frame encoder's dropout at 0 the equality is exact.
CFG = FitConfig(gnn="relgnn", num_layers=2, channels=8, num_heads=2, epochs=2, seed=5, num_neighbors=(1000, 1000),
                batch_size=16, lr=1e-2, dropout=0.0)


def _task(tiny_synth, name="user-churn"):
    task = tiny_synth.tasks[name]
    graph = build_graph(task.get_db())
    return graph, prepare_task(task, graph)


def _single_process_grads(graph, td, cfg, positions) -> dict:
    from icml25.seeding import seed_everything

    seed_everything(cfg.seed)
    model = build_model(cfg, graph, td)
    run = _Runner(model, graph, td, cfg)
    idx = torch.as_tensor(positions, dtype=torch.long)
    sub, seed_local = run.sampler.sample(td.entity, td.ids["train"][idx], td.times["train"][idx])
    model.train()
    run.batch_loss(Batch(sub, seed_local, np.asarray(positions))).backward()
    return {k: (p.grad if p.grad is not None else torch.zeros_like(p)) for k, p in model.named_parameters()}


@pytest.mark.slow
@pytest.mark.engine
@pytest.mark.parametrize("task_name", ["user-churn", "user-ltv", "user-item-purchase"])
def test_two_process_step_equals_the_global_batch_step(tiny_synth, tmp_path, task_name):
    graph, td = _task(tiny_synth, task_name)
    positions = np.arange(min(15, td.n_rows["train"]))  # odd: the two shards differ in size
    ddp = spawn(shard_gradients, (graph, td, CFG, positions), world_size=2, workdir=str(tmp_path))
    ref = _single_process_grads(graph, td, CFG, positions)
    assert set(ddp) == set(ref)
    assert any(float(g.abs().max()) > 0 for g in ref.values())
    for k in ref:
        torch.testing.assert_close(ddp[k], ref[k], atol=1e-6, rtol=1e-4, msg=k)
    # negative control: one shard's gradient alone is not the global one
    half = _single_process_grads(graph, td, CFG, positions[::2])
    assert any(not torch.allclose(half[k], ref[k], atol=1e-6, rtol=1e-4) for k in ref)


@pytest.mark.slow
@pytest.mark.engine
def test_spawn_fit_trains_on_two_processes(tiny_synth, tmp_path):
    graph, td = _task(tiny_synth)
    res = spawn_fit(graph, td, CFG, world_size=2, workdir=str(tmp_path))
    assert res is not None and np.isfinite(res.test) and 0.0 <= res.test <= 1.0
    assert res.steps == CFG.epochs * -(-td.n_rows["train"] // CFG.batch_size)
    assert len(res.val_curve) == CFG.epochs
    assert res.curve.stopped_by == "budget" and res.curve.steps[-1] == res.steps  # patience 3 > 2 epochs


def test_sharding_refuses_batch_coupled_options(tiny_synth):
    from relgnn.distributed import _check

    graph, td = _task(tiny_synth)
    _check(CFG, td)  # control: the default options pass
    with pytest.raises(ConfigError, match="simplified_mp"):
        _check(FitConfig(simplified_mp=True), td)
    with pytest.raises(ConfigError, match="sampling"):
        _check(FitConfig(sampling="full"), td)


_SMALL = ["--epochs", "1", "--num-users", "40", "--num-items", "15", "--num-windows", "9", "--batch-size", "32",
          "--num-neighbors", "8", "4", "--quiet"]


@pytest.mark.slow
@pytest.mark.engine
def test_cli_ddp_spawned_and_under_torchrun(tmp_path):
    import json
    import subprocess
    import sys

    from icml25.testing import run_cli
    from relgnn.cli import main

    res = run_cli(main, ["train", "--ddp", "--ddp-procs", "2", "--out", str(tmp_path / "a"), *_SMALL])
    assert res.returncode == 0, res.stderr
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "-m", "relgnn",
                          "train", "--ddp", "--out", str(tmp_path / "b"), *_SMALL], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    for run in ("a", "b"):
        summary = json.loads((tmp_path / run / "summary.json").read_text())
        assert 0.0 <= summary["test"] <= 1.0
        assert (tmp_path / run / "model.safetensors").exists()
    # the two launchers run the same data-parallel fit: same global batches, same per-process sampling streams
    a = json.loads((tmp_path / "a" / "summary.json").read_text())
    b = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert a["val"] == pytest.approx(b["val"], abs=1e-9) and a["test"] == pytest.approx(b["test"], abs=1e-9)


def test_cli_ddp_bad_input_is_refused_fast():
    from icml25.testing import run_cli
    from relgnn.cli import main

    res = run_cli(main, ["train", "--ddp", "--ddp-procs", "0", "--out", "/tmp/never-written-relgnn"])
    assert res.returncode == 2 and "--ddp-procs" in res.stderr
    res = run_cli(main, ["train", "--ddp", "--simplified-mp", "--out", "/tmp/never-written-relgnn"])
    assert res.returncode == 2 and "simplified" in res.stderr


def test_result_files_round_trip_without_pickle(tiny_synth, tmp_path):
    """What a spawned process 0 hands back (a FitResult, a gradient dict, None) survives safetensors + JSON exactly:
    weights, predictions and their dtype, NaN scalars, series, ints, the model's mode; nothing is a pickle."""
    import dataclasses
    import json

    from icml25.train import Curve
    from relgnn.distributed import load_result, save_result
    from relgnn.train import FitResult

    graph, td = _task(tiny_synth)
    model = build_model(CFG, graph, td).eval()
    res = FitResult(metric="roc_auc", val=0.75, test=float("nan"), test_pred=np.array([0.25, -1.5, 3.0]),
                    val_curve=[0.5, float("nan"), 0.75], best_epoch=2, epoch_seconds=[0.1, 0.2, 0.3],
                    epoch_cpu_seconds=[0.1, 0.2, 0.3], train_rows_per_s=123.5, infer_rows_per_s=7.25,
                    activation_mb=float("nan"), num_params=sum(p.numel() for p in model.parameters()), model=model,
                    steps=9, curve=Curve(steps=[3, 6, 9], values=[0.5, float("nan"), 0.75], patience=2,
                                         min_delta=0.01, stopped_by="plateau"))
    save_result(res, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ddp_result.json", "ddp_result.safetensors"]
    assert json.loads((tmp_path / "ddp_result.json").read_text())["kind"] == "fit"
    with pytest.raises(TypeError, match="build"):
        load_result(tmp_path)
    rng = torch.get_rng_state()
    back = load_result(tmp_path, build=lambda: build_model(FitConfig(**(dataclasses.asdict(CFG) | {"seed": 99})),
                                                           graph, td))
    assert torch.equal(torch.get_rng_state(), rng)  # rebuilding did not move the caller's RNG
    for f in dataclasses.fields(FitResult):
        a, b = getattr(res, f.name), getattr(back, f.name)
        if f.name == "model":
            assert not b.training
            sa, sb = a.state_dict(), b.state_dict()
            assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
        elif f.name == "curve":
            assert isinstance(b, Curve)
            np.testing.assert_equal(dataclasses.asdict(b), dataclasses.asdict(a))
        elif f.name == "test_pred":
            assert b.dtype == a.dtype and np.array_equal(a, b)
        else:
            np.testing.assert_equal(b, a, err_msg=f.name)  # NaN == NaN here
    # negative control: a model built with another seed really has other weights until the file's are loaded
    other = build_model(FitConfig(**(dataclasses.asdict(CFG) | {"seed": 99})), graph, td).state_dict()
    assert any(not torch.equal(other[k], v) for k, v in model.state_dict().items())
    grads = {"a.weight": torch.randn(3, 2), "b": torch.arange(4)}
    save_result(grads, tmp_path)
    got = load_result(tmp_path)
    assert got.keys() == grads.keys() and all(torch.equal(got[k], grads[k]) for k in grads)
    save_result(None, tmp_path)
    assert load_result(tmp_path) is None
    with pytest.raises(TypeError, match="dict of tensors or a FitResult"):
        save_result([1, 2], tmp_path)

