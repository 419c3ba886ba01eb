"""CLI: help, python -m, train -> evaluate round trip, bad input, reproduce --smoke structure."""

import json

import pytest
from icml25.testing import python_module, run_cli
from kea.cli import main
from kea.registry import METHOD


def test_registered_name():
    assert METHOD.name == "kea" and METHOD.cli == "kea"


def test_help_and_python_m():
    res = run_cli(main, ["--help"])
    assert res.returncode == 0 and "reproduce" in res.stdout and "train" in res.stdout
    res = python_module("kea", "train", "--help")
    assert res.returncode == 0 and "switch-threshold" in res.stdout


def test_train_then_evaluate(tmp_path):
    out = tmp_path / "run"
    res = run_cli(main, ["train", "--task", "deepsea", "--size", "3", "--steps", "90", "--learning-starts", "30",
                         "--hidden", "16", "--batch-size", "16", "--out", str(out), "--quiet"])
    assert res.returncode == 0, res.stderr
    assert (out / "model" / "model.safetensors").exists() and (out / "metrics.jsonl").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["episodes"] == 30
    res = run_cli(main, ["evaluate", "--run", str(out), "--episodes", "2", "--module", "sac", "--out",
                         str(tmp_path / "ev")])
    assert res.returncode == 0, res.stderr
    assert "mean_return" in res.stdout
    ev = json.loads((tmp_path / "ev" / "evaluation.json").read_text())  # --out is honoured
    assert ev["episodes"] == 2 and ev["module"] == "sac" and (tmp_path / "ev" / "config.json").exists()


@pytest.mark.parametrize("env_id,variant", [("CartPole-v1", "KEA-RND"), ("FrozenLake-v1", "KEA-NovelD"),
                                            ("Pendulum-v1", "KEA-RND")])
def test_train_on_any_registered_gymnasium_env_then_evaluate(tmp_path, env_id, variant):
    """--env: Discrete actions (CartPole), a Discrete observation one-hot encoded (FrozenLake), Box actions
    (Pendulum); evaluate rebuilds the same environment from the saved run."""
    out = tmp_path / "run"
    res = run_cli(main, ["train", "--env", env_id, "--variant", variant, "--steps", "120", "--learning-starts", "40",
                         "--hidden", "16", "--batch-size", "16", "--out", str(out), "--quiet"])
    assert res.returncode == 0, res.stderr
    cfg = json.loads((out / "model" / "model_config.json").read_text())
    assert cfg["env"] == {"env_id": env_id, "seed": 0}
    assert json.loads((out / "summary.json").read_text())["episodes"] >= 1 or env_id == "Pendulum-v1"
    res = run_cli(main, ["evaluate", "--run", str(out), "--episodes", "1", "--module", "sac", "--out",
                         str(tmp_path / "ev")])
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "ev" / "evaluation.json").read_text())["episodes"] == 1


def test_bad_env_id_is_a_clean_error(tmp_path):
    res = run_cli(main, ["train", "--env", "NoSuchEnv-v9", "--steps", "10", "--out", str(tmp_path / "x")])
    assert res.returncode == 2 and "--env" in res.stderr and "NoSuchEnv-v9" in res.stderr
    res = run_cli(main, ["train", "--env", "Blackjack-v1", "--steps", "10", "--out", str(tmp_path / "y")])
    assert res.returncode == 2 and "observation space" in res.stderr  # a Tuple observation: not supported


def test_bad_input_is_a_clean_error(tmp_path):
    res = run_cli(main, ["train", "--switch-threshold", "nan", "--steps", "10", "--out", str(tmp_path / "x")])
    assert res.returncode == 2 and "switch_threshold" in res.stderr
    res = run_cli(main, ["train", "--beta-i", "-1", "--steps", "10", "--out", str(tmp_path / "y")])
    assert res.returncode == 2 and "--beta-i" in res.stderr
    res = run_cli(main, ["evaluate", "--run", str(tmp_path / "missing")])
    assert res.returncode == 2


def test_reproduce_smoke(tmp_path):
    from icml25.claims import validate_results

    res = run_cli(main, ["reproduce", "--smoke", "--out", str(tmp_path / "r"), "--quiet"])
    assert res.returncode == 0, res.stderr
    data = json.loads((tmp_path / "r" / "results.json").read_text())
    validate_results(data)
    names = {c["claim"] for c in data["claims"]}
    assert any("fewer episodes" in n for n in names) and any("distinct states" in n for n in names)
    kinds = {c["claim"]: c["kind"] for c in data["claims"]}
    assert all(k == "property" for n, k in kinds.items() if "entropy" in n)
    assert all(k == "target" for n, k in kinds.items() if "cost" in n)
    assert all(c["verdict"] in ("holds", "inconclusive", "fails", "untested") for c in data["claims"])
    gates = {c["claim"] for c in data["claims"] if c["kind"] == "gate"}
    assert len(gates) == 5  # one competence gate per agent
    for c in data["claims"]:
        if "fewer episodes" in c["claim"]:
            assert c["gates"] and set(c["gates"]) <= gates
    assert any(name.startswith("Learning rate chosen on validation") for name in data["tables"])
    for f in data["figures"]:
        assert (tmp_path / "r" / f).exists()


@pytest.mark.slow
@pytest.mark.parametrize("task", ["deepsea-large", "continuous", "ablation"])
def test_reproduce_smoke_other_tasks(tmp_path, task):
    from icml25.claims import validate_results

    res = run_cli(main, ["reproduce", "--smoke", "--task", task, "--out", str(tmp_path / "r"), "--quiet"])
    assert res.returncode == 0, res.stderr
    data = json.loads((tmp_path / "r" / "results.json").read_text())
    validate_results(data)
    assert all(c["kind"] in ("paper", "gate") for c in data["claims"]) and data["claims"]
    assert any(c["kind"] == "gate" for c in data["claims"])


def test_reproduce_unknown_task_is_refused(tmp_path):
    res = run_cli(main, ["reproduce", "--smoke", "--task", "atari", "--out", str(tmp_path / "r")])
    assert res.returncode == 2 and not (tmp_path / "r").exists()


def test_presets_choose_the_train_defaults_and_flags_override(monkeypatch):

    import kea.cli as cli
    from kea.config import cpu, paper

    seen = []
    monkeypatch.setattr(cli, "train", lambda cfg: seen.append(cfg) or 0)
    for argv in (["train"], ["train", "--preset", "paper"], ["train", "--preset", "paper", "--steps", "50"]):
        assert main(argv) == 0

    def picked(cfg):
        return {k: getattr(cfg, k) for k in paper()}

    defaults = cli.TrainConfig()
    assert cpu() == {} and picked(seen[0]) == {k: getattr(defaults, k) for k in paper()}  # no --preset: defaults
    assert picked(seen[1]) == paper() != {k: getattr(defaults, k) for k in paper()}
    assert seen[2].steps == 50 and seen[2].size == 10 and seen[2].train_freq == 16
