import itertools

import numpy as np
import pytest
import torch
from focoop.errors import FOCoOpConfigError
from focoop.ot import calibrate, transport_plan, two_means_1d


def _sse(v, labels):
    return sum(((v[labels == k] - v[labels == k].mean()) ** 2).sum() for k in (0, 1) if (labels == k).any())


@pytest.mark.parametrize("seed", range(5))
def test_two_means_matches_brute_force(seed):
    v = np.random.default_rng(seed).gamma(1.0, size=9)
    labels, thr = two_means_1d(v)
    best = min(_sse(v, np.array(lab)) for lab in itertools.product([0, 1], repeat=v.size) if 0 < sum(lab) < v.size)
    assert _sse(v, labels) == pytest.approx(best)
    assert labels[v.argmax()] == 1 and labels[v.argmin()] == 0 and v.min() < thr < v.max()


def test_two_means_ties_and_constant():
    labels, thr = two_means_1d([1.0, 1.0, 1.0])
    assert labels.sum() == 0 and thr == np.inf
    a, _ = two_means_1d([0.0, 1.0, 2.0])
    b, _ = two_means_1d([0.0, 1.0, 2.0])
    assert (a == b).all()
    with pytest.raises(FOCoOpConfigError):
        two_means_1d([1.0])


def _near_far(seed=0, c=4, d=6, n_near=5, n_far=15):
    rng = np.random.default_rng(seed)
    g = rng.normal(size=(c, d))
    near = g[rng.integers(0, c, n_near)] + 0.05 * rng.normal(size=(n_near, d))
    far = 6.0 + rng.normal(size=(n_far, d))
    return np.concatenate([near, far]), g, n_near


def test_semi_unbalanced_keeps_id_marginal_exactly_and_frees_rows():
    x, g, _ = _near_far()
    plan = transport_plan(x, g, uot="semi", reg_m=0.1, reg=0.05)
    np.testing.assert_allclose(plan.sum(0), np.full(g.shape[0], 1 / g.shape[0]), atol=1e-9)
    assert np.abs(plan.sum(1) - 1 / x.shape[0]).max() > 1e-3  # the OOD-side marginal is relaxed


@pytest.mark.parametrize("uot", ["semi", "official"])
def test_ot_separates_near_from_far(uot):
    x, g, n_near = _near_far()
    plan = transport_plan(x, g, uot=uot, reg_m=0.1)
    labels, _ = two_means_1d(plan.sum(1))
    assert (labels[:n_near] == 1).all() and (labels[n_near:] == 0).all()


def test_official_plan_is_fully_unbalanced_mass():
    x, g, _ = _near_far()
    plan = transport_plan(x, g, uot="official", reg_m=0.1)
    assert plan.sum() < 0.5  # both marginals relaxed: mass far below 1


def test_calibrate_fixed_point_and_ema_one():
    c, m, d, k = 3, 2, 4, 4
    g = torch.randn(c, m, d, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    # pooled prompts: client 0 holds exact copies of the ID prompts (+1 far), client 1 only far prompts
    far = 3 + torch.randn(1, m, d, dtype=torch.float64)
    pooled = torch.stack([torch.cat([g, far]), 3 + torch.randn(k, m, d, dtype=torch.float64)])
    res = calibrate(pooled, g, ema=0.5, normalize_plan=True, reg=0.003)  # near-exact plan: a diagonal match
    assert res.selected[:c].all() and not res.selected[c:].any()
    torch.testing.assert_close(res.global_ctx, g, atol=1e-6, rtol=0)
    same = calibrate(pooled, g, ema=1.0)
    torch.testing.assert_close(same.global_ctx, g)
    shrunk = calibrate(pooled, g, ema=0.5, normalize_plan=False, uot="official")
    assert shrunk.global_ctx.norm() < 0.75 * g.norm()  # the official raw product shrinks G


def test_per_slot_selection_keeps_words_and_official_scrambles():
    torch.manual_seed(0)
    n, k = 3, 5
    pooled = torch.randn(n, k, 2, 3)
    g = torch.randn(2, 2, 3)
    res = calibrate(pooled, g, ood_selection="per_slot")
    assert (res.source_rows % k == np.arange(k)).all() and res.n_distinct == k
    torch.testing.assert_close(res.ood_ctx, pooled.reshape(n * k, 2, 3)[torch.as_tensor(res.source_rows)])
    off = calibrate(pooled, g, ood_selection="official")
    order = np.argsort(off.row_mass, kind="stable")[:k]
    assert (off.source_rows == order).all()


@pytest.mark.parametrize("kw", [{"reg_m": 0.0}, {"reg_m": float("inf")}, {"reg_m": -1.0}, {"uot": "full"}])
def test_bad_ot_arguments(kw):
    x, g, _ = _near_far()
    with pytest.raises(FOCoOpConfigError):
        transport_plan(x, g, **kw)


def test_bad_calibrate_arguments():
    with pytest.raises(FOCoOpConfigError):
        calibrate(torch.randn(2, 3, 2, 4), torch.randn(3, 2, 4), ema=1.5)
    with pytest.raises(FOCoOpConfigError):
        calibrate(torch.randn(2, 3, 2, 4), torch.randn(3, 2, 5))
