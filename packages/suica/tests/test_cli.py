import json

from icml25.testing import run_cli
from suica.cli import main
from suica.registry import METHOD


def test_registered_name():
    assert METHOD.name == "suica" and METHOD.cli == "suica"


def test_help():
    r = run_cli(main, ["--help"])
    assert r.returncode == 0
    for cmd in ("fit", "predict", "evaluate", "reproduce", "simulate"):
        assert cmd in r.stdout


def test_cli_end_to_end(tmp_path):
    data = tmp_path / "t.h5ad"
    assert run_cli(main, ["simulate", "--output", str(data), "--n-spots", "150", "--n-genes", "40", "--quiet"]).returncode == 0
    run = tmp_path / "run"
    tiny = ["--model.gae-hidden", "16", "8", "--model.latent-dim", "4", "--model.inr-width", "16",
            "--model.ffn-mapping", "8", "--model.gae-epochs", "3", "--model.inr-epochs", "3", "--model.decoder-epochs", "3"]
    r = run_cli(main, ["fit", "--data", str(data), "--out", str(run), "--min-counts-spot", "5", "--max-count", "None",
                       "--quiet", *tiny])
    assert r.returncode == 0, r.stderr
    assert (run / "model.safetensors").exists() and (run / "data.h5ad").exists()
    import anndata as ad

    pred = ad.read_h5ad(run / "predictions.h5ad")
    assert pred.uns["suica"]["sigma"] > 0 and "config" in pred.uns["suica"] and set(pred.obs["split"]) == {"train", "test"}
    r = run_cli(main, ["fit", "--data", str(data), "--out", str(tmp_path / "r4"), "--quiet", "--layer", "nope"])
    assert r.returncode == 2 and "layer 'nope'" in r.stderr and not (tmp_path / "r4").exists()
    r = run_cli(main, ["predict", "--model", str(run), "--grid", "12", "--output", str(tmp_path / "g.h5ad"), "--quiet"])
    assert r.returncode == 0, r.stderr
    r = run_cli(main, ["evaluate", "--model", str(run), "--out", str(tmp_path / "ev"), "--quiet"])
    assert r.returncode == 0, r.stderr
    assert "masked_cosine" in json.loads((tmp_path / "ev" / "evaluation.json").read_text())  # --out is honoured
    assert (tmp_path / "ev" / "config.json").exists() and not (run / "evaluation.json").exists()
    # bad input -> "error: ..." and exit code 2
    r = run_cli(main, ["fit", "--data", str(tmp_path / "missing.h5ad"), "--out", str(tmp_path / "r2"), "--quiet"])
    assert r.returncode == 2 and "error" in r.stderr
    r = run_cli(main, ["fit", "--data", str(data), "--out", str(tmp_path / "r3"), "--quiet", "--model.graph-norm", "bad"])
    assert r.returncode == 2 and "graph_norm" in r.stderr
