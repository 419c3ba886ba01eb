"""Bad input: clear errors naming the field (library) and one `error:` line with exit 2 (CLI), nothing written."""

from __future__ import annotations

import numpy as np
import pytest
from richardson_tc.cli import main
from richardson_tc.complete import cp_complete
from richardson_tc.cp import unfold
from richardson_tc.data import ObservedEntries, sample_mask
from richardson_tc.errors import RichardsonTcError
from richardson_tc.richardson import lifted_richardson
from richardson_tc.solvers import CPModeSolver

X = np.random.default_rng(0).standard_normal((6, 5, 4))
M = sample_mask(X.shape, 0.5, seed=0)


@pytest.mark.parametrize("kwargs, needle", [
    (dict(mask=np.ones((6, 5), bool)), "mask shape"),
    (dict(mask=np.zeros(X.shape, bool)), "empty"),
    (dict(rank=0), "rank"),
    (dict(rank=-2), "rank"),
    (dict(tol=0.0), "tol"),
    (dict(tol=1.0), "tol"),
    (dict(max_inner=0), "max_inner"),
    (dict(n_sweeps=0), "n_sweeps"),
    (dict(solver="newton"), "solver"),
    (dict(stop_rule="never"), "stop_rule"),
    (dict(sampled=True, solver="direct"), "sampled"),
    (dict(max_entries=10), "max_entries"),
])
def test_cp_complete_refuses_bad_arguments(kwargs, needle):
    args = dict(tensor=X, mask=M, rank=2)
    args.update(kwargs)
    with pytest.raises(RichardsonTcError, match=needle):
        cp_complete(args.pop("tensor"), args.pop("mask"), **args)


def test_nan_order_and_dtype_refused():
    bad = X.copy()
    bad[M] = np.nan
    with pytest.raises(RichardsonTcError, match="NaN"):
        cp_complete(bad, M, rank=2)
    ok = X.copy()
    ok[~M] = np.nan  # NaN at unobserved entries is fine (missing data)
    cp_complete(ok, M, rank=2, n_sweeps=1)
    with pytest.raises(RichardsonTcError, match="order"):
        cp_complete(np.ones(5), np.ones(5, bool), rank=1)
    with pytest.raises(RichardsonTcError, match="float"):
        cp_complete(np.ones((3, 3), dtype=np.int64), np.ones((3, 3), bool), rank=1)


@pytest.mark.parametrize("coords, values, needle", [
    (np.array([[0, 0, 0], [6, 0, 0]]), np.array([1.0, 2.0]), "out of range"),
    (np.array([[0, 0, 0], [0, 0, 0]]), np.array([1.0, 2.0]), "duplicate"),
    (np.array([[0, 0, 0], [1, 0, 0]]), np.array([1.0, np.nan]), "NaN"),
    (np.zeros((0, 3), int), np.zeros(0), "empty"),
    (np.array([[0, 0], [1, 0]]), np.array([1.0, 2.0]), "coords must be"),
    (np.array([[0, 0, 0]]), np.array([1]), "float"),
])
def test_coo_input_validated(coords, values, needle):
    with pytest.raises(RichardsonTcError, match=needle):
        ObservedEntries.from_coo(X.shape, coords, values)


def test_solver_callable_with_the_wrong_shape_refused():
    f = [np.ones((6, 2)), np.ones((5, 2)), np.ones((4, 2))]
    obs = (unfold(M, 0), unfold(X, 0))
    with pytest.raises(RichardsonTcError, match="full_solve returned shape"):
        lifted_richardson(lambda t: np.zeros((3, 3)), f[0], obs, predict=CPModeSolver(f, 0).predict)
    with pytest.raises(RichardsonTcError, match="predict returned shape"):
        lifted_richardson(CPModeSolver(f, 0), f[0], obs, predict=lambda v: np.zeros(3))
    with pytest.raises(RichardsonTcError, match="tol"):
        lifted_richardson(CPModeSolver(f, 0), f[0], obs, tol=2.0)


@pytest.mark.parametrize("args, needle", [
    (["complete", "--p", "0"], "p"),
    (["complete", "--p", "1.5"], "p"),
    (["complete", "--solver-options.rank", "0"], "rank"),
    (["complete", "--solver-options.tol", "1.0"], "tol"),
    (["complete", "--solver-options.max-inner", "0"], "max_inner"),
    (["complete", "--solver-options.n-sweeps", "0"], "n_sweeps"),
    (["complete", "--shape", "5"], "shape"),
    (["complete", "--input", "missing.npy"], "missing.npy"),
    (["complete", "--solver-options.max-entries", "1000"], "max_entries"),
    (["complete", "--solver-options.max-entries", "0"], "max_entries"),
    (["benchmark", "--ps", "0.0"], "p"),
])
def test_cli_bad_input_one_error_line_exit_2_nothing_written(args, needle, tmp_path, capsys):
    out = tmp_path / "run"
    try:
        rc = main([*args, "--out", str(out)])
    except SystemExit as exc:  # a config's __post_init__ refused the value while tyro parsed it
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2
    assert "error" in err.lower() and needle in err and "Traceback" not in err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_cli_complete_and_benchmark_write_their_run_dirs(tmp_path):
    import json

    out = tmp_path / "c"
    assert main(["complete", "--shape", "8", "8", "8", "--true-rank", "2", "--p", "0.5", "--solver-options.rank",
                 "2", "--solver-options.n-sweeps", "2", "--quiet", "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["inner_updates"] >= 6 and 0 <= res["test_rre"] < 1
    with np.load(out / "factors.npz") as z:
        assert z["factor_0"].shape == (8, 2)
    np.save(tmp_path / "x.npy", np.random.default_rng(0).standard_normal((6, 5, 4)))
    np.savez(tmp_path / "e.npz", coords=np.argwhere(M), values=X[M], shape=np.array(X.shape))
    assert main(["complete", "--coo", str(tmp_path / "e.npz"), "--solver-options.rank", "2", "--solver-options.solver",
                 "direct", "--quiet", "--out", str(tmp_path / "coo")]) == 0
    assert main(["complete", "--input", str(tmp_path / "x.npy"), "--solver-options.rank", "2", "--quiet",
                 "--out", str(tmp_path / "npy")]) == 0
    assert main(["benchmark", "--shape", "8", "8", "8", "--rank", "2", "--ps", "0.5", "--n-sweeps", "2", "--quiet",
                 "--out", str(tmp_path / "b")]) == 0
    rows = json.loads((tmp_path / "b" / "benchmark.json").read_text())
    assert {r["solver"] for r in rows} >= {"direct", "direct-loop", "em", "lifted", "lifted-accel"}
