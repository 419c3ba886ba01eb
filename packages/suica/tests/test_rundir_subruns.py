"""The committed scale sub-run (results/full/scale) survives `reproduce --overwrite` of the main run."""

import json

import pytest
from icml25.experiment import Section
from icml25.testing import run_cli
from suica.cli import main


def _tiny_experiment(cfg, seeds, out):
    sec = Section("tiny")
    (out / "tiny.txt").write_text("new run")
    return sec


@pytest.fixture
def old_run(tmp_path, monkeypatch):
    import suica.reproduce as rep

    monkeypatch.setattr(rep, "EXPERIMENTS", [_tiny_experiment])
    full = tmp_path / "full"
    (full / "scale").mkdir(parents=True)
    (full / "scale" / "results.json").write_text(json.dumps({"marker": "scale run"}))
    (full / "scale" / "results.md").write_text("scale table")
    (full / "other").mkdir()
    (full / "other" / "results.json").write_text("{}")  # not a known sub-run: replaced like every other old file
    (full / "old.png").write_text("old figure")
    return full


def test_overwrite_keeps_scale_subrun(old_run):
    r = run_cli(main, ["reproduce", "--smoke", "--out", str(old_run), "--overwrite", "--quiet"])
    assert r.returncode == 0, r.stderr
    assert (old_run / "tiny.txt").read_text() == "new run"  # the new main run is in place
    assert json.loads((old_run / "scale" / "results.json").read_text()) == {"marker": "scale run"}
    assert (old_run / "scale" / "results.md").read_text() == "scale table"
    notes = json.loads((old_run / "results.json").read_text())["notes"]
    assert any("carried over" in n and "scale/" in n for n in notes)
    # negative controls: the rest of the old run is replaced, so the carry (not a leftover) kept scale/
    assert not (old_run / "old.png").exists() and not (old_run / "other").exists()
    assert not list(old_run.parent.glob(".full.*"))  # no staging leftovers


def test_without_carry_the_overwrite_deletes_scale(old_run, monkeypatch):
    import suica.reproduce as rep

    monkeypatch.setattr(rep, "SUBRUNS", ())
    r = run_cli(main, ["reproduce", "--smoke", "--out", str(old_run), "--overwrite", "--quiet"])
    assert r.returncode == 0, r.stderr
    assert (old_run / "tiny.txt").exists() and not (old_run / "scale").exists()
