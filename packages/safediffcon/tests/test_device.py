"""``--device`` (issue #53): every torch command takes it, records the device it ran on, refuses a bad one in one line,
and on the CPU changes nothing (bit for bit); a ``gpu``-marked smoke runs one pretraining step on CUDA."""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest
import torch
from safediffcon import cli
from safediffcon.cli import main
from safediffcon.config import cpu, paper
from safediffcon.errors import SafediffconError
from safediffcon.method import SafeDiffCon

TINY = ["--config.nx", "16", "--config.dt", "2e-3", "--config.dim", "4", "--config.mults", "1", "2",
        "--config.timesteps", "20", "--config.ddim-steps", "3", "--config.alpha", "0.9", "--config.n-train", "32",
        "--config.n-cal", "20", "--config.n-test", "4", "--config.batch-size", "8", "--config.pretrain-steps", "2",
        "--config.post-epochs", "1", "--config.post-steps", "1", "--config.infft-iters", "1", "--quiet"]
DEVICE_COMMANDS = {"make-data": "MakeDataOptions", "pretrain": "PretrainOptions", "post-train": "PostTrainOptions",
                   "control": "ControlOptions", "evaluate": "EvaluateOptions"}
ACCELERATOR = torch.cuda.is_available() or (getattr(torch.backends, "mps", None) is not None
                                            and torch.backends.mps.is_available())


def test_every_torch_command_takes_a_device_and_reproduce_does_not():
    for cls in DEVICE_COMMANDS.values():
        f = {x.name: x for x in dataclasses.fields(getattr(cli, cls))}
        assert "device" in f and f["device"].default == "auto", cls
    assert "device" not in {x.name for x in dataclasses.fields(cli.SdcReproduceOptions)}  # fixed CPU protocol


def _pipeline(root, *device):
    """pretrain -> post-train -> control -> evaluate with the tiny config, ``device`` flags appended to each."""
    runs = {k: root / k for k in ("pre", "post", "ctl", "ev")}
    assert main(["pretrain", *TINY, *device, "--out", str(runs["pre"])]) == 0
    assert main(["post-train", *TINY, *device, "--model", str(runs["pre"]), "--out", str(runs["post"])]) == 0
    assert main(["control", *TINY, *device, "--model", str(runs["post"]), "--out", str(runs["ctl"])]) == 0
    assert main(["evaluate", *TINY[:2], *TINY[2:4], "--quiet", *device, "--controls", str(runs["ctl"] / "controls.npz"),
                 "--out", str(runs["ev"])]) == 0
    return runs


@pytest.mark.skipif(ACCELERATOR, reason="'auto' is the CPU only on a machine without an accelerator")
def test_device_cpu_is_recorded_and_equals_the_default_bit_for_bit(tmp_path):
    a = _pipeline(tmp_path / "default")
    b = _pipeline(tmp_path / "cpu", "--device", "cpu")
    for k in a:
        assert json.loads((b[k] / "env.json").read_text())["device"] == "cpu"
        assert json.loads((a[k] / "env.json").read_text())["device"] == "cpu"  # auto resolved, not "auto"
    for k in ("pre", "post"):
        assert (a[k] / "model" / "model.safetensors").read_bytes() == (b[k] / "model" / "model.safetensors").read_bytes()
    ca, cb = np.load(a["ctl"] / "controls.npz"), np.load(b["ctl"] / "controls.npz")
    assert np.abs(ca["f"]).max() > 0 and np.array_equal(ca["f"], cb["f"])
    assert (a["ctl"] / "metrics.json").read_text() == (b["ctl"] / "metrics.json").read_text()
    assert (a["ev"] / "evaluation.json").read_text() == (b["ev"] / "evaluation.json").read_text()
    # negative control: another seed does change the weights, so the equality above is not vacuous
    assert main(["pretrain", *TINY, "--device", "cpu", "--seed", "1", "--out", str(tmp_path / "s1")]) == 0
    assert (tmp_path / "s1" / "model" / "model.safetensors").read_bytes() != \
        (a["pre"] / "model" / "model.safetensors").read_bytes()


@pytest.mark.parametrize("command", sorted(DEVICE_COMMANDS))
def test_an_unknown_device_is_one_error_line_naming_the_flag(command, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([command, "--device", "tpu", "--out", str(tmp_path / "never")]) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    assert len(lines) == 1 and "--device" in lines[0] and "tpu" in lines[0], err
    assert "Traceback" not in err and not (tmp_path / "never").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_an_unavailable_cuda_is_one_error_line_naming_the_flag(tmp_path, capsys):
    assert main(["pretrain", *TINY, "--device", "cuda", "--out", str(tmp_path / "never")]) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    assert len(lines) == 1 and "--device" in lines[0] and "cuda" in lines[0], err
    assert not (tmp_path / "never").exists()


def test_the_python_api_refuses_a_bad_device():
    with pytest.raises(SafediffconError, match="device"):
        SafeDiffCon(nx=16, dt=2e-3, dim=4, mults=(1, 2), timesteps=20, ddim_steps=3, device="tpu")


@pytest.mark.parametrize("command", ["pretrain", "post-train", "control"])
def test_preset_paper_with_device_parses_and_flags_still_win(command, monkeypatch):
    fn = {"pretrain": "pretrain", "post-train": "post_train", "control": "control"}[command]
    seen = []
    monkeypatch.setattr(cli, fn, lambda opts: seen.append(opts) or 0)
    assert main([command]) == 0 and _same_config(seen[-1].config, cpu()) and seen[-1].device == "auto"  # negative control
    assert main([command, "--preset", "paper", "--device", "cpu"]) == 0
    got = seen[-1]
    assert got.device == "cpu" and _same_config(got.config, paper()) and got.config.dim == 128
    assert main([command, "--preset", "paper", "--device", "cuda", "--config.pretrain-steps", "7"]) == 0
    got = seen[-1]
    assert got.device == "cuda" and got.config.pretrain_steps == 7 and got.config.nx == 128


def _same_config(a, b) -> bool:  # the CLI's config is a subclass of Config with the same fields
    return all(getattr(a, f.name) == getattr(b, f.name) for f in dataclasses.fields(b))


# ------------------------------------------------------------------------------------------- CUDA (gpu-marked)
# ICML25_SMOKE_DEVICE=cpu runs the same steps on the CPU (a check of the plumbing without a GPU), as the root smoke
GPU = os.environ.get("ICML25_SMOKE_DEVICE", "cuda")


@pytest.mark.gpu
@pytest.mark.skipif(GPU.startswith("cuda") and not torch.cuda.is_available(), reason="needs a CUDA device")
def test_one_pretraining_step_and_a_guided_sample_on_cuda(tmp_path):
    from safediffcon.adjoint import adjoint_control
    from safediffcon.burgers import simulate
    from safediffcon.data import make_split

    dev = torch.device(GPU)
    out = tmp_path / "pre"
    one = list(TINY)
    one[one.index("--config.pretrain-steps") + 1] = "1"  # one training step
    argv = ["pretrain", *one, "--device", GPU.split(":")[0], "--out", str(out)]
    assert main(argv) == 0
    assert json.loads((out / "env.json").read_text())["device"].startswith(dev.type)
    loss = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])["loss"]
    assert np.isfinite(loss)

    m = SafeDiffCon.load(out / "model", device=GPU)
    assert all(p.device.type == dev.type for p in m.net.parameters())
    assert m.diffusion.abar.device.type == dev.type and m.diffusion.real.device.type == dev.type
    cal = make_split(20, 16, nu=0.01, dt=2e-3, amp=0.7, safe_only=True, seed=1, device=GPU)
    assert cal.u.device.type == "cpu"  # data come back on the CPU
    ref = make_split(20, 16, nu=0.01, dt=2e-3, amp=0.7, safe_only=True, seed=1)
    assert torch.allclose(cal.u, ref.u, atol=1e-5)  # the same draws; the solver agrees to float32 rounding
    m.pretrain(cal, steps=1, batch_size=8)  # one step through the method's own loop
    assert np.isfinite(m.history["pretrain_loss"][-1])
    q = m.calibrate(cal)
    u, f, s = m.generate(cal.u0[:3], cal.u_target[:3], Q=q)
    assert f.shape == (3, 10, 16) and f.device.type == "cpu" and torch.isfinite(f).all()
    qs = m.fine_tune(cal.u0[:3], cal.u_target[:3], cal, iters=1)
    assert len(qs) == 1 and np.isfinite(qs[0])
    uc = simulate(cal.u0.to(dev), cal.f.to(dev), nu=0.01, dt=2e-3)
    assert uc.device.type == dev.type and torch.allclose(uc.cpu(), ref.u, atol=1e-5)
    fa = adjoint_control(cal.u0[:2].to(dev), cal.u_target[:2].to(dev), mus=(0.0, 10.0), nu=0.01, dt=2e-3,
                         u_bound=0.8, iters=2)
    assert all(v.device.type == dev.type and torch.isfinite(v).all() for v in fa.values())
