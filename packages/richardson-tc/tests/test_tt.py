"""Tests of the TT completion driver (lifted Richardson over the TT cores)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorly as tl
from richardson_tc.data import sample_mask
from richardson_tc.errors import RichardsonTcError
from richardson_tc.richardson import lifted_richardson
from richardson_tc.solvers import TTCoreSolver
from richardson_tc.tt import tt_complete, tt_init, tt_masked_core_lstsq, tt_reconstruct

SHAPE = (10, 11, 12)


def _tt_problem(p=0.3, seed=0, noise=0.05):
    truth = tt_init(SHAPE, (1, 2, 2, 1), seed=seed + 5)
    x = tt_reconstruct(truth)
    x = x + noise * np.std(x) * np.random.default_rng(seed).standard_normal(SHAPE)
    return x, sample_mask(SHAPE, p, seed=seed + 1)


def test_tt_reconstruct_matches_tensorly():
    cores = tt_init(SHAPE, (1, 3, 2, 1), seed=0)
    assert np.allclose(tt_reconstruct(cores), tl.tt_to_tensor(cores))


def test_direct_core_solve_equals_lstsq_on_the_explicit_design_and_is_the_lifted_fixed_point():
    x, mask = _tt_problem()
    cores = tt_init(SHAPE, (1, 2, 2, 1), seed=3)
    k = 1
    direct = tt_masked_core_lstsq(cores, k, np.where(mask, x, 0), mask)
    block = TTCoreSolver(cores, k)
    obs = np.argwhere(mask)
    a, b = block.left.shape[1], block.right.shape[0]
    rows = np.zeros((len(obs), a, SHAPE[k], b))  # observed rows of L ⊗ I ⊗ Rᵀ
    rows[np.arange(len(obs)), :, obs[:, k], :] = block.left[obs[:, 0]][:, :, None] * block.right[:, obs[:, 2]].T[:, None, :]
    ref = np.linalg.lstsq(rows.reshape(len(obs), -1), x[mask], rcond=None)[0].reshape(a, SHAPE[k], b)
    assert np.linalg.norm(direct - ref) / np.linalg.norm(ref) < 1e-10
    lif = lifted_richardson(block, cores[k], (mask, x), tol=1e-13, max_inner=20000, accelerate=False)
    assert np.linalg.norm(lif.x - direct) / np.linalg.norm(direct) < 1e-8
    em = lifted_richardson(block, cores[k], (mask, x), tol=0.5, max_inner=1)  # negative control: one update
    assert np.linalg.norm(em.x - direct) / np.linalg.norm(direct) > 1e-2


def test_at_p_one_lifted_direct_and_em_coincide_and_equal_the_full_tt_als_step():
    x, _ = _tt_problem()
    full = np.ones(SHAPE, dtype=bool)
    out = {s: tt_complete(x, full, rank=2, solver=s, n_sweeps=2, seed=0)[0] for s in ("lifted", "direct", "em")}
    for s in ("lifted", "em"):
        for c, d in zip(out[s], out["direct"]):
            assert np.allclose(c, d, rtol=1e-8, atol=1e-10)
    # the first core step equals one full-data TT-ALS step from the same start
    c0 = tt_init(SHAPE, (1, 2, 2, 1), seed=0)
    step = TTCoreSolver(c0, 0)(x)
    one = tt_complete(x, full, rank=2, solver="lifted", n_sweeps=1, seed=0)[1]
    assert one["steps"][0]["updates"] == 1
    assert np.allclose(tt_masked_core_lstsq(c0, 0, x, full), step, rtol=1e-8, atol=1e-10)


def test_lifted_tt_completion_reaches_direct_accuracy_and_em_does_not():
    x, mask = _tt_problem(p=0.3, noise=0.0)
    kw = dict(rank=2, n_sweeps=10, seed=0)
    _, hd = tt_complete(x, mask, solver="direct", **kw)
    _, hl = tt_complete(x, mask, solver="lifted", tol=1e-6, **kw)
    _, he = tt_complete(x, mask, solver="em", **kw)
    d, lf, em = (h["sweeps"][-1]["test_rre"] for h in (hd, hl, he))
    assert d < 1e-3 and lf < 1e-3
    assert em > 10 * lf  # negative control: one update per core step (EM) is far from it at p = 0.3


@pytest.mark.parametrize("kwargs, needle", [
    (dict(rank=0), "rank"), (dict(rank=(1, 2, 1)), "rank"), (dict(rank=2, solver="x"), "solver"),
    (dict(rank=2, tol=1.5), "tol"), (dict(rank=2, n_sweeps=0), "n_sweeps"), (dict(rank=2, ridge=-1.0), "ridge"),
])
def test_tt_complete_bad_input(kwargs, needle):
    x, mask = _tt_problem()
    with pytest.raises(RichardsonTcError, match=needle):
        tt_complete(x, mask, **kwargs)
