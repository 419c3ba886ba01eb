"""Tests of the mathematics of private-robust-align: each would fail if the method were wrong (negative controls)."""

import math

import numpy as np
import pytest
from private_robust_align.adversary import budget, corrupt
from private_robust_align.data import make_preferences
from private_robust_align.errors import PrivateRobustAlignError
from private_robust_align.estimator import (
    DebiasedLogistic,
    gradient,
    hessian,
    logistic_loss,
    minimize_debiased,
    oracle_mle,
    rdpo_loss,
)
from private_robust_align.mechanism import (
    channel,
    debias_labels,
    flip_rate,
    ldp_ratio,
    privacy_constant,
    randomized_response,
)
from private_robust_align.metrics import fit_slope
from private_robust_align.orders import privatize_and_corrupt
from private_robust_align.policy import (
    bandit_preferences,
    dpo_loss_loglinear,
    greedy_policy,
    make_bandit,
    suboptimality,
)


# ------------------------------------------------------------------------------------------------ mechanism
@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 3.0, math.inf])
def test_debiased_label_is_unbiased_in_closed_form(eps):
    p = channel(eps)  # P[y, z]
    for y in (0, 1):
        e = sum(p[y, z] * debias_labels(np.array([z]), epsilon=eps)[0] for z in (0, 1))
        assert e == pytest.approx(y, abs=1e-12)
    # negative control: the raw privatized label is biased towards 1/2
    if math.isfinite(eps):
        assert abs(p[1, 1] - 1) > 1e-3


def test_debiased_label_is_unbiased_by_monte_carlo():
    rng = np.random.default_rng(0)
    eps, n = 0.5, 200_000
    for y in (0, 1):
        yh = debias_labels(randomized_response(np.full(n, y), epsilon=eps, rng=rng), epsilon=eps)
        se = yh.std() / math.sqrt(n)
        assert abs(yh.mean() - y) < 3 * se
        z = randomized_response(np.full(n, y), epsilon=eps, rng=rng)
        assert abs(z.mean() - y) > 20 * se / privacy_constant(eps)  # control: z itself is biased


@pytest.mark.parametrize("eps", [0.05, 0.7, 2.0, 10.0])
def test_ldp_ratio_is_exactly_e_to_the_epsilon(eps):
    assert ldp_ratio(eps) == pytest.approx(math.exp(eps), rel=1e-12)
    assert ldp_ratio(math.inf) == math.inf
    assert flip_rate(eps) == pytest.approx(1 / (1 + math.exp(eps)))
    assert privacy_constant(eps) == pytest.approx((math.exp(eps) + 1) / (math.exp(eps) - 1), rel=1e-12)


def test_randomized_response_empirical_flip_rate():
    z = randomized_response(np.zeros(100_000, dtype=int), epsilon=1.0, rng=np.random.default_rng(1))
    assert z.mean() == pytest.approx(flip_rate(1.0), abs=0.005)
    assert randomized_response(np.ones(50, dtype=int), epsilon=math.inf, rng=np.random.default_rng(1)).all()


# ------------------------------------------------------------------------------------------------ loss identities
def test_debiased_loss_equals_rdpo_and_trl_robust_formula():
    rng = np.random.default_rng(2)
    m = rng.normal(0, 3, 500)
    z = rng.integers(0, 2, 500)
    for eps in (0.3, 1.0, 4.0):
        rho = flip_rate(eps)
        yh = debias_labels(z, epsilon=eps)
        ours = np.logaddexp(0, m) - yh * m
        np.testing.assert_allclose(rdpo_loss(m, z, rho=rho), ours, rtol=1e-12, atol=1e-12)
        # trl 1.16 "robust": (-(1-ρ) logσ(βΔ) + ρ logσ(-βΔ)) / (1-2ρ), the chosen answer first (z = 1)
        logsig = lambda t: -np.logaddexp(0, -t)  # noqa: E731
        trl = (-(1 - rho) * logsig(m) + rho * logsig(-m)) / (1 - 2 * rho)
        np.testing.assert_allclose(rdpo_loss(m, np.ones_like(z), rho=rho), trl, rtol=1e-12, atol=1e-12)
        # negative control: the naive loss on z differs
        assert np.abs(np.logaddexp(0, m) - z * m - ours).max() > 1e-3


@pytest.mark.slow
def test_trl_robust_loss_matches_ours():
    pytest.importorskip("trl")
    from private_robust_align.dpo import trl_losses

    rho = 0.2
    m, robust = trl_losses(0, rho=rho, n=3)
    assert np.abs(m).max() > 1e-3  # the margins are not trivially zero
    np.testing.assert_allclose(robust, rdpo_loss(m, np.ones_like(m), rho=rho), rtol=1e-5, atol=1e-5)
    assert np.abs(robust - np.logaddexp(0, -m)).max() > 1e-4  # control: robust is not the sigmoid loss


def test_gradient_linear_in_labels_and_hessian_psd_and_label_free():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(200, 4))
    th = rng.normal(size=4)
    a, b = rng.normal(size=200), rng.normal(size=200)
    g = lambda lab: gradient(th, x, lab, l2=0.1)  # noqa: E731
    g0 = g(np.zeros(200))  # ∇L̂ is affine in ŷ: ∇L̂(ŷ) − ∇L̂(0) = −Xᵀŷ / n is linear
    np.testing.assert_allclose(g(2 * a - 3 * b) - g0, 2 * (g(a) - g0) - 3 * (g(b) - g0), atol=1e-12)
    np.testing.assert_allclose(g(a) - g0, -x.T @ a / 200, atol=1e-12)
    h = hessian(th, x, l2=0.0)
    assert np.linalg.eigvalsh(h).min() >= -1e-12
    # gradient / Hessian against central finite differences of the loss (float64)
    eps = 1e-6
    fd = np.array([(logistic_loss(th + eps * e, x, a, l2=0.1) - logistic_loss(th - eps * e, x, a, l2=0.1))
                   / (2 * eps) for e in np.eye(4)])
    np.testing.assert_allclose(fd, g(a), atol=1e-7)
    fdh = np.array([(gradient(th + eps * e, x, b) - gradient(th - eps * e, x, b)) / (2 * eps) for e in np.eye(4)])
    np.testing.assert_allclose(fdh, h, atol=1e-6)  # the same Hessian although the labels changed from a to b


# ------------------------------------------------------------------------------------------------ estimator
def test_infinite_epsilon_equals_sklearn_mle_inside_the_ball():
    d = make_preferences(3000, 4, norm=1.0, seed=4)
    est = DebiasedLogistic(epsilon=math.inf, radius=10.0).fit(d.x, d.y)
    assert np.linalg.norm(est.theta_) < 10 and not est.info_.active
    np.testing.assert_allclose(est.theta_, oracle_mle(d.x, d.y), atol=1e-5)
    # negative control: a binding radius moves the solution away from the MLE
    small = DebiasedLogistic(epsilon=math.inf, radius=0.3).fit(d.x, d.y)
    assert np.linalg.norm(small.theta_) == pytest.approx(0.3) and np.abs(small.theta_ - est.theta_).max() > 0.1


def test_constrained_solution_satisfies_kkt_and_matches_scipy():
    from scipy.optimize import minimize

    d = make_preferences(300, 5, seed=5)
    z = privatize_and_corrupt(d.x, d.y, order="CTL", epsilon=0.2, alpha=0.0, seed=5).z
    yh = debias_labels(z, epsilon=0.2)
    th, info = minimize_debiased(d.x, yh, radius=2.0)
    assert info.active and info.converged and np.linalg.norm(th) == pytest.approx(2.0, abs=1e-9)
    g = gradient(th, d.x, yh)
    # KKT on the sphere: -∇L̂ = μ θ with μ ≥ 0
    mu = -(g @ th) / (th @ th)
    assert mu > 0 and np.linalg.norm(g + mu * th) < 1e-7
    ref = minimize(lambda t: logistic_loss(t, d.x, yh), np.zeros(5), jac=lambda t: gradient(t, d.x, yh),
                   constraints=[{"type": "ineq", "fun": lambda t: 4.0 - t @ t, "jac": lambda t: -2 * t}],
                   method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
    assert logistic_loss(th, d.x, yh) <= ref.fun + 1e-9
    np.testing.assert_allclose(th, ref.x, atol=1e-4)


def test_unconstrained_debiased_loss_can_be_unbounded_below():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(20, 3))
    yh = debias_labels(rng.integers(0, 2, 20), epsilon=0.1)
    th, info = minimize_debiased(x, yh, radius=math.inf, max_iter=50)
    with np.errstate(over="ignore"):
        assert not info.converged and np.linalg.norm(th) > 20  # diverges
    th2, info2 = minimize_debiased(x, yh, radius=2.0)
    assert info2.converged and np.linalg.norm(th2) <= 2 + 1e-12


def test_error_falls_with_n_and_fit_is_deterministic():
    errs = []
    for n in (500, 4000, 32000):
        e = []
        for s in range(4):
            d = make_preferences(n, 5, seed=s)
            z = privatize_and_corrupt(d.x, d.y, order="CTL", epsilon=1.0, alpha=0.0, seed=s).z
            e.append(np.linalg.norm(DebiasedLogistic(epsilon=1.0).fit(d.x, z).theta_ - d.theta_star))
        errs.append(np.mean(e))
    assert errs[0] > errs[1] > errs[2]
    assert fit_slope([500, 4000, 32000], errs).slope < -0.3
    d = make_preferences(1000, 5, seed=0)
    a = DebiasedLogistic(epsilon=1.0).fit(d.x, d.y).theta_
    np.testing.assert_array_equal(a, DebiasedLogistic(epsilon=1.0).fit(d.x, d.y).theta_)


def test_naive_mle_is_attenuated_and_debiasing_fixes_it():
    d = make_preferences(40000, 5, norm=1.0, seed=7)
    z = privatize_and_corrupt(d.x, d.y, order="CTL", epsilon=0.7, alpha=0.0, seed=7).z
    naive = DebiasedLogistic(epsilon=0.7, debias=False).fit(d.x, z).theta_
    ours = DebiasedLogistic(epsilon=0.7).fit(d.x, z).theta_
    assert np.linalg.norm(naive) < 0.6 * np.linalg.norm(d.theta_star)
    assert np.linalg.norm(ours - d.theta_star) < 0.5 * np.linalg.norm(naive - d.theta_star)


# ------------------------------------------------------------------------------------------------ orders, adversary
@pytest.mark.parametrize("adversary", ["directional", "shrinking", "random"])
def test_orders_coincide_at_alpha_zero_and_clc_reduces(adversary):
    d = make_preferences(2000, 5, seed=8)
    kw = dict(epsilon=0.8, seed=3, adversary=adversary, theta_star=d.theta_star)
    z_ctl = privatize_and_corrupt(d.x, d.y, order="CTL", alpha=0.0, **kw).z
    np.testing.assert_array_equal(z_ctl, privatize_and_corrupt(d.x, d.y, order="LTC", alpha=0.0, **kw).z)
    np.testing.assert_array_equal(z_ctl, privatize_and_corrupt(d.x, d.y, order="CLC", alpha=(0.0, 0.0), **kw).z)
    ctl = privatize_and_corrupt(d.x, d.y, order="CTL", alpha=0.05, **kw)
    ltc = privatize_and_corrupt(d.x, d.y, order="LTC", alpha=0.05, **kw)
    np.testing.assert_array_equal(ctl.z, privatize_and_corrupt(d.x, d.y, order="CLC", alpha=(0.05, 0.0), **kw).z)
    np.testing.assert_array_equal(ltc.z, privatize_and_corrupt(d.x, d.y, order="CLC", alpha=(0.0, 0.05), **kw).z)
    if adversary != "random":  # control: the adaptive adversaries make the orders differ
        assert (ctl.z != ltc.z).any()
    else:  # random flips commute with randomized response on coupled streams (XOR)
        np.testing.assert_array_equal(ctl.z, ltc.z)


@pytest.mark.parametrize("adversary", ["directional", "shrinking"])
def test_clc_is_ctl_then_a_second_corruption_on_the_same_streams(adversary):
    d = make_preferences(3000, 5, seed=13)
    kw = dict(epsilon=0.7, seed=4, adversary=adversary, theta_star=d.theta_star)
    ctl = privatize_and_corrupt(d.x, d.y, order="CTL", alpha=0.02, **kw)
    clc = privatize_and_corrupt(d.x, d.y, order="CLC", alpha=(0.02, 0.03), **kw)
    # the first stage is CTL(α₁) exactly; the second changes ⌊α₂n⌋ released labels and nothing else
    np.testing.assert_array_equal(clc.changed_before, ctl.changed_before)
    diff = np.flatnonzero(clc.z != ctl.z)
    np.testing.assert_array_equal(diff, clc.changed_after)
    assert clc.changed_after.size == budget(3000, 0.03) == 90
    # control: the second stage really acts on the privatized labels (LTC(α₂) on the same streams differs)
    ltc = privatize_and_corrupt(d.x, d.y, order="LTC", alpha=0.03, **kw)
    assert (ltc.z != clc.z).any()


@pytest.mark.parametrize("adversary", ["directional", "shrinking", "random"])
@pytest.mark.parametrize("alpha", [0.0, 0.013, 0.1, 0.49])
def test_adversary_changes_at_most_floor_alpha_n(adversary, alpha):
    d = make_preferences(777, 4, seed=9)
    c = corrupt(d.x, d.y, alpha=alpha, adversary=adversary, rng=np.random.default_rng(0), theta_star=d.theta_star)
    changed = int((c.labels != d.y).sum())
    assert changed <= math.floor(alpha * 777) == budget(777, alpha)
    assert changed == c.changed.size
    p = privatize_and_corrupt(d.x, d.y, order="CLC", alpha=(alpha / 2, alpha / 2), epsilon=1.0, seed=1,
                              adversary=adversary, theta_star=d.theta_star)
    assert p.changed <= 2 * math.floor(alpha / 2 * 777)


def test_directional_adversary_plants_its_direction():
    d = make_preferences(20000, 5, seed=10)
    p = privatize_and_corrupt(d.x, d.y, order="LTC", epsilon=1.0, alpha=0.02, seed=10, theta_star=d.theta_star)
    p0 = privatize_and_corrupt(d.x, d.y, order="LTC", epsilon=1.0, alpha=0.0, seed=10, theta_star=d.theta_star)
    shift = DebiasedLogistic(epsilon=1.0).fit(d.x, p.z).theta_ - DebiasedLogistic(epsilon=1.0).fit(d.x, p0.z).theta_
    # the shift is mostly orthogonal to θ*
    cos = abs(shift @ d.theta_star) / (np.linalg.norm(shift) * np.linalg.norm(d.theta_star))
    assert np.linalg.norm(shift) > 0.2 and cos < 0.5


# ------------------------------------------------------------------------------------------------ policies
def test_dpo_loss_of_loglinear_policy_is_the_logistic_loss():
    b = make_bandit(n_contexts=30, n_actions=5, dim=4, seed=11)
    x, y, pairs = bandit_preferences(b, 300, seed=11)
    rng = np.random.default_rng(11)
    theta, ref = rng.normal(size=4), rng.normal(size=(30, 5))
    for beta in (0.1, 1.0, 7.0):
        dpo = dpo_loss_loglinear(theta, b, pairs, y, beta=beta, ref_logits=ref)
        logistic = np.logaddexp(0, x @ theta) - y * (x @ theta)
        np.testing.assert_allclose(dpo, logistic, rtol=0, atol=1e-10)
    assert np.abs(dpo - (np.logaddexp(0, x @ theta) - (1 - y) * (x @ theta))).max() > 1e-3  # control


def test_suboptimality_zero_at_truth_and_positive_elsewhere():
    b = make_bandit(n_contexts=200, n_actions=8, dim=5, seed=12)
    assert suboptimality(b.theta_star, b) == 0.0
    assert suboptimality(-b.theta_star, b) > 0.1
    np.testing.assert_array_equal(greedy_policy(3 * b.theta_star, b), greedy_policy(b.theta_star, b))


def test_fit_slope_recovers_a_power_law():
    n = np.array([100, 200, 400, 800, 1600])
    s = fit_slope(n, 3 * n**-0.5)
    assert s.slope == pytest.approx(-0.5) and s.lo <= -0.5 <= s.hi


def test_clc_between_statistic_uses_the_smaller_gap():
    from private_robust_align.reproduce import _between, _gaps

    assert _gaps([0.1, 0.2], [0.3, 0.25], [0.4, 0.6]) == pytest.approx([0.1, 0.05])
    ctl, clc, ltc = [0.10, 0.12, 0.11, 0.09, 0.10], [0.30, 0.31, 0.29, 0.30, 0.32], [0.50, 0.52, 0.49, 0.51, 0.50]
    assert _between(ctl, clc, ltc).verdict == "holds"
    # controls: CLC as bad as LTC, or CLC below CTL, must not count as "between"
    assert _between(ctl, ltc, ltc).verdict != "holds"
    assert _between(clc, ctl, ltc).verdict != "holds"


# ------------------------------------------------------------------------------------- more robust estimators
def test_trimmed_and_median_of_means_reduce_to_the_plain_estimator():
    from private_robust_align.estimator import MedianOfMeansLogistic, TrimmedDebiasedLogistic

    d = make_preferences(3000, 4, norm=2.0, seed=3)
    z = privatize_and_corrupt(d.x, d.y, order="CTL", epsilon=1.0, alpha=0.0, seed=3).z
    plain = DebiasedLogistic(epsilon=1.0, radius=2.0).fit(d.x, z).theta_
    np.testing.assert_allclose(TrimmedDebiasedLogistic(epsilon=1.0, trim=0.0).fit(d.x, z).theta_, plain, atol=1e-10)
    np.testing.assert_allclose(MedianOfMeansLogistic(epsilon=1.0, blocks=1).fit(d.x, z).theta_, plain, atol=1e-10)
    # with trimming and blocks both stay consistent on clean-ish data
    for m in (TrimmedDebiasedLogistic(epsilon=1.0, trim=0.02), MedianOfMeansLogistic(epsilon=1.0, blocks=5)):
        assert np.linalg.norm(m.fit(d.x, z).theta_ - d.theta_star) < 0.8


def test_geometric_median_minimises_the_sum_of_distances():
    from private_robust_align.estimator import geometric_median
    from scipy.optimize import minimize

    p = np.random.default_rng(0).standard_normal((7, 3))
    p[0] += 50.0  # one outlier: the mean moves, the geometric median barely does
    gm = geometric_median(p)
    f = lambda m: np.linalg.norm(p - m, axis=1).sum()  # noqa: E731
    ref = minimize(f, p.mean(0), method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000}).x
    assert f(gm) <= f(ref) + 1e-8
    assert np.linalg.norm(gm - np.median(p[1:], axis=0)) < np.linalg.norm(p.mean(0) - np.median(p[1:], axis=0))


def test_trimming_removes_the_adversarys_flips():
    from private_robust_align.estimator import TrimmedDebiasedLogistic

    d = make_preferences(4000, 4, norm=2.0, seed=5)
    y = d.y.copy()
    bad = np.argsort(-np.abs(d.x @ d.theta_star))[:80]  # anti-Bayes flips on the most confident pairs
    y[bad] = (d.x[bad] @ d.theta_star < 0).astype(y.dtype)
    m = TrimmedDebiasedLogistic(epsilon=math.inf, trim=0.02).fit(d.x, y)
    assert np.isin(bad, np.flatnonzero(~m.kept_)).mean() > 0.9
    # kept_ is the mask the final fit used: refitting on it reproduces theta_ (iterations = 1 keeps every pair)
    refit = DebiasedLogistic(epsilon=math.inf).fit(d.x[m.kept_], y[m.kept_]).theta_
    np.testing.assert_allclose(m.theta_, refit, atol=1e-10)
    assert TrimmedDebiasedLogistic(epsilon=math.inf, trim=0.02, iterations=1).fit(d.x, y).kept_.all()
    plain = DebiasedLogistic(epsilon=math.inf).fit(d.x, y).theta_
    # negative control: the untrimmed fit is pulled further from θ*
    assert np.linalg.norm(m.theta_ - d.theta_star) < np.linalg.norm(plain - d.theta_star)
    from private_robust_align.errors import PrivateRobustAlignError

    with pytest.raises(PrivateRobustAlignError, match="trim"):
        TrimmedDebiasedLogistic(epsilon=1.0, trim=0.6)


@pytest.mark.slow
def test_trl_conservative_loss_is_label_smoothed_sigmoid():
    pytest.importorskip("trl")
    from private_robust_align.dpo import trl_losses

    rho = 0.2
    m, robust, cons = trl_losses(1, rho=rho, n=3, conservative=True)
    assert np.abs(m).min() > 0.05  # margins far enough from 0 for the controls below to separate
    # cDPO: (1 − ρ)·log(1 + e^{−m}) + ρ·log(1 + e^{m}) at the margin recovered from trl's sigmoid loss
    np.testing.assert_allclose(cons, (1 - rho) * np.logaddexp(0, -m) + rho * np.logaddexp(0, m), rtol=1e-5, atol=1e-6)
    # negative controls: it is neither trl's debiased (robust) loss nor plain sigmoid DPO (what trl's ``sigmoid``
    # with ``label_smoothing = ρ`` computes: trl ignores label_smoothing there, which this test caught)
    assert np.abs(cons - robust).min() > 1e-3
    assert np.abs(cons - np.logaddexp(0, -m)).min() > 1e-3
    # and the robust loss is the debiased logistic loss at the same margins (both read off one trainer state)
    yhat = (1 - rho) / (1 - 2 * rho)
    np.testing.assert_allclose(robust, np.logaddexp(0, m) - yhat * m, rtol=1e-5, atol=1e-6)


def test_channel_nll_is_proper_bounded_and_reduces_to_the_log_loss():
    from private_robust_align.dpo import channel_nll

    rng = np.random.default_rng(0)
    m = rng.normal(size=200)
    # rho = 0: the plain DPO log-loss mean(log(1 + e^-m))
    assert channel_nll(m, 0.0) == pytest.approx(float(np.mean(np.logaddexp(0.0, -m))), rel=1e-12)
    # the closed form at rho > 0, computed naively
    rho = 0.27
    s = 1.0 / (1.0 + np.exp(-m))
    assert channel_nll(m, rho) == pytest.approx(float(-np.mean(np.log((1 - rho) * s + rho * (1 - s)))), rel=1e-12)
    # bounded below by -log(1 - rho) however large the margins (the debiased loss is not: negative control)
    big = np.full(50, 1e4)
    assert channel_nll(big, rho) == pytest.approx(-np.log1p(-rho), rel=1e-9)
    yhat = (1 - rho) / (1 - 2 * rho)
    assert float(np.mean(np.logaddexp(0.0, big) - yhat * big)) < -1e3
    # proper: for released labels drawn at P(released = chosen) = q, the expected score is minimised where the
    # channel's probability (1 - rho) s + rho (1 - s) equals q
    q = 0.6
    grid = np.linspace(-3, 3, 601)
    exp_score = [q * channel_nll(np.array([g]), rho) + (1 - q) * channel_nll(np.array([-g]), rho) for g in grid]
    g_best = grid[int(np.argmin(exp_score))]
    s_best = 1.0 / (1.0 + np.exp(-g_best))
    assert (1 - rho) * s_best + rho * (1 - s_best) == pytest.approx(q, abs=0.01)
    with pytest.raises(PrivateRobustAlignError, match="rho"):
        channel_nll(m, 0.5)


def test_dpo_validation_criterion_is_checked():
    from private_robust_align.config import Config

    assert Config().dpo_val_criterion == "channel"
    with pytest.raises(PrivateRobustAlignError, match="dpo_val_criterion"):
        Config(dpo_val_criterion="accuracy")
