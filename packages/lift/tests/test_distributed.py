"""Data parallelism (2 CPU processes, gloo): the same masks on every rank and the same weights as one process
training on the same global batch (grad accumulation over the two halves)."""

from __future__ import annotations

import socket

import pytest
import torch


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(tmp_path, sync: bool):
    import torch.multiprocessing as mp
    from lift.parallel import spawn_worker

    path = str(tmp_path / f"rank-sync{sync}")
    mp.spawn(spawn_worker, args=(2, _free_port(), sync, path), nprocs=2, join=True)
    return [torch.load(f"{path}.{r}", weights_only=False) for r in range(2)]


@pytest.mark.slow
@pytest.mark.engine
def test_two_processes_match_one_process_on_the_same_global_batch(tmp_path):
    from lift.parallel import train_tiny

    single = train_tiny(0, 1, 2, True)  # one process: the two micro-batches of each step accumulated
    ranks = _spawn(tmp_path, True)
    for r in ranks:
        assert r["mask_update_steps"] == single["mask_update_steps"] == [2, 4]
        for name, m in single["masks"].items():
            assert torch.equal(r["masks"][name], m), name  # identical masks on every rank and in one process
        for name, w in single["weights"].items():
            torch.testing.assert_close(r["weights"][name], w, rtol=1e-4, atol=1e-5)
    for name in single["weights"]:
        assert torch.equal(ranks[0]["weights"][name], ranks[1]["weights"][name])  # ranks bit-identical
    # negative control: without averaging the gradients each rank follows its own half of the data
    bad = _spawn(tmp_path, False)
    assert not all(torch.equal(bad[0]["weights"][n], bad[1]["weights"][n]) for n in single["weights"])


def _weights(folder):
    from safetensors.torch import load_file

    files = sorted(folder.glob("*.safetensors"))
    assert files, f"no safetensors in {folder}"
    out = {}
    for f in files:
        out.update(load_file(str(f)))
    return out


@pytest.mark.slow
@pytest.mark.engine
def test_accelerate_launch_two_processes_equal_one_process_on_the_global_batch(tmp_path):
    """``accelerate launch --multi_gpu --num_processes 2 -m lift train --device cpu`` (2 CPU processes, gloo): the
    saved model equals ``lift train --grad-accum 2`` in one process (the same global batch); negative control: one
    process on half the batch (``--grad-accum 1``) ends elsewhere."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from icml25.testbeds.lm import build_tiny_lm, build_tokenizer
    from lift.models import save_model

    tok = build_tokenizer()
    save_model(tmp_path / "base", build_tiny_lm(tok, hidden_size=32, num_layers=1, seed=0), tok)
    common = ["train", "--model", str(tmp_path / "base"), "--task", "mul", "--steps", "4", "--batch-size", "4",
              "--n-train", "64", "--update-interval", "2", "--filter-rank", "2", "--budget-rank", "1", "--lr", "1e-2",
              "--device", "cpu", "--quiet", "--overwrite"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ICML25_THREADS": "1", "MASTER_PORT": str(_free_port())}
    launcher = Path(sys.executable).parent / "accelerate"
    assert launcher.exists(), "accelerate is not installed next to this interpreter"

    def run(args, out):
        r = subprocess.run([*args, *common, "--out", str(tmp_path / out)], capture_output=True, text=True, env=env,
                           timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        return tmp_path / out

    two = run([str(launcher), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
               "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", env["MASTER_PORT"],
               "-m", "lift"], "two")
    # `lift train --grad-accum` must come after the subcommand: the extra flags go at the end of `common`
    common_one = common + ["--grad-accum", "2"]
    one = subprocess.run([sys.executable, "-m", "lift", *common_one, "--out", str(tmp_path / "one")],
                         capture_output=True, text=True, env=env, timeout=600)
    assert one.returncode == 0, one.stderr[-3000:]
    half = subprocess.run([sys.executable, "-m", "lift", *common, "--grad-accum", "1", "--out", str(tmp_path / "half")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert half.returncode == 0, half.stderr[-3000:]
    s2 = json.loads((two / "train_summary.json").read_text())
    s1 = json.loads((tmp_path / "one" / "train_summary.json").read_text())
    assert s2["processes"] == 2 and s1["processes"] == 1
    assert s2["mask_update_steps"] == s1["mask_update_steps"] == [2, 4]
    w2, w1, wh = _weights(two / "model"), _weights(tmp_path / "one" / "model"), _weights(tmp_path / "half" / "model")
    assert w2.keys() == w1.keys()
    for name in w1:
        torch.testing.assert_close(w2[name], w1[name], rtol=1e-4, atol=1e-5)
    assert not all(torch.allclose(wh[n], w1[n], rtol=1e-4, atol=1e-5) for n in w1)  # negative control
