"""Tests of the mathematics of PES / SL-PG: each would fail if the method were wrong (negative controls inline)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from pes.algorithms import PES, SLPG, fixed_sigma
from pes.envs import LQR
from pes.errors import PesError
from pes.estimators import (
    action_scores,
    action_sigma_scores,
    estimate,
    gpomdp,
    parameter_sigma_scores,
    pgpe,
    reinforce,
)
from pes.optim import Adam, make_optimizer
from pes.sigma import Parameterization, schedule

README = Path(__file__).resolve().parents[1] / "README.md"


def _within(mean: np.ndarray, target: np.ndarray, se: np.ndarray, k: float = 3.5) -> bool:
    return bool(np.all(np.abs(np.asarray(mean) - np.asarray(target)) <= k * np.asarray(se) + 1e-12))


# ---------------------------------------------------------------- schedule and PES(P = 1) == plain PG
def test_schedule_strictly_decreasing_from_sigma0():
    s = schedule(10, sigma0=0.7, sigma_exponent=1.0)
    assert s[0] == 0.7 and np.all(np.diff(s) < 0)
    np.testing.assert_allclose(s, 0.7 / np.arange(1, 11))
    np.testing.assert_allclose(schedule(5, sigma0=1.0, sigma_exponent=0.5), 1 / np.sqrt(np.arange(1, 6)))
    # negative control: a floor stops the decrease
    floored = schedule(10, sigma0=1.0, sigma_exponent=1.0, sigma_min=0.3)
    assert not np.all(np.diff(floored) < 0) and floored.min() == 0.3


@pytest.mark.parametrize("exploration", ["action", "parameter"])
def test_pes_with_one_phase_is_plain_gpomdp_pgpe_bit_for_bit(exploration):
    env = LQR.official(horizon=6)
    iters, sigma, lr, n = 8, 0.5, 0.02, 7
    ours = PES(env, exploration=exploration, phases=1, iters_per_phase=iters, sigma0=sigma, lr=lr, batch=n,
               seed=3).learn().theta
    # the plain loop, written independently from the estimators
    rng = np.random.default_rng(3)
    theta, opt = np.zeros(env.theta_dim), Adam(lr)
    for _ in range(iters):
        ro = env.rollout(theta, sigma=sigma, batch=n, rng=rng, exploration=exploration)
        if exploration == "action":
            g = gpomdp(ro.rewards, action_scores(ro.states, ro.actions, ro.means, sigma), env.gamma)
        else:
            g = pgpe(ro.returns(env.gamma), ro.thetas, theta, sigma)
        theta = opt.step(theta, g)
    np.testing.assert_array_equal(ours, theta)
    assert np.array_equal(fixed_sigma(env, exploration=exploration, sigma=sigma, iterations=iters, lr=lr, batch=n,
                                      seed=3).learn().theta, theta)
    # negative control: two phases (σ halves in the second) is a different run
    two = PES(env, exploration=exploration, phases=2, iters_per_phase=iters // 2, sigma0=sigma, lr=lr, batch=n,
              seed=3).learn().theta
    assert not np.array_equal(two, theta)


@pytest.mark.parametrize("exploration", ["action", "parameter"])
def test_pes_reset_and_sigma2_options_equal_an_independent_phase_loop(exploration):
    """reset_optimizer: a fresh Adam at each phase; lr_schedule="sigma2": the step is lr (σ_p/σ_0)² (the theory's
    ζ_p). Both equal a loop written here from the estimators, bit for bit; the released default (Adam carried over,
    constant step) is a different run (negative control)."""
    env = LQR.official(horizon=5)
    P, K, lr, n, s0 = 3, 4, 0.05, 6, 0.8
    sig = s0 / np.arange(1, P + 1)

    def loop(reset: bool, sigma2: bool) -> np.ndarray:
        rng, theta, opt = np.random.default_rng(4), np.zeros(env.theta_dim), Adam(lr)
        for p in range(P):
            if reset:
                opt = Adam(lr)
            for _ in range(K):
                ro = env.rollout(theta, sigma=sig[p], batch=n, rng=rng, exploration=exploration)
                if exploration == "action":
                    g = gpomdp(ro.rewards, action_scores(ro.states, ro.actions, ro.means, sig[p]), env.gamma)
                else:
                    g = pgpe(ro.returns(env.gamma), ro.thetas, theta, sig[p])
                theta = opt.step(theta, g, scale=(sig[p] / s0) ** 2 if sigma2 else 1.0)
        return theta

    def ours(**kw) -> np.ndarray:
        return PES(env, exploration=exploration, phases=P, iters_per_phase=K, sigma0=s0, lr=lr, batch=n, seed=4,
                   **kw).learn().theta

    reset, sigma2, released = ours(reset_optimizer=True), ours(lr_schedule="sigma2"), ours()
    np.testing.assert_array_equal(reset, loop(True, False))
    np.testing.assert_array_equal(sigma2, loop(False, True))
    np.testing.assert_array_equal(released, loop(False, False))
    assert not np.array_equal(reset, released) and not np.array_equal(sigma2, released)   # negative controls
    with pytest.raises(PesError, match="lr_schedule"):
        PES(env, lr_schedule="sigma")


def test_pes_same_seed_same_numbers_other_seed_differs():
    env = LQR.scalar(horizon=5)
    a = PES(env, phases=2, iters_per_phase=5, batch=8, seed=1).learn()
    b = PES(env, phases=2, iters_per_phase=5, batch=8, seed=1).learn()
    c = PES(env, phases=2, iters_per_phase=5, batch=8, seed=2).learn()
    np.testing.assert_array_equal(a.theta, b.theta)
    assert not np.array_equal(a.theta, c.theta)
    assert a.samples == 10 * 8 * 5 and a.history[-1]["sigma"] == 0.5


# ---------------------------------------------------------------- score identities
def test_score_means_are_zero():
    rng = np.random.default_rng(0)
    n, sigma = 200_000, 0.4
    states = rng.normal(size=(n, 1, 3))
    means = rng.normal(size=(n, 1, 2))
    actions = means + sigma * rng.standard_normal((n, 1, 2))
    sc = action_scores(states, actions, means, sigma)[:, 0]
    assert _within(sc.mean(0), 0.0, sc.std(0) / np.sqrt(n))
    ss = action_sigma_scores(actions, means, sigma)[:, 0]
    assert _within(ss.mean(), 0.0, ss.std() / np.sqrt(n))
    th = rng.normal(size=4)
    thetas = th + sigma * rng.standard_normal((n, 4))
    ps = parameter_sigma_scores(thetas, th, sigma)
    assert _within(ps.mean(), 0.0, ps.std() / np.sqrt(n))
    # negative control: a wrong dimension in the σ-score has a nonzero mean (−σ²/σ³ = −1/σ)
    wrong = (((thetas - th) ** 2).sum(-1) - 5 * sigma ** 2) / sigma ** 3
    assert not _within(wrong.mean(), 0.0, wrong.std() / np.sqrt(n))


# ---------------------------------------------------------------- unbiasedness on quadratics
@pytest.mark.parametrize("sigma", [0.3, 1.0, 2.0])
def test_gpomdp_mean_on_one_step_quadratic_is_minus_two_theta_minus_astar_for_every_sigma(sigma):
    rng = np.random.default_rng(1)
    n, theta, a_star = 400_000, 0.7, -0.4
    states = np.ones((n, 1, 1))
    means = np.full((n, 1, 1), theta)
    actions = means + sigma * rng.standard_normal((n, 1, 1))
    rewards = -((actions[..., 0] - a_star) ** 2)                              # [n, 1]
    per = rewards[:, 0] * action_scores(states, actions, means, sigma)[:, 0, 0]
    assert _within(per.mean(), -2 * (theta - a_star), per.std() / np.sqrt(n))
    assert np.isclose(gpomdp(rewards, action_scores(states, actions, means, sigma), 1.0)[0], per.mean())
    # negative control: the score without 1/σ² is biased unless σ = 1
    bad = per * sigma ** 2
    if sigma != 1.0:
        assert not _within(bad.mean(), -2 * (theta - a_star), bad.std() / np.sqrt(n))


def test_pgpe_on_quadratic_has_mean_grad_jd_and_jp_is_jd_minus_half_sigma2_trace_h():
    rng = np.random.default_rng(2)
    d, n, sigma = 3, 400_000, 0.5
    H = np.diag([1.0, 2.0, 0.5])
    th_star, th = np.array([1.0, -1.0, 0.5]), np.zeros(3)

    def jd(t):
        e = t - th_star
        return -0.5 * np.einsum("...i,ij,...j->...", e, H, e)

    thetas = th + sigma * rng.standard_normal((n, d))
    R = jd(thetas)
    per = R[:, None] * (thetas - th) / sigma ** 2
    assert _within(per.mean(0), -H @ (th - th_star), per.std(0) / np.sqrt(n))
    np.testing.assert_allclose(pgpe(R, thetas, th, sigma), per.mean(0), rtol=1e-12)
    assert _within(R.mean(), jd(th) - 0.5 * sigma ** 2 * np.trace(H), R.std() / np.sqrt(n))
    # with the leave-one-out baseline the mean is unchanged and the variance drops
    g_b = np.stack([pgpe(R[i:i + 1000], thetas[i:i + 1000], th, sigma, baseline=True) for i in range(0, n, 1000)])
    assert _within(g_b.mean(0), -H @ (th - th_star), g_b.std(0) / np.sqrt(len(g_b)))
    # negative control: J_D itself is not the smoothed objective
    assert not _within(R.mean(), jd(th), R.std() / np.sqrt(n))


def test_reinforce_and_gpomdp_have_equal_means_and_gpomdp_less_variance():
    env = LQR.scalar(horizon=6)
    rng = np.random.default_rng(4)
    n, sigma, th = 60_000, 0.5, np.array([-0.5])
    ro = env.rollout(th, sigma=sigma, batch=n, rng=rng, exploration="action")
    sc = action_scores(ro.states, ro.actions, ro.means, sigma)                # [n, T, 1]
    disc = ro.rewards * env.gamma ** np.arange(6)                              # [n, T]
    g = np.einsum("nt,ntd->nd", disc, np.cumsum(sc, 1))                       # per-trajectory GPOMDP
    r = ro.returns(env.gamma)[:, None] * sc.sum(1)                             # per-trajectory REINFORCE
    np.testing.assert_allclose(gpomdp(ro.rewards, sc, env.gamma), g.mean(0), rtol=1e-10)
    np.testing.assert_allclose(reinforce(ro.rewards, sc, env.gamma), r.mean(0), rtol=1e-10)
    diff = g - r
    assert _within(diff.mean(0), 0.0, diff.std(0) / np.sqrt(len(diff)))
    assert g.var() < r.var()
    # and the GPOMDP mean is the exact gradient of J_A (finite differences of the closed form)
    h = 1e-5
    exact = (env.exact_return(th + h, sigma, "action") - env.exact_return(th - h, sigma, "action")) / (2 * h)
    assert _within(g.mean(), exact, g.std() / np.sqrt(len(g)))


def test_sigma_gradients_match_finite_differences_of_the_exact_objectives():
    env = LQR.scalar(horizon=5)
    th, sigma, h, n = np.array([-0.6]), 0.4, 1e-5, 200_000
    for x in ("action", "parameter"):
        ro = env.rollout(th, sigma=sigma, batch=n, rng=np.random.default_rng(5), exploration=x)
        _, gs = estimate(ro, th, sigma, exploration=x, gamma=env.gamma, sigma_grad=True)
        R = ro.returns(env.gamma)
        if x == "action":
            per = np.cumsum(action_sigma_scores(ro.actions, ro.means, sigma), 1)
            per = (ro.rewards * env.gamma ** np.arange(5) * per).sum(1)
        else:
            per = R * parameter_sigma_scores(ro.thetas, th, sigma)
        exact = (env.exact_return(th, sigma + h, x) - env.exact_return(th, sigma - h, x)) / (2 * h)
        assert np.isclose(gs, per.mean())
        assert _within(gs, exact, per.std() / np.sqrt(n)), (x, gs, exact)
        # negative control: scoring against a shifted mean (the released code's updated θ) is biased
        if x == "parameter":
            shifted = R * parameter_sigma_scores(ro.thetas, th + 0.3, sigma)
            assert not _within(shifted.mean(), exact, shifted.std() / np.sqrt(n))


# ---------------------------------------------------------------- LQR: simulator vs exact, optimum, closed forms
class _FixedStart(LQR):
    """LQR whose exact recursion starts from a given second moment (to compare with a finite batch exactly)."""

    S0: np.ndarray | None = None

    @property
    def sigma0_matrix(self):
        return self.S0


def test_simulator_equals_exact_recursion_deterministic_exactly_and_ab_within_se():
    env = LQR.official(horizon=8, gamma=0.95)
    th = np.array([-0.6, 0.2])
    ro = env.rollout(th, sigma=0.0, batch=50, rng=np.random.default_rng(6), exploration="deterministic")
    x0 = ro.states[:, 0]
    fixed = _FixedStart(A=env.A, B=env.B, Q=env.Q, R=env.R, horizon=8, gamma=0.95)
    fixed.S0 = x0.T @ x0 / len(x0)
    assert np.isclose(ro.returns(0.95).mean(), fixed.exact_return(th), rtol=1e-12, atol=1e-12)
    # AB: Monte Carlo within standard errors
    ro = env.rollout(th, sigma=0.7, batch=200_000, rng=np.random.default_rng(7), exploration="action")
    R = ro.returns(0.95)
    assert _within(R.mean(), env.exact_return(th, 0.7, "action"), R.std() / np.sqrt(len(R)))
    # PB: Monte Carlo within standard errors of the Gauss-Hermite value
    ro = env.rollout(th, sigma=0.2, batch=200_000, rng=np.random.default_rng(8), exploration="parameter")
    R = ro.returns(0.95)
    jp = env.exact_return(th, 0.2, "parameter")
    assert _within(R.mean(), jp, R.std() / np.sqrt(len(R)))
    # negative control: J_D is not J_A
    assert not _within(R.mean(), env.exact_return(th, 0.7, "action"), R.std() / np.sqrt(len(R)))


def test_known_numbers_of_the_note():
    env = LQR.scalar(horizon=30)
    np.testing.assert_allclose([env.exact_return([-0.5]), env.exact_return([-0.5], 0.5, "action"),
                                env.exact_return([-0.8], 1.0, "action")], [-3.471, -9.942, -25.763], atol=1e-3)


def test_infinite_horizon_closed_form_equals_a_long_finite_horizon():
    env = LQR.official(horizon=None, gamma=0.9)
    long = LQR.official(horizon=600, gamma=0.9)
    th = np.array([-0.5, 0.3])
    for s in (0.0, 0.4):
        assert np.isclose(env.exact_return(th, s, "action"), long.exact_return(th, s, "action"), rtol=1e-9)


def test_discounted_dare_gain_beats_perturbed_gains_and_the_undiscounted_one():
    env = LQR.scalar(horizon=None, gamma=0.6, a=1.1, b=0.5)
    k = env.optimal_theta()
    j = env.exact_return(k)
    rng = np.random.default_rng(9)
    for d in rng.normal(scale=0.05, size=(20, 1)):
        assert env.exact_return(k + d) < j
    # negative control: the DARE of the undiscounted system (the released code's) gives a worse gain
    und = LQR.scalar(horizon=None, gamma=1.0 - 1e-12, a=1.1, b=0.5).optimal_theta()
    assert not np.allclose(und, k) and env.exact_return(und) < j
    # and the finite-horizon best stationary gain is never worse than the DARE gain for that horizon
    fin = LQR.official(horizon=20)
    assert fin.exact_return(fin.optimal_theta(finite_horizon=True)) >= fin.exact_return(fin.optimal_theta())


def test_gauss_hermite_jp_matches_mc_and_second_order_expansion():
    env = LQR.scalar(horizon=10)
    th = env.optimal_theta()
    s = 1e-3
    jd = env.exact_return(th)
    h = 1e-4
    hess = (env.exact_return(th + h) - 2 * jd + env.exact_return(th - h)) / h ** 2
    assert np.isclose(env.exact_return(th, s, "parameter") - jd, 0.5 * s ** 2 * hess, rtol=1e-3)


# ---------------------------------------------------------------- σ parameterisations
@pytest.mark.parametrize("name, nus", [("hyper", [-3.0, -0.5, 0.0]), ("exp", [-2.0, 0.0, 1.0]),
                                       ("sigmoid", [-3.0, 0.0, 2.0])])
def test_parameterisation_round_trip_and_derivative(name, nus):
    p = Parameterization(name, exponent=1.5)
    for nu in nus:
        assert np.isclose(p.inverse(p.sigma(nu)), nu, atol=1e-10)
        h = 1e-6
        fd = (p.sigma(nu + h) - p.sigma(nu - h)) / (2 * h)
        assert np.isclose(p.dsigma(nu), fd, rtol=1e-6)
    if name == "sigmoid":  # negative control: the released derivative (σ itself) is wrong
        assert not np.isclose(p.sigma(0.0), (p.sigma(1e-6) - p.sigma(-1e-6)) / 2e-6)


def test_slpg_learns_sigma_and_released_pb_scoring_differs():
    env = LQR.official(horizon=5)
    a = SLPG(env, exploration="parameter", phases=30, batch=20, seed=0).learn()
    b = SLPG(env, exploration="parameter", phases=30, batch=20, seed=0, pb_sigma_score="released").learn()
    assert a.sigma != 1.0 and a.sigma != b.sigma
    np.testing.assert_allclose(a.sigma, np.exp(a.nu))
    h = SLPG(env, exploration="action", parameterization="hyper", phases=5, iters_per_phase=3, batch=10).learn()
    assert h.nu <= 0 and len({r["sigma"] for r in h.history[1:]}) <= 5   # ν updated once per phase


# ---------------------------------------------------------------- evaluation and optimiser
def test_sigma_zero_is_noise_free():
    env = LQR.official(horizon=5)
    th = np.array([-0.5, 0.1])
    a = env.rollout(th, sigma=0.0, batch=4, rng=np.random.default_rng(0), exploration="action")
    b = env.rollout(th, sigma=0.0, batch=4, rng=np.random.default_rng(0), exploration="parameter")
    np.testing.assert_array_equal(a.actions, a.means)
    np.testing.assert_array_equal(a.rewards, b.rewards)
    c = env.rollout(th, sigma=0.1, batch=4, rng=np.random.default_rng(0), exploration="action")
    assert not np.array_equal(c.actions, c.means)                              # negative control
    assert env.exact_return(th, 0.0, "parameter") == env.exact_return(th)


def test_adam_step_raises_a_linear_objective():
    c = np.array([1.0, -2.0, 0.5])
    th = np.zeros(3)
    up = make_optimizer("adam", 0.1).step(th, c)
    assert c @ up > c @ th
    np.testing.assert_allclose(up, 0.1 * np.sign(c), rtol=1e-6)
    assert c @ Adam(0.1).step(th, -c) < c @ th                                 # negative control: descent
    assert c @ make_optimizer("sgd", 0.1).step(th, c) > 0


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("kw, field", [
    ({"phases": 0}, "phases"), ({"iters_per_phase": 0}, "iters_per_phase"), ({"sigma0": 0.0}, "sigma0"),
    ({"sigma_exponent": 0.0}, "sigma_exponent"), ({"sigma_min": -0.1}, "sigma_min"), ({"batch": 0}, "batch"),
    ({"horizon": 0}, "horizon"), ({"gamma": 0.0}, "gamma"), ({"gamma": 1.5}, "gamma"), ({"lr": 0.0}, "lr"),
    ({"estimator": "ppo"}, "estimator"), ({"exploration": "both"}, "exploration"), ({"optimizer": "rmsprop"},
                                                                                     "optimizer"),
    ({"theta0": [1.0, 2.0, 3.0]}, "theta"),
])
def test_bad_input_is_refused_naming_the_field(kw, field):
    with pytest.raises(PesError, match=field):
        PES(LQR.official(), **kw)


def test_bad_slpg_input():
    with pytest.raises(PesError, match="parameterization"):
        SLPG(LQR.official(), parameterization="softplus")
    with pytest.raises(PesError, match="hyper"):
        SLPG(LQR.official(), parameterization="hyper", sigma0=2.0)
    with pytest.raises(PesError, match="sigma_lr"):
        SLPG(LQR.official(), sigma_lr=-1.0)


def test_unstable_gain_in_infinite_horizon_raises():
    env = LQR.scalar(horizon=None)
    with pytest.raises(PesError, match="stabilise"):
        env.exact_return([1.0])
    with pytest.raises(PesError, match="theta"):
        env.exact_return([1.0, 2.0])


def test_missing_mujoco_is_a_clear_error(monkeypatch):
    import gymnasium as gym
    from pes.envs import make_gym_env

    def boom(*a, **k):
        raise gym.error.DependencyNotInstalled("No module named 'mujoco'")

    monkeypatch.setattr(gym, "make", boom)
    with pytest.raises(PesError, match="mujoco"):
        make_gym_env("Swimmer-v5")


def test_bad_config_names_the_field():
    from pes.config import Config, LearnerConfig

    with pytest.raises(ValueError, match="batch"):
        LearnerConfig(batch=0).validate()
    with pytest.raises(ValueError, match="gamma"):
        LearnerConfig(gamma=0.0).validate()
    with pytest.raises(ValueError, match="phases"):
        Config(iterations=55, phases=10)


# ---------------------------------------------------------------- the README quickstart runs
def test_readme_python_quickstart_runs():
    code = re.findall(r"^```python\n(.*?)^```", README.read_text(), re.S | re.M)
    assert code, "README has no ```python block"
    exec(compile(code[0], "README.md", "exec"), {})
