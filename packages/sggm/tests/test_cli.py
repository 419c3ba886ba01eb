"""CLI: bad input -> exit 2 with one `error:` line naming the field, nothing written; the commands run end to end."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sggm.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize("args, needle", [
    (["sweep", "--T", "0"], "T"),
    (["sweep", "--T", "-1"], "T"),
    (["sweep", "--n-steps", "0", "--over", "T", "--grid", "1", "2"], "n_steps"),
    (["sweep", "--grid", "0", "10"], "grid"),
    (["sweep", "--t-min", "9"], "t_min"),
    (["sweep", "--t-min", "0"], "t_min"),
    (["sweep", "--beta-min", "2", "--beta-max", "1"], "beta_max"),
    (["sweep", "--beta-min", "-1"], "beta"),
    (["sweep", "--n", "5", "--degree", "3"], "even"),
    (["sweep", "--n", "4", "--degree", "4"], "d must be < n"),
    (["sweep", "--graph", "powerlaw", "--n", "2", "--degree", "4"], "m must be < n"),
    (["sweep", "--alpha", "-1"], "alpha"),
    (["sweep", "--score-error", "nan"], "score_error"),
    (["train", "--steps", "0"], "steps"),
    (["train", "--n", "5", "--degree", "3"], "even"),
    (["sample", "--run", "no/such/run"], "model_config.json"),
])
def test_bad_input_exits_2_and_writes_nothing(args, needle, tmp_path, capsys):
    out = tmp_path / "never"
    rc = main([*args, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "error:" in err and needle in err, err
    assert not out.exists()


def test_bad_graph_files(tmp_path, capsys):
    for name, arr in (("asym", np.array([[0.0, 1.0], [0.0, 0.0]])), ("rect", np.ones((2, 3))),
                      ("nan", np.array([[0.0, np.nan], [np.nan, 0.0]]))):
        f = tmp_path / f"{name}.npy"
        np.save(f, arr)
        rc = main(["sweep", "--graph-file", str(f), "--out", str(tmp_path / "never")])
        err = capsys.readouterr().err
        assert rc == 2 and "error:" in err and str(f.name) in err, err
    assert not (tmp_path / "never").exists()


def test_sweep_end_to_end(tmp_path):
    assert main(["sweep", "--n", "12", "--n-features", "3", "--grid", "10", "20", "40", "--quiet",
                 "--out", str(tmp_path / "sw")]) == 0
    rows = json.loads((tmp_path / "sw" / "sweep.json").read_text())["rows"]
    assert rows[0]["kl"] > rows[1]["kl"] > rows[2]["kl"] > 0


@pytest.mark.slow
def test_train_sample_end_to_end(tmp_path):
    assert main(["train", "--task", "structure", "--n", "8", "--train-size", "16", "--steps", "3", "--hidden", "8",
                 "--quiet", "--out", str(tmp_path / "tr")]) == 0
    assert (tmp_path / "tr" / "model" / "model.safetensors").exists()
    assert main(["sample", "--run", str(tmp_path / "tr"), "--samples", "4", "--n-steps", "5", "--quiet",
                 "--out", str(tmp_path / "sa")]) == 0
    res = json.loads((tmp_path / "sa" / "sample.json").read_text())
    assert res["degree_mmd"] >= 0 and res["spectrum_mmd"] >= 0


def test_readme_python_quickstart_runs(tmp_path):
    code = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)[0]
    code = code.replace("(256, 60, 50)", "(8, 60, 50)")  # tiny sizes
    (tmp_path / "q.py").write_text(code)
    out = subprocess.run([sys.executable, "q.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={"OPENBLAS_NUM_THREADS": "1", "MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    kls = [float(line.split()[1]) for line in lines[:3]]
    assert kls[0] > kls[1] > kls[2] > 0


def test_train_joint_on_your_graphs_sample_and_evaluate(tmp_path):
    """The joint task on an edge-list file of graphs; sample scores against the held-out graphs; evaluate reads a
    folder of adjacencies (the samples) and the edge list."""
    import networkx as nx

    lines = [f"{u} {v} g{i}" for i in range(10) for u, v in nx.cycle_graph(5 + i % 3).edges]
    (tmp_path / "mine.txt").write_text("\n".join(lines) + "\n")
    assert main(["train", "--task", "joint", "--graphs", str(tmp_path / "mine.txt"), "--steps", "3", "--hidden", "8",
                 "--max-degree", "4", "--quiet", "--out", str(tmp_path / "tr")]) == 0
    assert (tmp_path / "tr" / "held_out" / "graphs.npz").exists()
    cfg = json.loads((tmp_path / "tr" / "model" / "model_config.json").read_text())
    assert sorted(set(cfg["node_counts"])) == [5, 6, 7] and cfg["n"] == 7  # GDSS's node flags: the training sizes
    assert main(["sample", "--run", str(tmp_path / "tr"), "--samples", "4", "--n-steps", "5", "--quiet",
                 "--out", str(tmp_path / "sa")]) == 0
    res = json.loads((tmp_path / "sa" / "sample.json").read_text())
    assert set(res) == {"degree", "cluster", "orbit"} and all(v >= -1e-12 for v in res.values())
    assert main(["evaluate", "--generated", str(tmp_path / "sa" / "graphs"), "--reference", str(tmp_path / "mine.txt"),
                 "--quiet", "--out", str(tmp_path / "ev")]) == 0
    ev = json.loads((tmp_path / "ev" / "evaluate.json").read_text())
    assert ev["reference"] == 10 and ev["generated"] == 4
    # bad input: one error line, exit 2
    assert main(["evaluate", "--generated", str(tmp_path / "nope"), "--reference", str(tmp_path / "mine.txt"),
                 "--quiet", "--out", str(tmp_path / "ev2")]) == 2
