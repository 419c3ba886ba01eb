"""``--device`` of ``earl-bo optimize`` / ``benchmark`` and ``EARLBO(device=...)`` on the CPU (issue #53): the option
is accepted and recorded in env.json, bad values are refused naming the flag, ``--device cpu`` gives bitwise the
default's numbers, and ``--preset paper`` combines with ``--device``. The CUDA smoke is in ``test_gpu.py``."""

import json

import numpy as np
import pytest
import torch
from earl_bo.earl import EARLBO, resolve_device
from earl_bo.errors import EarlBoError

# a tiny agent: one query at d = 2 takes about a second
TINY_FLAGS = ["--agent.episodes", "4", "--agent.off-policy-episodes", "2", "--agent.update-every", "2",
              "--agent.horizon", "2", "--agent.width", "16", "--agent.heads", "2", "--agent.pretrain-tasks", "1"]
RUN = ["optimize", "--benchmark", "branin", "--dim", "2", "--n-init", "4", "--budget", "2", *TINY_FLAGS]
NO_CUDA = not torch.cuda.is_available()


def _run(tmp_path, name, *extra):
    from earl_bo.cli import main

    out = tmp_path / name
    assert main([*RUN, *extra, "--quiet", "--out", str(out)]) == 0
    return (json.loads((out / f).read_text()) for f in ("result.json", "env.json", "config.json"))


@pytest.mark.skipif(not NO_CUDA, reason="the default (auto) is cuda here; the CUDA run is test_gpu.py's")
def test_device_cpu_is_recorded_and_equals_the_default_bitwise(tmp_path):
    res_cpu, env_cpu, cfg_cpu = _run(tmp_path, "cpu", "--device", "cpu")
    res_def, env_def, cfg_def = _run(tmp_path, "default")
    assert env_cpu["device"] == env_def["device"] == "cpu"  # auto resolves to the CPU without CUDA
    assert cfg_cpu["device"] == "cpu" and cfg_def["device"] == "auto"  # config.json keeps what was asked for
    assert res_cpu["X"] == res_def["X"] and res_cpu["y"] == res_def["y"]  # bitwise: JSON floats round-trip exactly
    # negative control: another seed gives other queries (the comparison above can fail)
    res_other, _, _ = _run(tmp_path, "other", "--device", "cpu", "--seed", "1")
    assert res_other["X"][4:] != res_cpu["X"][4:]


def test_python_device_none_cpu_and_torch_device_give_the_same_queries():
    B = np.array([[0.0, 0.0], [1.0, 1.0]])
    g = np.random.default_rng(0)
    X = g.uniform(size=(6, 2))
    y = np.sin(3 * X).sum(1)
    kw = dict(episodes=4, off_policy_episodes=2, update_every=2, horizon=2, width=16, heads=2, pretrain_tasks=0,
              turbo_candidates=64, seed=3)
    out = []
    for dev in (None, "cpu", torch.device("cpu")):
        agent = EARLBO(B, **kw, device=dev)
        out.append(agent.suggest(X, y))
        assert agent.device == torch.device("cpu")
        assert all(p.device.type == "cpu" for p in agent.agent.parameters())
        assert all(np.isfinite(v) for v in agent.logs[-1].loss) and len(agent.logs[-1].loss) == 2  # E / U updates
    assert np.array_equal(out[0], out[1]) and np.array_equal(out[0], out[2])


def test_benchmark_takes_and_records_the_device(tmp_path):
    from earl_bo.cli import main

    out = tmp_path / "bench"
    assert main(["benchmark", "--benchmark", "branin", "--dim", "2", "--n-init", "4", "--budget", "1", "--seeds", "1",
                 "--methods", "earl-bo", "sobol", *TINY_FLAGS, "--device", "cpu", "--quiet", "--out", str(out)]) == 0
    assert json.loads((out / "env.json").read_text())["device"] == "cpu"
    # baselines alone run on the CPU whatever --device says (auto): env.json says so
    out = tmp_path / "sobol"
    assert main(["optimize", "--method", "sobol", "--benchmark", "branin", "--dim", "2", "--budget", "1",
                 "--quiet", "--out", str(out)]) == 0
    assert json.loads((out / "env.json").read_text())["device"] == "cpu"


@pytest.mark.parametrize("argv, needles", [
    (["--device", "tpu"], ["--device", "tpu", "auto", "cpu", "cuda"]),
    (["--device", "mps"], ["--device", "mps"]),
    pytest.param(["--device", "cuda"], ["--device", "cuda", "is_available"],
                 marks=pytest.mark.skipif(not NO_CUDA, reason="CUDA is available here")),
])
@pytest.mark.parametrize("command", ["optimize", "benchmark"])
def test_cli_refuses_a_bad_device_naming_the_flag(command, argv, needles, tmp_path, capsys):
    from earl_bo.cli import main

    out = tmp_path / "never"
    assert main([command, *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err
    for n in needles:
        assert n in err, (n, err)
    assert not out.exists()


def test_reproduce_has_no_device(tmp_path, capsys):
    """reproduce is the fixed CPU protocol: --device is refused there, not silently ignored."""
    from earl_bo.cli import main

    assert main(["reproduce", "--smoke", "--device", "cpu", "--out", str(tmp_path / "never")]) == 2
    assert "--device" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["tpu", "mps", "auto:0", "", 3, "cuda:x"])
def test_python_api_refuses_a_bad_device(bad):
    with pytest.raises(EarlBoError, match="device"):
        EARLBO(np.array([[0.0], [1.0]]), device=bad)


def test_resolve_device():
    assert resolve_device(None) == torch.device("cpu")  # the library's default: the CPU (reproduce runs there)
    assert resolve_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(EarlBoError, match="--device"):
        resolve_device("tpu", name="--device")
    if NO_CUDA:
        with pytest.raises(EarlBoError, match="is_available"):
            resolve_device("cuda:0")


def test_preset_paper_with_device(tmp_path, monkeypatch):
    import earl_bo.cli as cli
    from earl_bo.config import cpu, paper

    seen = []
    monkeypatch.setattr(cli, "optimize_command", lambda opts: seen.append(opts) or 0)
    assert cli.main(["optimize", "--preset", "paper", "--device", "cpu"]) == 0
    assert seen[-1].agent == paper() and seen[-1].device == "cpu"
    assert cli.main(["optimize", "--device", "cpu"]) == 0
    assert seen[-1].agent == cpu() != paper()  # negative control: no --preset is the CPU agent
    monkeypatch.undo()
    # and it runs: the paper's agent (action "box"), shortened by explicit flags, on the device asked for
    res, env, cfg = _run(tmp_path, "paper", "--preset", "paper", "--device", "cpu")
    assert env["device"] == "cpu" and cfg["agent"]["action"] == paper().action == "box"
    assert cfg["agent"]["episodes"] == 4 and cfg["agent"]["lr"] == paper().lr
    assert np.isfinite(res["best"])
