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
    assert all(c["verdict"] in ("holds", "inconclusive", "fails") for c in data["claims"])
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
    assert all(c["kind"] == "paper" for c in data["claims"]) and data["claims"]


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
