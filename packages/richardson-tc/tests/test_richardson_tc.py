"""Tests of the mathematics of lifted tensor completion (float64); each would fail if the method were wrong."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import tensorly as tl
from richardson_tc.complete import cp_complete
from richardson_tc.cp import (
    cp_entries,
    cp_reconstruct,
    gram_hadamard,
    init_factors,
    khatri_rao_except,
    mttkrp,
    unfold,
)
from richardson_tc.data import ObservedEntries, make_tensor, sample_mask
from richardson_tc.richardson import aitken_jump, error_map_radius, lifted_richardson
from richardson_tc.solvers import CPModeSolver, KroneckerSolver, SampledCPModeSolver, masked_lstsq


def _problem(shape=(12, 11, 10), rank=3, p=0.4, seed=0):
    x = make_tensor("cp", shape=shape, rank=rank, seed=seed) + 0.05 * np.random.default_rng(seed).standard_normal(shape)
    mask = sample_mask(shape, p, seed=seed + 1)
    factors = [a + 0.3 for a in init_factors(shape, rank, seed=seed + 2, scale=1.0)]
    return x, mask, factors


def _explicit_kr(factors, mode):
    """⊙_{k≠n} A^{(k)} column by column with np.kron (the naive definition)."""
    others = [a for k, a in enumerate(factors) if k != mode]
    cols = []
    for r in range(others[0].shape[1]):
        c = others[0][:, r]
        for a in others[1:]:
            c = np.kron(c, a[:, r])
        cols.append(c)
    return np.stack(cols, axis=1)


# ------------------------------------------------------------------ structured algebra
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_gram_and_mttkrp_equal_explicit_kron_products(mode):
    x, _, f = _problem()
    k = _explicit_kr(f, mode)
    np.testing.assert_allclose(khatri_rao_except(f, mode), k, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gram_hadamard(f, mode), k.T @ k, rtol=1e-10)
    np.testing.assert_allclose(mttkrp(x, f, mode), unfold(x, mode) @ k, rtol=1e-10)
    # negative control: the Khatri–Rao factors in the reversed order do not match the unfolding
    k_rev = _explicit_kr(f[::-1], len(f) - 1 - mode)
    assert not np.allclose(unfold(x, mode) @ k_rev, unfold(x, mode) @ k)


def test_cp_to_tensor_and_unfolding_conventions_agree():
    _, _, f = _problem()
    full = cp_reconstruct(f)
    np.testing.assert_allclose(full, tl.cp_to_tensor((np.ones(3), f)), rtol=1e-13)
    for n in range(3):
        np.testing.assert_allclose(unfold(full, n), f[n] @ khatri_rao_except(f, n).T, rtol=1e-10, atol=1e-12)
    coords = np.array([[0, 0, 0], [3, 2, 1], [11, 10, 9]])
    np.testing.assert_allclose(cp_entries(f, coords), full[tuple(coords.T)], rtol=1e-12)
    wrong = tl.tenalg.khatri_rao([f[2], f[0]])  # negative control: the other modes in the reversed order
    assert not np.allclose(unfold(full, 1), f[1] @ wrong.T)


# ------------------------------------------------------------------ Richardson = the masked least-squares solution
def test_richardson_fixed_point_is_the_direct_masked_solve():
    x, mask, f = _problem(p=0.3)
    obs = ObservedEntries.from_mask(x, mask)
    direct = masked_lstsq(obs, f, 1)
    block = CPModeSolver(f, 1)
    res = lifted_richardson(block, f[1], (unfold(mask, 1), unfold(np.where(mask, x, 0), 1)), tol=1e-13,
                            max_inner=20000, accelerate=False)
    assert np.linalg.norm(res.x - direct) / np.linalg.norm(direct) < 1e-8
    assert res.reason == "converged"
    # negative control: one update (EM-ALS) is far from it
    em = lifted_richardson(block, f[1], (unfold(mask, 1), unfold(np.where(mask, x, 0), 1)), tol=0.5, max_inner=1)
    assert np.linalg.norm(em.x - direct) / np.linalg.norm(direct) > 1e-2


def test_prepared_observed_gives_the_same_iterates_with_one_pass_per_update(monkeypatch):
    """Issue 67: Ω prepared once (Observed) gives exactly the tuple's iterates, and a call then makes no pass over
    the full array beyond the lifted target itself: no finiteness check, no b_obs rebuild, no loss under the step
    rule (one np.where per update; the loss only when a stop rule or the caller reads it)."""
    from richardson_tc.richardson import Observed

    x, mask, f = _problem(p=0.2)
    raw = (unfold(mask, 0), unfold(np.where(mask, x, 0), 0))
    prepared = Observed.prepare(*raw)
    a = lifted_richardson(CPModeSolver(f, 0), f[0], raw, tol=1e-6, max_inner=50, accelerate=True)
    counts = {"where": 0, "isfinite": 0, "vdot": 0}
    full = raw[0].size
    for name in counts:
        orig = getattr(np, name)

        def counted(*args, _o=orig, _n=name, **kw):  # passes over the full [I_n, J] array only
            counts[_n] += int(any(np.size(a) == full for a in args))
            return _o(*args, **kw)

        monkeypatch.setattr(np, name, counted)
    b = lifted_richardson(CPModeSolver(f, 0), f[0], prepared, tol=1e-6, max_inner=50, accelerate=True)
    monkeypatch.undo()
    np.testing.assert_array_equal(a.x, b.x)
    assert (a.updates, a.jumps) == (b.updates, b.jumps) and b.updates > 3
    assert counts == {"where": b.updates, "isfinite": 0, "vdot": 0}
    # the loss is computed when asked for, and then equals ‖b_Ω − (Ax)_Ω‖² at every iterate
    c = lifted_richardson(CPModeSolver(f, 0), f[0], prepared, tol=1e-6, max_inner=3, track_loss=True)
    assert len(c.losses) == 4 and c.losses[-1] == pytest.approx(
        float(np.sum(np.where(raw[0], raw[1] - CPModeSolver(f, 0).predict(c.x), 0) ** 2)))


def test_accelerated_richardson_reaches_the_same_fixed_point_with_fewer_updates():
    x, mask, f = _problem(p=0.2)
    obs = (unfold(mask, 0), unfold(np.where(mask, x, 0), 0))
    direct = masked_lstsq(ObservedEntries.from_mask(x, mask), f, 0)
    plain = lifted_richardson(CPModeSolver(f, 0), f[0], obs, tol=1e-10, max_inner=20000)
    acc = lifted_richardson(CPModeSolver(f, 0), f[0], obs, tol=1e-10, max_inner=20000, accelerate=True)
    assert np.linalg.norm(acc.x - direct) / np.linalg.norm(direct) < 1e-7
    assert acc.jumps > 0 and acc.updates < plain.updates


def test_direct_loop_equals_vectorised_and_lstsq_equals_cholesky():
    x, mask, f = _problem(p=0.15)
    mask[3] = False  # a row of mode 0 with no observation keeps its value
    obs = ObservedEntries.from_mask(x, mask)
    for n in range(3):
        vec = masked_lstsq(obs, f, n)
        np.testing.assert_allclose(masked_lstsq(obs, f, n, loop=True), vec, rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(masked_lstsq(obs, f, n, method="lstsq"), vec, rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(masked_lstsq(obs, f, 0)[3], f[0][3])
    # ridge really changes the solution (negative control)
    assert not np.allclose(masked_lstsq(obs, f, 0, ridge=10.0), masked_lstsq(obs, f, 0))


def test_direct_solve_matches_a_dense_lstsq_per_row():
    x, mask, f = _problem(p=0.3)
    obs = ObservedEntries.from_mask(x, mask)
    k = _explicit_kr(f, 2)
    xu, mu = unfold(x, 2), unfold(mask, 2)
    ref = np.stack([np.linalg.lstsq(k[mu[i]], xu[i, mu[i]], rcond=None)[0] for i in range(x.shape[2])])
    np.testing.assert_allclose(masked_lstsq(obs, f, 2), ref, rtol=1e-8, atol=1e-10)


# ------------------------------------------------------------------ contraction, monotone loss
def test_contraction_in_the_gram_norm_with_rho_from_the_error_map_and_monotone_loss():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((60, 5))
    b = rng.standard_normal(60)
    rows = np.zeros(60, dtype=bool)
    rows[rng.permutation(60)[:25]] = True
    x_star = np.linalg.lstsq(a[rows], b[rows], rcond=None)[0]
    rho = error_map_radius(a, rows)
    assert 0 < rho < 1
    gram = a.T @ a

    class Dense:
        def __call__(self, target):
            return np.linalg.solve(gram, a.T @ target)

        def predict(self, v):
            return a @ v

    def gnorm(e):
        return float(np.sqrt(e @ gram @ e))

    xs, x = [], np.zeros(5)
    for _ in range(30):
        xs.append(x)
        x = lifted_richardson(Dense(), x, (rows, b), tol=0.5, max_inner=1).x
    errs = [gnorm(v - x_star) for v in xs]
    ratios = [e1 / e0 for e0, e1 in zip(errs, errs[1:])]
    assert max(ratios) <= rho + 1e-10
    assert max(ratios) > 0.5 * rho  # negative control: a bound at half the spectral radius is violated
    res = lifted_richardson(Dense(), np.zeros(5), (rows, b), tol=1e-12, max_inner=300, track_loss=True)
    assert all(l1 <= l0 + 1e-12 for l0, l1 in zip(res.losses, res.losses[1:]))
    np.testing.assert_allclose(res.x, x_star, rtol=1e-8, atol=1e-10)


def test_acceleration_jumps_to_the_limit_of_a_geometric_sequence():
    rng = np.random.default_rng(0)
    limit, e0, alpha = rng.standard_normal(7), rng.standard_normal(7), 0.83
    seq = [limit + alpha**t * e0 for t in range(3)]
    est = np.linalg.norm(seq[2] - seq[1]) / np.linalg.norm(seq[1] - seq[0])
    np.testing.assert_allclose(est, alpha, rtol=1e-12)
    np.testing.assert_allclose(aitken_jump(seq[1], seq[2], est), limit, rtol=1e-10, atol=1e-12)
    assert not np.allclose(aitken_jump(seq[1], seq[2], 0.5), limit)  # a wrong α misses
    assert np.isfinite(aitken_jump(seq[1], seq[2], 1.7)).all()  # α ≥ 1 is clamped to 0.99, no blow-up


# ------------------------------------------------------------------ reductions at p = 1 and EM-ALS
def test_at_p_equal_one_lifted_direct_and_em_coincide_after_one_inner_step():
    x = make_tensor("cp", shape=(10, 9, 8), rank=3, seed=1)
    full = np.ones(x.shape, dtype=bool)
    runs = {s: cp_complete(x, full, rank=3, solver=s, n_sweeps=2, seed=4) for s in ("lifted", "direct", "em")}
    assert runs["lifted"][1].inner_updates == [1] * 6  # no confirming update when Ω is everything
    for s in ("direct", "em"):
        for a, b in zip(runs["lifted"][0].factors, runs[s][0].factors):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)
    # negative control: with missing entries EM-ALS differs from the direct solve
    half = sample_mask(x.shape, 0.5, seed=0)
    em = cp_complete(x, half, rank=3, solver="em", n_sweeps=1, seed=4)[0]
    di = cp_complete(x, half, rank=3, solver="direct", n_sweeps=1, seed=4)[0]
    assert not np.allclose(em.factors[2], di.factors[2], rtol=1e-3)


def test_lifted_cp_completion_reaches_the_direct_solution():
    x = make_tensor("cp", shape=(14, 13, 12), rank=3, seed=2)
    mask = sample_mask(x.shape, 0.3, seed=2)
    lif = cp_complete(x, mask, rank=3, solver="lifted", tol=1e-10, n_sweeps=3, seed=0, accelerate=True)
    di = cp_complete(x, mask, rank=3, solver="direct", n_sweeps=3, seed=0)
    np.testing.assert_allclose(cp_reconstruct(lif[0].factors), cp_reconstruct(di[0].factors), rtol=1e-6, atol=1e-8)
    em = cp_complete(x, mask, rank=3, solver="em", n_sweeps=3, seed=0)
    assert em[1].final("train_rre") > 1.5 * di[1].final("train_rre")  # EM-ALS is not there after 3 sweeps


def test_official_stop_rule_stops_early_and_counts_evaluations():
    x, mask, f = _problem(p=0.1)
    obs = (unfold(mask, 0), unfold(np.where(mask, x, 0), 0))
    direct = masked_lstsq(ObservedEntries.from_mask(x, mask), f, 0)
    off = lifted_richardson(CPModeSolver(f, 0), f[0], obs, tol=0.1, stop_rule="official")
    ours = lifted_richardson(CPModeSolver(f, 0), f[0], obs, tol=1e-3, stop_rule="step")
    assert off.evaluations == off.updates + 1 and off.reason == "converged"
    dist = [np.linalg.norm(r.x - direct) / np.linalg.norm(direct) for r in (off, ours)]
    assert dist[0] > 0.05 and dist[1] < 0.1 * dist[0]  # the loss-decrease test stops far from the block solution


# ------------------------------------------------------------------ black boxes: Kronecker (Tucker core), sampled CP
def test_lifted_kronecker_core_regression_equals_masked_lstsq_on_the_explicit_kron_design():
    rng = np.random.default_rng(5)
    us = [rng.standard_normal((n, 2)) for n in (6, 5, 4)]
    t = rng.standard_normal((6, 5, 4))
    mask = sample_mask(t.shape, 0.5, seed=5)
    design = np.kron(np.kron(us[0], us[1]), us[2])  # [120, 8], rows in C order
    ref = np.linalg.lstsq(design[mask.ravel()], t.ravel()[mask.ravel()], rcond=None)[0].reshape(2, 2, 2)
    solver = KroneckerSolver(us)
    np.testing.assert_allclose(solver.predict(ref).ravel(), design @ ref.ravel(), rtol=1e-10)
    res = lifted_richardson(solver, np.zeros((2, 2, 2)), (mask, t), tol=1e-12, max_inner=5000, accelerate=True)
    np.testing.assert_allclose(res.x, ref, rtol=1e-7, atol=1e-9)


def test_leverage_sampled_step_is_unbiased_and_close_to_the_exact_step():
    _, _, f = _problem(shape=(10, 30, 30), p=1.0)
    model = cp_reconstruct(f)
    target = model + 0.01 * np.std(model) * np.random.default_rng(1).standard_normal(model.shape)
    k = khatri_rao_except(f, 0)
    exact = CPModeSolver(f, 0)(unfold(target, 0))
    s = SampledCPModeSolver(f, 0, n_samples=3000, rng=np.random.default_rng(0))
    assert all(abs(p.sum() - 1) < 1e-12 for p in s.probs)
    cols, z, w = s.draw()
    np.testing.assert_allclose(z, k[cols], rtol=1e-12)
    gram_est = z.T @ (z * w[:, None])  # E[Zᵀ W Z] = KᵀK (importance weights 1/(s q))
    assert np.linalg.norm(gram_est - k.T @ k) / np.linalg.norm(k.T @ k) < 0.1
    approx = s.solve(unfold(target, 0)[:, cols], z, w)
    err = np.linalg.norm(approx - exact) / np.linalg.norm(exact)
    assert err < 0.02
    few = SampledCPModeSolver(f, 0, n_samples=6, rng=np.random.default_rng(0))
    c6, z6, w6 = few.draw()
    assert np.linalg.norm(few.solve(unfold(target, 0)[:, c6], z6, w6) - exact) / np.linalg.norm(exact) > err


# ------------------------------------------------------------------ invariances, Ω, determinism
def test_mode_permutation_invariance_of_the_block_solve():
    x, mask, f = _problem(shape=(9, 9, 9), p=0.3)
    perm = (2, 0, 1)
    xp, mp, fp = x.transpose(perm), mask.transpose(perm), [f[k] for k in perm]
    obs, obs_p = ObservedEntries.from_mask(x, mask), ObservedEntries.from_mask(xp, mp)
    for n in range(3):
        np.testing.assert_allclose(masked_lstsq(obs_p, fp, perm.index(n)), masked_lstsq(obs, f, n), rtol=1e-9)
    assert not np.allclose(masked_lstsq(obs_p, f, 0), masked_lstsq(obs, f, 0))  # factors not permuted: differs


def test_scaling_the_tensor_scales_the_completion():
    x = make_tensor("cp", shape=(10, 9, 8), rank=2, seed=3)
    mask = sample_mask(x.shape, 0.4, seed=3)
    init = init_factors(x.shape, 2, seed=1)
    for solver in ("lifted", "direct"):
        a, ha = cp_complete(x, mask, rank=2, solver=solver, n_sweeps=2, init=init)
        # with the first factor's start scaled too, every iterate scales exactly (relative stop rules)
        b, hb = cp_complete(7.5 * x, mask, rank=2, solver=solver, n_sweeps=2, init=[7.5 * init[0], *init[1:]])
        np.testing.assert_allclose(cp_reconstruct(b.factors), 7.5 * cp_reconstruct(a.factors), rtol=1e-8, atol=1e-10)
        assert ha.inner_updates == hb.inner_updates  # relative stop rules: same decisions
        np.testing.assert_allclose(ha.final(), hb.final(), rtol=1e-8)


def test_observed_set_is_seeded_and_has_the_exact_size():
    for p in (0.05, 0.1, 0.33):
        m = sample_mask((7, 9, 11), p, seed=4)
        assert m.sum() == int(np.floor(p * 693))
        np.testing.assert_array_equal(m, sample_mask((7, 9, 11), p, seed=4))
        assert not np.array_equal(m, sample_mask((7, 9, 11), p, seed=5))


def test_cp_complete_is_deterministic():
    x, mask, _ = _problem()
    a = cp_complete(x, mask, rank=3, n_sweeps=2, seed=3, accelerate=True)
    b = cp_complete(x, mask, rank=3, n_sweeps=2, seed=3, accelerate=True)
    c = cp_complete(x, mask, rank=3, n_sweeps=2, seed=4, accelerate=True)
    for u, v in zip(a[0].factors, b[0].factors):
        np.testing.assert_array_equal(u, v)
    assert not np.allclose(a[0].factors[0], c[0].factors[0])


def test_data_kinds_have_the_documented_shapes():
    assert make_tensor("digits").shape == (8, 8, 1797)
    v = make_tensor("video", shape=(16, 16, 5), seed=1)
    assert v.shape == (16, 16, 5) and v.max() > 0.5
    t = make_tensor("tucker", shape=(8, 8, 8), rank=2, seed=0)
    assert np.linalg.matrix_rank(unfold(t, 0)) == 2


# ------------------------------------------------------------------ README quickstart
def test_readme_python_quickstart_runs():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    code = re.findall(r"```python\n(.*?)```", readme, re.S)[0]
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})


def test_cp_block_radius_equals_the_dense_error_map_radius():
    from richardson_tc.solvers import cp_block_radius

    x, mask, f = _problem(shape=(5, 4, 6), rank=2, p=0.5)
    mu = unfold(mask, 1)
    design = np.kron(np.eye(4), khatri_rao_except(f, 1))  # rows (i, j) → e_iᵀ ⊗ z_j; x = vec(A^{(1)}) row-major
    rho = cp_block_radius(f, 1, mu)
    np.testing.assert_allclose(rho, error_map_radius(design, mu.ravel()), rtol=1e-8)
    assert not np.isclose(rho, 1 - mask.mean(), atol=1e-3)  # negative control: ρ is not exactly 1 − p here


# ------------------------------------------------------------------ TT black box, tensorly EM-ALS, 1/p scaling
def test_lifted_tt_core_regression_equals_masked_lstsq_on_the_explicit_kron_design():
    from richardson_tc.solvers import TTCoreSolver

    rng = np.random.default_rng(7)
    shape, ranks = (5, 6, 4, 3), (1, 2, 3, 2, 1)
    cores = [rng.standard_normal((ranks[j], shape[j], ranks[j + 1])) for j in range(4)]
    t = rng.standard_normal(shape)
    mask = sample_mask(shape, 0.6, seed=7)
    k = 2
    block = TTCoreSolver(cores, k)
    # explicit design L ⊗ I ⊗ Rᵀ (rows in C order over (left, i_k, right)); x = vec(𝒢_k) in C order
    design = np.kron(np.kron(block.left, np.eye(shape[k])), block.right.T)
    np.testing.assert_allclose(block.predict(cores[k]).ravel(), design @ cores[k].ravel(), rtol=1e-10)
    np.testing.assert_allclose(block.predict(cores[k]), tl.tt_to_tensor(cores), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(block(t).ravel(), np.linalg.lstsq(design, t.ravel(), rcond=None)[0], rtol=1e-8)
    ref = np.linalg.lstsq(design[mask.ravel()], t.ravel()[mask.ravel()], rcond=None)[0].reshape(cores[k].shape)
    res = lifted_richardson(block, np.zeros(cores[k].shape), (mask, t), tol=1e-12, max_inner=5000, accelerate=True)
    np.testing.assert_allclose(res.x, ref, rtol=1e-7, atol=1e-9)
    # negative control: the full-data solution (no lifting) is not the masked one
    assert not np.allclose(block(np.where(mask, t, 0.0)), ref, atol=1e-3)


def test_tensorly_parafac_mask_agrees_with_ours_at_p_one_and_imputes_once_per_sweep():
    from richardson_tc.bench import tensorly_em

    x = make_tensor("cp", shape=(9, 8, 7), rank=3, seed=2)
    full = np.ones(x.shape, dtype=bool)
    ours = cp_complete(x, full, rank=3, solver="em", n_sweeps=3, seed=5, track_error=True)[1]
    theirs = tensorly_em(x, full, rank=3, n_sweeps=3, seed=5)
    np.testing.assert_allclose(theirs["train_rre"], ours.final("train_rre"), rtol=1e-7)
    half = sample_mask(x.shape, 0.4, seed=1)
    ours_h = cp_complete(x, half, rank=3, solver="em", n_sweeps=3, seed=5)[1]
    theirs_h = tensorly_em(x, half, rank=3, n_sweeps=3, seed=5)
    assert abs(theirs_h["train_rre"] - ours_h.final("train_rre")) > 1e-4  # per-sweep vs per-mode imputation


def test_error_along_the_slowest_eigenvector_shrinks_exactly_by_rho_per_update():
    rng = np.random.default_rng(11)
    a = rng.standard_normal((80, 4))
    rows = np.zeros(80, dtype=bool)
    rows[rng.permutation(80)[:30]] = True
    gram = a.T @ a
    m = np.linalg.solve(gram, a[~rows].T @ a[~rows])  # error map M = (AᵀA)⁻¹A_Ω̄ᵀA_Ω̄
    w, v = np.linalg.eig(m)
    top = int(np.argmax(w.real))
    rho, e0 = float(w[top].real), v[:, top].real
    b = rng.standard_normal(80)
    x_star = np.linalg.lstsq(a[rows], b[rows], rcond=None)[0]

    class Dense:
        def __call__(self, target):
            return np.linalg.solve(gram, a.T @ target)

        def predict(self, z):
            return a @ z

    x = x_star + e0
    for t in range(1, 6):
        x = lifted_richardson(Dense(), x, (rows, b), tol=0.5, max_inner=1).x
        np.testing.assert_allclose(np.linalg.norm(x - x_star), rho**t * np.linalg.norm(e0), rtol=1e-8)
    # negative control: along the fastest eigenvector the error shrinks faster than ρ
    fast = v[:, int(np.argmin(w.real))].real
    y = lifted_richardson(Dense(), x_star + fast, (rows, b), tol=0.5, max_inner=1).x
    assert np.linalg.norm(y - x_star) < 0.9 * rho * np.linalg.norm(fast)


def test_one_minus_rho_approaches_p_as_each_row_sees_more_observations():
    from richardson_tc.solvers import cp_block_radius

    p, r = 0.1, 4
    gaps = []
    for shape in [(12, 20, 20), (12, 60, 60)]:
        f = init_factors(shape, r, seed=3, scale=1.0)
        mask = sample_mask(shape, p, seed=4)
        gaps.append((1 - cp_block_radius(f, 0, unfold(mask, 0))) / p)
    assert gaps[0] < gaps[1] < 1.0  # finite per-row samples: 1 − ρ(M) < p, closer to p with larger J
    assert gaps[0] < 0.6
