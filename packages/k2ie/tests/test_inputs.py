"""Bad input: a clear K2ieError naming the field, and the CLI's `error:` line with exit 2 and nothing written."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from k2ie import K2IE, KIE, FlaxmanRKHS, K2ieError, Window, select
from k2ie.cli import main

W = Window([[[0.0, 1.0]]])


@pytest.mark.parametrize("boxes, match", [
    ([[[1.0, 0.0]]], "lo >= hi"),
    ([[[0.0, 1.0, 2.0]]], "shaped"),
    ([[[0.0, 1.0]], [[0.5, 2.0]]], "overlap"),
    ([[[0.0, np.nan]]], "finite"),
])
def test_bad_windows(boxes, match):
    with pytest.raises(K2ieError, match=match):
        Window(boxes)


def test_overlap_allowed_on_request_and_touching_boxes_are_fine():
    Window([[[0.0, 1.0]], [[0.5, 2.0]]], allow_overlap=True)
    Window([[[0.0, 1.0]], [[1.0, 2.0]]])


@pytest.mark.parametrize("kwargs, match", [
    ({"a": 0.0}, "a must be"), ({"a": -1.0}, "a must be"), ({"b": 0.0}, "b must be"), ({"b": [1.0, -1.0]}, "b must be"),
    ({"n_features": 3}, "n_features"), ({"n_features": 0}, "n_features"), ({"kernel": "matern"}, "kernel"),
])
def test_bad_hyper_parameters(kwargs, match):
    for cls in (K2IE, FlaxmanRKHS):
        with pytest.raises(K2ieError, match=match):
            cls(**kwargs)


def test_bad_points():
    with pytest.raises(K2ieError, match="outside the window"):
        K2IE().fit([[0.5], [1.5]], W)
    with pytest.raises(K2ieError, match="finite"):
        K2IE().fit([[0.5], [np.nan]], W)
    with pytest.raises(K2ieError, match="d=1"):
        K2IE().fit(np.zeros((3, 2)), W)
    with pytest.raises(K2ieError, match="b has 2 entries"):
        K2IE(b=[1.0, 2.0]).fit([[0.5]], W)
    with pytest.raises(K2ieError, match="x must be shaped"):
        K2IE().fit([[0.5]], W).predict(np.zeros((2, 2)))
    with pytest.raises(K2ieError, match="not fitted"):
        KIE().predict([[0.5]])


def test_empty_data_gives_zero_but_selection_refuses():
    m = K2IE(n_features=20).fit(np.zeros((0, 1)), W)
    assert np.all(m.predict([[0.2], [0.7]]) == 0.0) and m.integral() == 0.0
    with pytest.raises(K2ieError, match="empty"):
        select(K2IE(n_features=20), np.zeros((0, 1)), W, grid={"a": [1.0]})
    with pytest.raises(K2ieError, match="LSCV needs at least 2"):
        K2IE(n_features=20).fit([[0.5]], W).lscv()


@pytest.mark.parametrize("p", [0.0, 1.0, 1.5, -0.1])
def test_selection_p_outside_unit_interval(p):
    with pytest.raises(K2ieError, match="p must be in"):
        select(K2IE(n_features=20), [[0.1], [0.5]], W, grid={"a": [1.0]}, p=p)


def test_selection_unknown_grid_name():
    with pytest.raises(K2ieError, match="does not have"):
        select(KIE(), [[0.1], [0.5]], W, grid={"a": [1.0]})


def _cli(tmp_path, capsys, *args):
    out = tmp_path / "never"
    rc = main([*args, "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    return rc, err, out


@pytest.mark.parametrize("args, match", [
    (["fit", "--estimator.a", "-1"], "a must be"),
    (["fit", "--estimator.b", "0"], "b must be"),
    (["fit", "--estimator.n-features", "7"], "n_features"),
    (["fit", "--p", "1.5"], "p must be in"),
    (["fit", "--method", "kie", "--cv", "lscv"], "lscv"),
])
def test_cli_bad_options(tmp_path, capsys, args, match):
    rc, err, out = _cli(tmp_path, capsys, *args)
    assert rc == 2 and re.search(match, err) and "Traceback" not in err and not out.exists()


@pytest.mark.parametrize("payload, match", [
    ({"points": [[0.5], [1.5]], "window": [[[0.0, 1.0]]]}, "outside the window"),
    ({"points": [[0.5]], "window": [[[1.0, 0.0]]]}, "lo >= hi"),
    ({"points": [[0.5]], "window": [[[0.0, 1.0]], [[0.5, 2.0]]]}, "overlap"),
    ({"points": [[0.5, 0.5]], "window": [[[0.0, 1.0]]]}, "d=1"),
    ({"points": [[0.5]]}, "window"),
])
def test_cli_bad_points_file(tmp_path, capsys, payload, match):
    f = tmp_path / "pts.json"
    f.write_text(json.dumps(payload))
    rc, err, out = _cli(tmp_path, capsys, "fit", "--points", str(f), "--no-select")
    assert rc == 2 and re.search(match, err) and "Traceback" not in err and not out.exists()


def test_cli_fit_then_evaluate(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["fit", "--data", "l1", "--grid-size", "2", "--n-splits", "1", "--estimator.n-features", "40",
                 "--out", str(run), "--quiet"]) == 0
    assert (run / "model.json").exists() and (run / "fit.json").exists()
    ev = tmp_path / "ev"
    assert main(["evaluate", "--run", str(run), "--out", str(ev), "--quiet"]) == 0
    res = json.loads((ev / "evaluate.json").read_text())
    assert res["ise"] > 0 and np.isfinite(res["iae"])


def test_readme_quickstart_runs():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    code = re.findall(r"^```python\n(.*?)^```", readme, re.S | re.M)[0]
    exec(compile(code, "README.md", "exec"), {})


# --- points from CSV (one coordinate per column, the window from --bounds) ---------------------------------------

def _write_csv(path, x, header=None):
    lines = ([",".join(header)] if header else []) + [",".join(repr(float(v)) for v in row) for row in x]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("header", [None, ["x", "y"]])
def test_csv_points_round_trip_equal_the_api_fit(tmp_path, header):
    """`fit --points pts.csv --bounds ...` fits exactly the points of the file on the box of the bounds: λ̂ equals the
    API fit on the same points (2-D, with and without a header row); a shifted window is the negative control."""
    from k2ie.io import read_points_csv, window_from_bounds

    rng = np.random.default_rng(0)
    x = rng.uniform([0.0, 1.0], [2.0, 4.0], (40, 2))
    f = _write_csv(tmp_path / "pts.csv", x, header)
    np.testing.assert_array_equal(read_points_csv(f), x)  # repr() round-trips float64 exactly
    run = tmp_path / "run"
    assert main(["fit", "--points", str(f), "--bounds", "0", "2", "1", "4", "--no-select", "--estimator.a", "3",
                 "--estimator.b", "0.7", "--estimator.n-features", "60", "--out", str(run), "--quiet"]) == 0
    model = json.loads((run / "model.json").read_text())
    assert model["window"] == [[[0.0, 2.0], [1.0, 4.0]]]
    grid = rng.uniform([0.0, 1.0], [2.0, 4.0], (25, 2))
    ref = K2IE(a=3.0, b=0.7, n_features=60).fit(x, window_from_bounds([0, 2, 1, 4]))
    from k2ie.cli import load_run

    est, _ = load_run(run)
    np.testing.assert_allclose(est.predict(grid), ref.predict(grid), rtol=1e-12)
    other = K2IE(a=3.0, b=0.7, n_features=60).fit(x, window_from_bounds([-1, 2, 1, 5]))
    assert np.abs(other.predict(grid) - ref.predict(grid)).max() > 1e-3


def test_csv_points_with_selection_and_blank_lines(tmp_path):
    f = tmp_path / "pts.csv"
    f.write_text("t\n1.0\n\n2.5\n7.0\n9.5\n")
    run = tmp_path / "run"
    assert main(["fit", "--points", str(f), "--bounds", "0", "10", "--grid-size", "2", "--n-splits", "2",
                 "--estimator.n-features", "20", "--out", str(run), "--quiet"]) == 0
    assert json.loads((run / "fit.json").read_text())["n_points"] == 4


@pytest.mark.parametrize("text, bounds, match", [
    ("x\n0.5\nabc\n", ["0", "1"], r"line 3, column 1 \('x'\): 'abc' is not a finite number"),
    ("0.5,0.5\n0.2\n", ["0", "1", "0", "1"], "line 2: 1 column"),
    ("0.5\nnan\n", ["0", "1"], "line 2, column 1: 'nan'"),
    ("0.5\n1.5\n", ["0", "1"], "outside the window"),
    ("0.5\n", ["0", "1", "0", "1"], "d=1 column"),
    ("0.5\n", ["0", "1", "2"], "pairs lo hi"),
    ("0.5\n", ["1", "0"], "lo >= hi"),
    ("0.5\n", ["0", "nan"], "finite"),
    ("0.5\n", None, "give its window with --bounds"),
    ("", ["0", "1"], "is empty"),
])
def test_cli_bad_csv(tmp_path, capsys, text, bounds, match):
    f = tmp_path / "pts.csv"
    f.write_text(text)
    args = ["fit", "--points", str(f), "--no-select"] + (["--bounds", *bounds] if bounds else [])
    rc, err, out = _cli(tmp_path, capsys, *args)
    assert rc == 2 and re.search(match, err), err
    assert "Traceback" not in err and not out.exists()


def test_cli_bounds_need_csv_points(tmp_path, capsys):
    rc, err, out = _cli(tmp_path, capsys, "fit", "--bounds", "0", "1", "--no-select")
    assert rc == 2 and "--bounds" in err and not out.exists()
    f = tmp_path / "pts.json"
    f.write_text(json.dumps({"points": [[0.5]], "window": [[[0.0, 1.0]]]}))
    rc, err, out = _cli(tmp_path, capsys, "fit", "--points", str(f), "--bounds", "0", "1", "--no-select")
    assert rc == 2 and "own 'window'" in err and not out.exists()
    rc, err, out = _cli(tmp_path, capsys, "fit", "--points", str(tmp_path / "missing.csv"), "--bounds", "0", "1")
    assert rc == 2 and "missing.csv" in err and "no such file" in err and not out.exists()
