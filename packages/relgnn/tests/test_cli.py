"""CLI: train -> evaluate round trip on a tiny synthetic database, bad input, offline loader error."""

from __future__ import annotations

import json

import pytest
from icml25.testing import run_cli
from relgnn.cli import main
from relgnn.errors import DataUnavailableError

TINY = ["--num-users", "30", "--num-items", "15", "--num-windows", "9", "--epochs", "1", "--channels", "8"]


def test_help():
    r = run_cli(main, ["--help"])
    assert r.returncode == 0 and "train" in r.stdout and "reproduce" in r.stdout


def test_train_then_evaluate(tmp_path, capsys):
    out = tmp_path / "run"
    r = run_cli(main, ["train", "--out", str(out), "--quiet", *TINY])
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    ev = tmp_path / "eval"
    r = run_cli(main, ["evaluate", "--run", str(out), "--out", str(ev)])
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[0])
    assert got["metric"] == "roc_auc" and abs(got["value"] - summary["test"]) < 1e-9  # same model, same numbers
    # --out is honoured: config, env and the evaluation are written there (it was accepted and ignored before)
    assert sorted(p.name for p in ev.iterdir()) == ["config.json", "env.json", "evaluation.json"]
    assert json.loads((ev / "evaluation.json").read_text()) == got
    assert json.loads((ev / "config.json").read_text())["split"] == "test"
    r = run_cli(main, ["evaluate", "--run", str(out), "--out", str(ev)])  # negative control: a used --out is refused
    assert r.returncode == 2 and "--overwrite" in r.stderr


def test_presets_choose_the_fit_defaults_and_flags_override(monkeypatch):
    import relgnn.cli as cli
    from relgnn.config import FitConfig

    seen = []
    monkeypatch.setattr(cli, "train", lambda cfg: seen.append(cfg) or 0)
    for argv in (["train"], ["train", "--preset", "paper"], ["train", "--preset", "paper", "--channels", "16"]):
        assert main(argv) == 0
    assert seen[0].fit.resolve() == FitConfig.cpu()  # negative control: no --preset
    assert seen[1].fit.resolve() == FitConfig.paper() != FitConfig.cpu()
    assert seen[2].fit.resolve() == FitConfig.paper(channels=16)


def test_bad_input_exit_code(tmp_path):
    r = run_cli(main, ["train", "--out", str(tmp_path / "x"), "--channels", "0"])
    assert r.returncode == 2 and "channels" in r.stderr
    r = run_cli(main, ["train", "--out", str(tmp_path / "y"), "--task", "nope", *TINY])
    assert r.returncode == 2 and "task must be one of" in r.stderr


_BAD_FLOATS = [(["--lr", "inf"], "--lr"), (["--lr", "nan"], "--lr"), (["--lr", "0"], "--lr"), (["--lr", "-1e-3"], "--lr"),
               (["--dropout", "1"], "--dropout"), (["--dropout", "nan"], "--dropout"),
               (["--dropout", "-0.1"], "--dropout")]


def test_non_finite_or_non_positive_float_flags_are_refused_up_front(tmp_path):
    """``relgnn train --lr inf`` used to train into NaN and end with "Input contains NaN."; now every float flag out
    of range is one error line naming it, exit 2, nothing written, before torch is even imported (fresh
    interpreter)."""
    from icml25.testing import run_cli_fresh

    outs = [tmp_path / f"run{i}" for i in range(len(_BAD_FLOATS))]
    argvs = [["train", *argv, "--out", str(o), *TINY] for (argv, _), o in zip(_BAD_FLOATS, outs)]
    results, imported = run_cli_fresh("relgnn.cli", argvs)
    assert "torch" not in imported
    for (argv, name), r, o in zip(_BAD_FLOATS, results, outs):
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"relgnn: error: {name} must be"), (
            argv, r.stderr)
        assert not o.exists()


def test_config_validator_refuses_non_finite_numbers():
    from relgnn.config import FitConfig
    from relgnn.errors import ConfigError

    FitConfig(lr=1e-3, dropout=0.0).validate()  # control: finite, in range
    for bad in (float("inf"), float("nan"), 0.0, -1.0):
        with pytest.raises(ConfigError, match="lr must be a finite number > 0"):
            FitConfig(lr=bad).validate()
    for bad in (1.0, float("nan"), -0.1, float("inf")):
        with pytest.raises(ConfigError, match=r"dropout must be a number in \[0, 1\)"):
            FitConfig(dropout=bad).validate()


def test_real_loader_offline_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from relgnn.data import load_task

    with pytest.raises(DataUnavailableError, match="network"):
        load_task("rel-f1-definitely-not-cached", "driver-top3")
