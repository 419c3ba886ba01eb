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
    r = run_cli(main, ["evaluate", "--run", str(out)])
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["metric"] == "roc_auc" and abs(got["value"] - summary["test"]) < 1e-9  # same model, same numbers


def test_bad_input_exit_code(tmp_path):
    r = run_cli(main, ["train", "--out", str(tmp_path / "x"), "--channels", "0"])
    assert r.returncode == 2 and "channels" in r.stderr
    r = run_cli(main, ["train", "--out", str(tmp_path / "y"), "--task", "nope", *TINY])
    assert r.returncode == 2 and "task must be one of" in r.stderr


def test_real_loader_offline_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from relgnn.data import load_task

    with pytest.raises(DataUnavailableError, match="network"):
        load_task("rel-f1-definitely-not-cached", "driver-top3")
