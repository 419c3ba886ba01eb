"""CLI: --help, python -m, bad input exits 2 with a named error, registry import stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest
from habi.cli import main
from habi.registry import METHOD
from icml25.testing import run_cli


def test_registered_name():
    assert METHOD.name == "habi" and METHOD.cli == "habi"


def test_help_lists_subcommands():
    r = run_cli(main, ["--help"])
    assert r.returncode == 0
    for cmd in ("make-data", "train-planner", "habitize", "evaluate", "reproduce"):
        assert cmd in r.stdout


def test_python_dash_m_and_light_registry():
    out = subprocess.run([sys.executable, "-c", "import sys, habi.registry, habi; print('torch' in sys.modules)"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    r = subprocess.run([sys.executable, "-m", "habi", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "habitize" in r.stdout


def test_bad_input_is_a_clear_error(tmp_path):
    r = run_cli(main, ["train-planner", "--data", str(tmp_path / "missing.hdf5"), "--out", str(tmp_path / "o")])
    assert r.returncode == 2 and "does not exist" in r.stderr
    r = run_cli(main, ["habitize", "--planner", str(tmp_path), "--num-candidates", "0", "--out", str(tmp_path / "h")])
    assert r.returncode == 2 and "num_candidates" in r.stderr


def test_hopper_without_mujoco_is_one_line_naming_the_extra(tmp_path, monkeypatch):
    """`reproduce --task hopper` (and a MuJoCo env id) without the wheel: exit 2, one line, the extra named."""
    import importlib.util

    import gymnasium as gym
    from habi.envs import make_env
    from habi.errors import HabiConfigError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mujoco" else real(name, *a))
    r = run_cli(main, ["reproduce", "--task", "hopper", "--out", str(tmp_path / "r")])
    assert r.returncode == 2 and 'habi[mujoco]' in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r" / "results.json").exists()

    def no_mujoco(*a, **k):
        raise gym.error.DependencyNotInstalled("MuJoCo is not installed, run `pip install \"gymnasium[mujoco]\"`")

    monkeypatch.setattr(gym, "make", no_mujoco)
    with pytest.raises(HabiConfigError, match=r"habi\[mujoco\]"):
        make_env("Hopper-v5")


@pytest.mark.slow
def test_cli_end_to_end_on_a_local_file(tmp_path):
    import numpy as np
    from habi.data import save_offline

    rng = np.random.default_rng(0)
    n = 400
    data = {"observations": rng.normal(size=(n, 3)).astype(np.float32),
            "actions": rng.uniform(-1, 1, (n, 1)).astype(np.float32),
            "rewards": rng.normal(size=n).astype(np.float32), "terminals": np.zeros(n, bool),
            "timeouts": np.arange(n) % 200 == 199}
    path = save_offline(tmp_path / "d.hdf5", data, meta={"random_return": -1200.0, "expert_return": -150.0})
    assert run_cli(main, ["train-planner", "--data", str(path), "--hidden", "16", "--steps", "3", "--batch-size", "16",
                          "--out", str(tmp_path / "p"), "--quiet"]).returncode == 0
    assert run_cli(main, ["habitize", "--planner", str(tmp_path / "p"), "--data", str(path), "--steps", "3",
                          "--batch-size", "16", "--hidden", "16", "--latent-dim", "4", "--teacher-states", "50",
                          "--out", str(tmp_path / "h"), "--quiet"]).returncode == 0
    r = run_cli(main, ["evaluate", "--run", str(tmp_path / "h"), "--episodes", "1", "--no-benchmark",
                       "--scorer", "planner"])
    assert r.returncode == 0 and "normalized_score" in r.stdout


def test_presets_choose_the_training_defaults_and_flags_override(monkeypatch):
    import habi.cli as cli
    from habi.config import HabiConfig, HabitizeConfig, PlannerTrainConfig

    seen = []
    monkeypatch.setattr(cli, "train_planner_cmd", lambda cfg: seen.append(cfg) or 0)
    monkeypatch.setattr(cli, "habitize_cmd", lambda cfg: seen.append(cfg) or 0)
    for argv in (["train-planner"], ["train-planner", "--preset", "paper", "--lr", "0.01"], ["habitize"],
                 ["habitize", "--preset", "paper", "--device", "cpu"]):
        assert cli.main(argv) == 0
    assert seen[0].train.resolve() == PlannerTrainConfig.cpu()  # negative control: no --preset
    assert seen[1].train.resolve() == PlannerTrainConfig.paper(lr=0.01)
    assert seen[2].train.resolve() == HabitizeConfig.cpu() and seen[2].habi.latent_dim == HabiConfig.cpu(1, 1).latent_dim
    assert seen[3].train.resolve() == HabitizeConfig.paper() and seen[3].habi.resolve(obs_dim=3, act_dim=1) == \
        HabiConfig.paper(obs_dim=3, act_dim=1)
