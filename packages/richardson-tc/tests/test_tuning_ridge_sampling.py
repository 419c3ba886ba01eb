"""Tests of the validation split of Ω, grid extension, the ridge fixed point and the sample-count knob."""

from __future__ import annotations

import numpy as np
import pytest
from richardson_tc.bench import timed_run
from richardson_tc.cp import cp_reconstruct, init_factors, relative_error, unfold
from richardson_tc.data import ObservedEntries, make_tensor, sample_mask, split_mask
from richardson_tc.errors import RichardsonTcError
from richardson_tc.reproduce import _lam_up, _validation_view, select_extending
from richardson_tc.richardson import lifted_richardson
from richardson_tc.solvers import CPModeSolver, masked_lstsq


def test_split_mask_partitions_omega_exactly_and_is_seeded():
    mask = sample_mask((10, 9, 8), 0.3, seed=1)
    fit, val = split_mask(mask, 0.1, seed=5)
    assert not (fit & val).any() and ((fit | val) == mask).all()
    assert val.sum() == int(np.floor(0.1 * mask.sum()))
    fit2, val2 = split_mask(mask, 0.1, seed=5)
    assert (val2 == val).all()
    _, val3 = split_mask(mask, 0.1, seed=6)
    assert not (val3 == val).all()  # negative control: another seed, another split
    with pytest.raises(RichardsonTcError, match="frac"):
        split_mask(mask, 1.0, seed=0)


def test_validation_view_scores_only_the_validation_entries_of_omega():
    x = make_tensor("cp", shape=(12, 11, 10), rank=3, seed=0)
    mask = sample_mask(x.shape, 0.4, seed=1)
    xv, fit = _validation_view(x, mask, 0.2, seed=3)
    val = mask & ~fit
    assert np.isnan(xv[~mask]).all() and (xv[mask] == x[mask]).all()
    r = timed_run(xv, fit, "direct", rank=3, n_sweeps=3, seed=0)
    h = r["history"]
    # recompute the score from the returned model: it is the RRE over the validation entries, not the test entries
    from richardson_tc.complete import cp_complete

    cp, _ = cp_complete(xv, fit, rank=3, solver="direct", n_sweeps=3, seed=0)
    full = cp_reconstruct(cp.factors)
    assert r["test_rre"] == pytest.approx(relative_error(x, full, val), rel=1e-12)
    assert h.final("test_rre") != pytest.approx(relative_error(x, full, ~mask), rel=1e-3)  # negative control


def test_select_extending_brackets_an_optimum_beyond_the_grid():
    calls = []

    def evaluate(p):
        calls.append(p["lam"])
        return (np.log10(p["lam"]) - 2.0) ** 2  # optimum at λ = 100, beyond the grid's top (10)

    sel = select_extending(evaluate, "lam", [0.01, 0.1, 1.0, 10.0], up=_lam_up, down=lambda _: None, extend=3,
                           name="t")
    assert sel.params["lam"] == pytest.approx(100.0)
    assert not sel.at_edge  # 1000 was tried and is worse: the optimum is bracketed
    assert sorted(calls) == pytest.approx([0.01, 0.1, 1.0, 10.0, 100.0, 1000.0])  # each value evaluated once
    # negative control: an interior optimum does not extend the grid
    sel2 = select_extending(lambda p: (np.log10(p["lam"]) + 1.0) ** 2, "lam", [0.01, 0.1, 1.0, 10.0], up=_lam_up,
                            down=lambda _: None, name="t2")
    assert sel2.params["lam"] == pytest.approx(0.1) and len(sel2.grid["lam"]) == 4
    # a boundary (no value below 0) stays flagged as an edge
    sel3 = select_extending(lambda p: p["lam"], "lam", [0.0, 1.0, 10.0], up=_lam_up, down=lambda _: None, name="t3")
    assert sel3.params["lam"] == 0.0 and sel3.at_edge


def test_lifted_fixed_point_with_ridge_is_the_ridge_masked_solve():
    x = make_tensor("cp", shape=(12, 11, 10), rank=3, seed=0)
    mask = sample_mask(x.shape, 0.3, seed=1)
    f = [a + 0.3 for a in init_factors(x.shape, 3, seed=2, scale=1.0)]
    lam = 0.5
    direct = masked_lstsq(ObservedEntries.from_mask(x, mask), f, 1, ridge=lam)
    obs = (unfold(mask, 1), unfold(np.where(mask, x, 0), 1))
    res = lifted_richardson(CPModeSolver(f, 1, ridge=lam), f[1], obs, tol=1e-13, max_inner=20000)
    assert np.linalg.norm(res.x - direct) / np.linalg.norm(direct) < 1e-8
    # negative control: the unregularised solve is a different point
    plain = masked_lstsq(ObservedEntries.from_mask(x, mask), f, 1)
    assert np.linalg.norm(res.x - plain) / np.linalg.norm(plain) > 1e-4


def test_sample_count_reaches_the_solver_and_full_count_is_exact():
    x = make_tensor("cp", shape=(10, 10, 10), rank=3, seed=0)
    mask = sample_mask(x.shape, 0.5, seed=1)
    kw = dict(rank=3, n_sweeps=2, seed=0, tol=1e-6)
    exact = timed_run(x, mask, "lifted", **kw)
    full = timed_run(x, mask, "lifted-sampled", n_samples=100, **kw)  # s ≥ J = 100: the exact solve
    assert full["test_rre"] == pytest.approx(exact["test_rre"], rel=1e-9)
    few = timed_run(x, mask, "lifted-sampled", n_samples=6, **kw)
    assert few["test_rre"] != pytest.approx(exact["test_rre"], rel=1e-3)  # negative control: sampling changes it
