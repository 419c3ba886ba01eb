import json

import pytest
from focoop.cli import main
from icml25.testing import run_cli


def test_help_lists_commands():
    res = run_cli(main, ["--help"])
    assert res.returncode == 0
    for cmd in ("run", "prepare", "reproduce"):
        assert cmd in res.stdout


@pytest.mark.parametrize("argv,field", [(["--alpha", "0"], "alpha"), (["--frac", "1.5"], "frac"),
                                        (["--tau", "0"], "tau"), (["--reg-m", "0"], "reg_m"),
                                        (["--clients", "0"], "clients")])
def test_run_bad_input_exits_2(argv, field, tmp_path):
    res = run_cli(main, ["run", "--synthetic", "--out", str(tmp_path / "r"), *argv])
    assert res.returncode == 2 and field in res.stderr


def test_run_synthetic_tiny(tmp_path):
    out = tmp_path / "r"
    res = run_cli(main, ["run", "--synthetic", "--quiet", "--clients", "2", "--rounds", "1", "--local-epochs", "1",
                         "--n-ood", "4", "--out", str(out)])
    assert res.returncode == 0, res.stderr
    data = json.loads((out / "results.json").read_text())
    assert data["engine"] == "inprocess" and len(data["per_client"]) == 2
    assert 0.0 <= data["summary"]["auroc"] <= 1.0
    assert (out / "global_prompts.safetensors").exists()


def test_presets_choose_federation_and_run_defaults_and_flags_override(monkeypatch):
    import focoop.cli as cli
    from focoop.config import cpu, paper

    seen = []
    monkeypatch.setattr(cli, "run", lambda opts: seen.append(opts) or 0)
    for argv in (["run"], ["run", "--preset", "paper"], ["run", "--preset", "paper", "--lr", "0.5", "--clients", "3"]):
        assert cli.main(argv) == 0
    assert seen[0].fed_split() == cpu().federation and seen[0].fed.resolve() == cpu().fed  # negative control
    assert seen[1].fed_split() == paper().federation and seen[1].fed.resolve() == paper().fed
    assert seen[1].fed.lr == 1e-3 and seen[1].federation.n_ctx == 16
    assert seen[2].fed.lr == 0.5 and seen[2].fed_split().n_clients == 3 and seen[2].federation.n_ood == 100
