"""The command line: simulate / gpt2 write a run directory; bad input exits 2 with one error line, writing nothing."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from attn_consensus.cli import main
from attn_consensus.config import Config


def test_simulate_writes_a_run(tmp_path):
    out = tmp_path / "run"
    rc = main(["simulate", "--n", "6", "--d", "3", "--steps", "200", "--dt", "0.05", "--quiet", "--out", str(out)])
    assert rc == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["leader_drift"] == 0.0 and s["final_diagnostic"] < s["final_diameter"] + 1
    assert (out / "final_tokens.npy").exists() and (out / "metrics.jsonl").exists()


def test_simulate_from_a_token_file(tmp_path):
    f = tmp_path / "x0.npy"
    np.save(f, np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 2.0]]))
    rc = main(["simulate", "--x0", str(f), "--mask", "full", "--steps", "50", "--quiet", "--out", str(tmp_path / "r")])
    assert rc == 0 and json.loads((tmp_path / "r" / "summary.json").read_text())["n"] == 3


@pytest.mark.slow  # imports transformers and builds a model (~10 s); the loop itself is tested in test_hf_loop
def test_gpt2_tiny_writes_a_run(tmp_path):
    out = tmp_path / "g"
    rc = main(["gpt2", "--iterations", "2", "--batch", "2", "--length", "6", "--n-layer", "1", "--n-embd", "16",
               "--drop-mlp", "--quiet", "--out", str(out)])
    assert rc == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["mask"] == "causal" and s["layers_per_pass"] == 1


def _bad_files(tmp: Path) -> dict[str, Path]:
    zero = tmp / "zero.npy"
    np.save(zero, np.zeros((3, 3)))
    nan = tmp / "nan.npy"
    np.save(nan, np.array([[1.0, np.nan], [0.0, 1.0]]))
    return {"zero": zero, "nan": nan}


BAD = [
    (["simulate", "--dt", "0"], "dt"),
    (["simulate", "--dt", "-1"], "dt"),
    (["simulate", "--steps", "0"], "steps"),
    (["simulate", "--d", "1"], "d must"),
    (["simulate", "--n", "0"], "n must"),
    (["simulate", "--mask", "sideways"], "mask"),
    (["simulate", "--method", "leapfrog"], "method"),
    (["simulate", "--v", "weird"], "v must"),
    (["simulate", "--x0", "{zero}"], "zero-norm"),
    (["simulate", "--x0", "{nan}"], "finite"),
    (["simulate", "--x0", "{missing}"], "no such file"),
    (["gpt2", "--iterations", "0"], "iterations"),
    (["gpt2", "--mask", "sideways"], "mask"),
    (["gpt2", "--reinit", "sometimes"], "reinit"),
]


@pytest.mark.parametrize("args, needle", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_exit_2_one_line_nothing_written(args, needle, tmp_path, capsys):
    files = {k: str(v) for k, v in _bad_files(tmp_path).items()}
    files["missing"] = str(tmp_path / "missing.npy")
    args = [a.format(**files) for a in args]
    out = tmp_path / "never"
    rc = main([*args, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "error:" in lines[0] and needle in lines[0], err
    assert "Traceback" not in err
    assert not out.exists() and not any(p.name.startswith(".never") for p in tmp_path.iterdir())


@pytest.mark.parametrize("field, value", [("seeds", 0), ("dt", 0.0), ("n", -1), ("dims", (1,)), ("scales", ()),
                                          ("horizon", float("nan")), ("gpt_n_embd", 130)])
def test_bad_config_names_the_field(field, value):
    with pytest.raises(ValueError, match=re.escape(field)):
        Config(**{field: value})
