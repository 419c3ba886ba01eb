"""Tests of SafeDiffCon's mathematics; each asserts something that would fail if the method were wrong."""

import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from safediffcon.burgers import grid, simulate, simulate_loop
from safediffcon.config import Config
from safediffcon.conformal import normalise, quantile, safety_weights
from safediffcon.data import BurgersData, make_split
from safediffcon.diffusion import NT, GaussianDiffusion, to_image
from safediffcon.errors import SafediffconError
from safediffcon.method import SafeDiffCon
from safediffcon.metrics import control_objective, safety_rates, safety_score
from safediffcon.unet import UNet2D

D64 = torch.float64


def _u0(n=3, nx=32, seed=0, amp=0.7):
    from safediffcon.burgers import initial_state
    return initial_state(n, nx, amp=amp, generator=torch.Generator().manual_seed(seed), dtype=D64)


def _f(n=3, nx=32, seed=1):
    from safediffcon.burgers import random_force
    return random_force(n, nx, generator=torch.Generator().manual_seed(seed), dtype=D64)


# ---------------------------------------------------------------- solver
def test_zero_stays_zero_and_first_frame_is_u0():
    u = simulate(torch.zeros(2, 16, dtype=D64), torch.zeros(2, 10, 16, dtype=D64), dt=2e-3)
    assert u.shape == (2, NT, 16) and torch.count_nonzero(u) == 0
    u0 = _u0()
    u = simulate(u0, _f(), dt=2e-3)
    assert torch.equal(u[:, 0], u0) and u.shape == (3, NT, 32)
    assert u[:, 1:].abs().max() > 0  # negative control: a forced state moves


def test_heat_limit_matches_the_discrete_decay_factor():
    nx, nu, dt = 32, 0.01, 2e-3
    x = grid(nx, dtype=D64)
    eps = 1e-4
    u = simulate(eps * torch.sin(math.pi * x)[None], torch.zeros(1, 10, nx, dtype=D64), nu=nu, dt=dt)
    dx = 1 / (nx + 1)
    lam = nu * dt * (2 - 2 * math.cos(math.pi * dx)) / dx**2
    m = round(1 / dt / 10)
    for k in range(1, NT):
        amp = float((u[0, k] * torch.sin(math.pi * x)).sum() / torch.sin(math.pi * x).square().sum())
        want = eps * (1 - lam) ** (k * m)
        assert abs(amp - want) / want < 1e-3
    # negative control: twice the viscosity decays measurably faster
    wrong = eps * (1 - 2 * lam) ** (10 * m)
    assert abs(amp - wrong) / wrong > 1e-3


def test_mirror_symmetry_to_machine_precision():
    u0, f = _u0(), _f()
    u = simulate(u0, f, dt=2e-3)
    v = simulate(-u0.flip(-1), -f.flip(-1), dt=2e-3)
    torch.testing.assert_close(v, -u.flip(-1), rtol=0, atol=1e-12)
    # negative control: flipping without negating is not a symmetry of Burgers
    w = simulate(u0.flip(-1), f.flip(-1), dt=2e-3)
    assert (w - u.flip(-1)).abs().max() > 1e-4


def test_control_interval_k_changes_only_later_frames():
    u0, f = _u0(), _f()
    base = simulate(u0, f, dt=2e-3)
    for k in (0, 4, 9):
        g = f.clone()
        g[:, k] += 0.5
        u = simulate(u0, g, dt=2e-3)
        assert torch.equal(u[:, :k + 1], base[:, :k + 1])
        assert (u[:, k + 1] - base[:, k + 1]).abs().min() > 0


def test_batched_equals_loop_in_float64():
    u0, f = _u0(4), _f(4)
    torch.testing.assert_close(simulate(u0, f, dt=2e-3), simulate_loop(u0, f, dt=2e-3), rtol=0, atol=1e-13)


def test_substep_maximum_is_at_least_the_recorded_maximum():
    u, smax = simulate(_u0(), _f(), dt=2e-3, substep_max=True)
    assert (smax >= safety_score(u) - 1e-15).all()


@pytest.mark.parametrize("kw, match", [
    (dict(nu=0.0), "nu"), (dict(dt=-1e-3), "dt"), (dict(nu=1.0, dt=1e-2), "unstable"), (dict(dt=3e-3), "dt"),
])
def test_solver_refuses_bad_parameters(kw, match):
    with pytest.raises(SafediffconError, match=match):
        simulate(_u0(), _f(), **{"nu": 0.01, "dt": 2e-3, **kw})


def test_solver_refuses_bad_shapes_and_values():
    u0, f = _u0(), _f()
    with pytest.raises(SafediffconError, match="f must be"):
        simulate(u0, f[:, :9])
    with pytest.raises(SafediffconError, match="points in space"):
        simulate(u0, _f(nx=16))
    with pytest.raises(SafediffconError, match="nx"):
        simulate(torch.zeros(1, 3, dtype=D64), torch.zeros(1, 10, 3, dtype=D64))
    bad = u0.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(SafediffconError, match="finite"):
        simulate(bad, f, dt=2e-3)


# ---------------------------------------------------------------- conformal quantile
@pytest.mark.parametrize("n, alpha", [(19, 0.9), (99, 0.98), (50, 0.5), (1000, 0.98)])
def test_uniform_weights_give_the_split_conformal_rank_in_both_variants(n, alpha):
    c = np.random.default_rng(n).random(n)
    k = math.ceil(alpha * (n + 1))
    want = np.sort(c)[k - 1]
    assert quantile(c, None, alpha=alpha, method="weighted") == want
    assert quantile(c, np.full(n, 0.3), alpha=alpha, method="official") == pytest.approx(want, rel=1e-12)
    assert np.sort(c)[k - 2] < want  # negative control: the next rank down is a different number


def test_coverage_is_at_least_alpha_over_200_repetitions():
    rng = np.random.default_rng(0)
    n, alpha = 49, 0.9
    cov, cov_low = [], []
    for _ in range(200):
        cal, test = rng.standard_normal(n) ** 2, rng.standard_normal(2000) ** 2
        q = quantile(cal, alpha=alpha)
        cov.append(np.mean(test <= q))
        cov_low.append(np.mean(test <= np.sort(cal)[math.ceil(alpha * n) - 3]))  # too low a rank
    assert np.mean(cov) >= alpha - 0.005
    assert np.mean(cov_low) < alpha - 0.02  # negative control


def test_q_is_monotone_in_alpha_and_bad_alpha_refused():
    c = np.random.default_rng(1).random(200)
    qs = [quantile(c, alpha=a) for a in np.linspace(0.05, 0.99, 40)]
    assert all(b >= a for a, b in zip(qs, qs[1:])) and qs[-1] > qs[0]
    for a in (0.0, 1.0, -0.1, float("nan")):
        with pytest.raises(SafediffconError, match="alpha"):
            quantile(c, alpha=a)
    with pytest.raises(SafediffconError, match="too small"):
        quantile(np.ones(10), alpha=0.98)


@pytest.mark.parametrize("p", [1.0, 0.3, 0.1, 0.015])
def test_weighted_quantile_vs_the_official_weighted_scores(p):
    rng = np.random.default_rng(2)
    n = 1000
    c = rng.random(n)
    w = np.where(np.arange(n) < p * n, 1.0, 1e-12)
    off = quantile(c, w, alpha=0.98, method="official")
    if p == 1.0:
        assert off == quantile(c, w, alpha=0.98)
    elif p == 0.015:  # the heavy points' mass cannot reach alpha: textbook +inf, official collapses near 0
        with pytest.warns(RuntimeWarning):
            assert quantile(c, w, alpha=0.98) == math.inf
        assert off < 0.05
    else:  # the official variant inflates Q by about 1/p
        tb = quantile(c, w, alpha=0.98)
        assert math.isfinite(tb) and off > 1.5 * tb


def test_safety_weights_properties():
    s = np.linspace(0, 2, 101)
    w = safety_weights(s, Q=0.1, s0=0.64, lam=10.0)
    assert np.all(w[s + 0.1 <= 0.64] == 1.0) and np.all(w[s + 0.1 > 0.64] < 1.0)
    assert np.all(np.diff(w) <= 0) and np.all((w > 0) & (w <= 1))
    assert np.all(safety_weights(s, Q=0.1, s0=0.64, lam=20.0) <= w)
    assert normalise(w).mean() == pytest.approx(1.0)
    assert np.all(safety_weights(s, Q=0.1, s0=0.64, lam=0.0) == 1.0)
    with pytest.raises(SafediffconError, match="lambda"):
        safety_weights(s, Q=0.0, s0=0.64, lam=-1.0)


# ---------------------------------------------------------------- diffusion
def _diff(nx=16, T=20, **kw):
    torch.manual_seed(0)
    return GaussianDiffusion(UNet2D(dim=4, mults=(1, 2)), nx=nx, timesteps=T, scaler=5.0, **kw)


def test_lambda_zero_gives_the_plain_loss_exactly():
    d = _diff()
    data = make_split(8, 16, nu=0.01, dt=2e-3, amp=1.0, seed=0)
    x0 = to_image(data.u, data.f, scaler=5.0)
    w = torch.as_tensor(normalise(safety_weights(data.s.numpy(), Q=0.3, s0=0.64, lam=0.0)), dtype=torch.float32)
    a = d.loss(x0, generator=torch.Generator().manual_seed(3))
    b = d.loss(x0, weights=w, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a, b)
    w2 = torch.as_tensor(normalise(safety_weights(data.s.numpy(), Q=0.3, s0=0.64, lam=50.0)), dtype=torch.float32)
    assert not torch.equal(a, d.loss(x0, weights=w2, generator=torch.Generator().manual_seed(3)))


def test_q_sample_then_predict_start_is_the_identity():
    d = _diff()
    x0, eps = torch.randn(4, 3, 16, 16), torch.randn(4, 3, 16, 16)
    t = torch.tensor([0, 5, 10, 19])
    torch.testing.assert_close(d.predict_start_from_noise(d.q_sample(x0, t, eps), t, eps), x0, rtol=0, atol=1e-3)
    assert (d.predict_start_from_noise(d.q_sample(x0, t, eps), t, eps + 0.1) - x0).abs().max() > 1e-2


def test_guidance_gradient_is_zero_when_all_samples_are_safe():
    d = _diff()
    x = torch.zeros(3, 3, 16, 16)
    x[:, 2, :NT] = 0.3 / 5.0  # s_hat = 0.3
    assert torch.count_nonzero(d.guidance_grad(x, lam=500.0, Q=0.2, s0=0.64)) == 0
    g = d.guidance_grad(x, lam=500.0, Q=0.5, s0=0.64)  # 0.3 + 0.5 > 0.64: push s_hat down
    assert (g[:, 2, :NT] > 0).all() and torch.count_nonzero(g[:, :2]) == 0
    assert g[:, 2, :NT].flatten().unique().numel() == 1


def test_state_safety_estimate_is_max_u_squared_and_its_guidance_touches_only_u():
    from safediffcon.diffusion import s_hat

    d = _diff(safety_estimate="state")
    x = torch.zeros(2, 3, 16, 16)
    x[:, 0, :NT] = torch.rand(2, NT, 16) * 0.1
    x[0, 0, 4, 7] = 0.2  # u = 1.0 at one entry: s = 1
    x[:, 2, :NT] = 0.01  # the safety channel says s = 0.05
    torch.testing.assert_close(d.s_hat(x), (5.0 * x[:, 0, :NT]).square().amax(dim=(1, 2)))
    torch.testing.assert_close(s_hat(x, scaler=5.0), torch.full((2,), 0.05))  # the paper's channel estimate
    assert torch.count_nonzero(d.guidance_grad(x, lam=500.0, Q=0.0, s0=0.64)[1]) == 0  # sample 1 is safe
    g = d.guidance_grad(x, lam=500.0, Q=0.0, s0=0.64)
    assert g[0, 0, 4, 7] > 0 and torch.count_nonzero(g[0]) == 1  # only the maximising entry, pushed down
    with pytest.raises(SafediffconError, match="safety_estimate"):
        _diff(safety_estimate="mean")


class _ConstEps(torch.nn.Module):
    """A stub noise predictor: eps = 0.5 everywhere (so x_hat0 differs from x_t on every row)."""

    def forward(self, x, t):
        return torch.full_like(x, 0.5)


def test_official_safety_row_mask_pads_row_10_in_training_and_sampling_but_not_in_the_output():
    nx = 16
    d_off = GaussianDiffusion(_ConstEps(), nx=nx, timesteps=20, scaler=5.0, official_safety_row_mask=True)
    d_def = GaussianDiffusion(_ConstEps(), nx=nx, timesteps=20, scaler=5.0)
    data = make_split(4, nx, nu=0.01, dt=2e-3, amp=1.0, seed=0)
    x0 = to_image(data.u, data.f, scaler=5.0, s_rows=d_off.s_rows)
    assert torch.count_nonzero(x0[:, 2, NT - 1]) == 0 and (x0[:, 2, NT - 2] > 0).all()
    # the loss ignores the safety channel's row 10 under the mask, and counts it by default (negative control)
    bump = torch.zeros(3, 16, nx)
    bump[2, NT - 1] = 1.0

    class Bumped(torch.nn.Module):
        def forward(self, x, t):
            return _ConstEps()(x, t) + bump

    for d, same in ((d_off, True), (d_def, False)):
        a = d.loss(x0, generator=torch.Generator().manual_seed(0))
        d.model = Bumped()
        b = d.loss(x0, generator=torch.Generator().manual_seed(0))
        d.model = _ConstEps()
        assert torch.equal(a, b) == same
    u0, ut = data.u[:2, 0] * 0.5, data.u[:2, -1] * 0.5
    rows = []
    x = d_off.sample(u0, ut, steps=4, callback=lambda i, x: rows.append(x[:, 2, NT - 1].clone()),
                     generator=torch.Generator().manual_seed(1))
    assert all(torch.count_nonzero(r) == 0 for r in rows[:-1])  # padding during sampling ...
    assert torch.count_nonzero(rows[-1]) > 0 and torch.equal(rows[-1], x[:, 2, NT - 1])  # ... not in the output
    assert torch.count_nonzero(x[:, 2, NT:]) == 0 and torch.count_nonzero(x[:, 0, NT:]) == 0
    # s_hat still reads the 11 rows, row 10 included (the released estimate)
    torch.testing.assert_close(d_off.s_hat(x), 5.0 * x[:, 2, :NT].mean(dim=(1, 2)))


def test_released_ema_copies_on_the_first_call_then_acts_every_kth():
    from safediffcon.ema import ReleasedEMA

    net = torch.nn.Linear(2, 2)
    ema = ReleasedEMA(net, beta=0.9, update_every=10, update_after_step=100)
    for k in range(112):
        with torch.no_grad():
            net.weight.fill_(float(k + 1))
        acted = ema.update(net)
        assert acted == (k % 10 == 0)
        if k <= 100 and acted:
            assert torch.equal(ema.model.weight, net.weight)  # a copy
        if k == 105:
            assert torch.all(ema.model.weight == 101.0)  # unchanged between acting calls
    # call 110 moved it: d = min(beta, 1 - (1 + 9)^(-2/3)) = 0.7846
    d = min(0.9, 1 - 10 ** (-2 / 3))
    torch.testing.assert_close(ema.model.weight, torch.full((2, 2), d * 101.0 + (1 - d) * 111.0))
    assert ema.decay(0) == 0.0 and ema.decay(100) == 0.0 and ema.decay(10_000) == 0.9
    with pytest.raises(SafediffconError, match="beta"):
        ReleasedEMA(net, beta=1.0)


def test_infft_with_the_released_ema_evaluates_the_weights_after_the_first_step():
    m = _tiny(guidance_lambda=0.0)  # no guidance: s_hat + Q > s0 stays, so every InfFT step has a gradient
    train = make_split(32, 16, nu=0.01, dt=2e-3, amp=1.0, seed=0)
    cal = make_split(20, 16, nu=0.01, dt=2e-3, amp=0.7, safe_only=True, seed=1)
    m.pretrain(train, steps=2, batch_size=8)
    m.Q = 0.7
    u0, ut = cal.u0[:4], cal.u_target[:4]
    runs = {}
    for name, iters, ema in (("ema2", 2, True), ("one", 1, False), ("two", 2, False)):
        c = m.clone()
        c._gen.manual_seed(5)
        qs = c.fine_tune(u0, ut, cal, iters=iters, ema=ema)
        runs[name] = (c, qs)
    w = {k: torch.cat([p.detach().flatten() for p in c.net.parameters()]) for k, (c, _) in runs.items()}
    assert torch.equal(w["ema2"], w["one"])  # two updates, but the EMA holds the first one only
    assert not torch.equal(w["two"], w["one"])  # negative control: the default evaluates both updates
    assert runs["ema2"][1][0] == runs["one"][1][0]  # the first calibration sees the same weights
    assert runs["ema2"][0].diffusion.model is runs["ema2"][0].net
    assert all(loss > 0 for loss in runs["two"][0].history["infft_loss"])


def test_infft_curve_hook_sees_each_iteration_and_leaves_the_run_unchanged():
    m = _tiny(guidance_lambda=0.0)  # no guidance: every InfFT step has a gradient
    train = make_split(32, 16, nu=0.01, dt=2e-3, amp=1.0, seed=0)
    cal = make_split(20, 16, nu=0.01, dt=2e-3, amp=0.7, safe_only=True, seed=1)
    m.pretrain(train, steps=2, batch_size=8)
    m.Q = 0.7
    u0, ut = cal.u0[:4], cal.u_target[:4]
    seen, fs = [], []

    def hook(k, model):
        seen.append((k, model.Q))
        fs.append(model.control(u0, ut, generator=torch.Generator().manual_seed(9)))

    a, b = m.clone(), m.clone()
    a._gen.manual_seed(5)
    b._gen.manual_seed(5)
    qa = a.fine_tune(u0, ut, cal, iters=3)
    qb = b.fine_tune(u0, ut, cal, iters=3, on_iter=hook)
    assert qa == qb  # the hook draws its own noise: the fine-tuning run is the same with or without it
    assert all(torch.equal(x, y) for x, y in zip(a.net.parameters(), b.net.parameters()))
    assert [k for k, _ in seen] == [1, 2, 3] and [q for _, q in seen] == qb
    # same noise at every point: the controls differ only because the weights changed
    assert not torch.equal(fs[0], fs[2])
    torch.testing.assert_close(b.control(u0, ut, generator=torch.Generator().manual_seed(9)), fs[2], rtol=0, atol=0)
    with pytest.raises(SafediffconError, match="iters"):
        m.clone().fine_tune(u0, ut, cal, iters=-1)


def test_infft_loss_is_zero_once_guidance_certifies_every_sample():
    # with strong guidance every generated s_hat + Q is pushed below s0, so the InfFT loss max(.,0)^2 is exactly 0
    # and the step changes the weights only through weight decay (what the full run measures at its tuned lambda_g)
    m = _tiny(guidance_lambda=1e5)
    cal = make_split(20, 16, nu=0.01, dt=2e-3, amp=0.7, safe_only=True, seed=1)
    m.Q = 0.3
    c = m.clone()
    c._gen.manual_seed(1)
    c.fine_tune(cal.u0[:4], cal.u_target[:4], cal, iters=1, weight_decay=0.0)
    assert c.history["infft_loss"] == [0.0]
    assert all(torch.equal(x, y) for x, y in zip(m.net.parameters(), c.net.parameters()))
    d = _tiny(guidance_lambda=0.0)  # negative control: no guidance, a positive loss and moved weights
    d.Q = 0.7
    e = d.clone()
    e._gen.manual_seed(1)
    e.fine_tune(cal.u0[:4], cal.u_target[:4], cal, iters=1, weight_decay=0.0)
    assert e.history["infft_loss"][0] > 0
    assert not all(torch.equal(x, y) for x, y in zip(d.net.parameters(), e.net.parameters()))


def test_inpainted_rows_equal_the_conditions_after_every_step():
    d = _diff()
    u0, ut = torch.rand(2, 16) * 0.5, torch.rand(2, 16) * 0.5
    seen = []

    def cb(i, x):
        torch.testing.assert_close(x[:, 0, 0], u0 / 5.0, rtol=0, atol=0)
        torch.testing.assert_close(x[:, 0, NT - 1], ut / 5.0, rtol=0, atol=0)
        assert torch.count_nonzero(x * (1 - d.real)) == 0
        seen.append(i)

    d.sample(u0, ut, steps=5, guidance_lambda=500.0, Q=0.5, callback=cb, generator=torch.Generator().manual_seed(0))
    assert seen == list(range(5))


def test_ddim_eta_zero_is_deterministic_given_the_noise():
    d = _diff()
    u0, ut = torch.rand(2, 16) * 0.5, torch.rand(2, 16) * 0.5
    a = d.sample(u0, ut, steps=4, eta=0.0, generator=torch.Generator().manual_seed(1))
    b = d.sample(u0, ut, steps=4, eta=0.0, generator=torch.Generator().manual_seed(1))
    c = d.sample(u0, ut, steps=4, eta=0.0, generator=torch.Generator().manual_seed(2))
    assert torch.equal(a, b) and not torch.equal(a, c)
    with pytest.raises(SafediffconError, match="must not exceed"):
        d.sample(u0, ut, steps=21)


# ---------------------------------------------------------------- metrics
def test_rates_are_ordered_and_j_is_zero_iff_the_target_is_reached():
    u = torch.randn(20, NT, 16) * 0.6
    r = safety_rates(u, u_bound=0.8)
    assert 0 <= r["R_p"] <= r["R_t"] <= r["R_s"] <= 1 and r["R_p"] > 0
    assert torch.equal(control_objective(u, u[:, -1]), torch.zeros(20))
    assert (control_objective(u, u[:, -1] + 1e-3) > 0).all()
    assert torch.equal(safety_score(u), u.square().amax(dim=(1, 2)))


# ---------------------------------------------------------------- the controller
def _tiny(**kw):
    cfg = dict(nx=16, dt=2e-3, dim=4, mults=(1, 2), timesteps=20, ddim_steps=3, alpha=0.9, seed=0)
    cfg.update(kw)
    return SafeDiffCon(**cfg)


@pytest.mark.parametrize("kw, match", [
    (dict(alpha=1.0), "alpha"), (dict(alpha=0.0), "alpha"), (dict(u_bound=0.0), "u_bound"),
    (dict(weight_lambda=-1.0), "weight_lambda"), (dict(guidance_lambda=-1.0), "guidance_lambda"),
    (dict(nu=0.0), "nu"), (dict(dt=0.0), "dt"), (dict(nu=1.0), "unstable"), (dict(nx=2), "nx"),
    (dict(ddim_steps=21), "ddim_steps"),
])
def test_controller_refuses_bad_settings(kw, match):
    with pytest.raises(SafediffconError, match=match):
        _tiny(**kw)


def test_pipeline_runs_and_refuses_bad_calibration_and_unsafe_targets():
    m = _tiny()
    train = make_split(32, 16, nu=0.01, dt=2e-3, amp=1.0, seed=0)
    cal = make_split(20, 16, nu=0.01, dt=2e-3, amp=0.7, safe_only=True, seed=1)
    before = [p.detach().clone() for p in m.net.parameters()]
    m.pretrain(train, steps=2, batch_size=8)
    assert all(not torch.equal(a, b) for a, b in zip(before, m.net.parameters()))
    qs = m.post_train(train, cal, epochs=2, steps_per_epoch=1, batch_size=8)
    assert len(qs) == 2 and all(q >= 0 for q in qs)
    f = m.control(cal.u0[:3], cal.u_target[:3])
    assert f.shape == (3, 10, 16) and torch.isfinite(f).all()
    with pytest.raises(SafediffconError, match="too small"):
        m.calibrate(cal.subset(slice(0, 5)))
    unsafe = cal.u_target[:1].clone()
    unsafe[0, 3] = 0.9
    with pytest.raises(SafediffconError, match="u_target violates"):
        m.control(cal.u0[:1], unsafe)
    with pytest.raises(SafediffconError, match="nx"):
        m.control(cal.u0[:1, :8], cal.u_target[:1, :8])


def test_calibration_lambda_override_changes_only_the_weights():
    m = _tiny()
    cal = make_split(20, 16, nu=0.01, dt=2e-3, amp=0.7, safe_only=True, seed=1)
    m._gen.manual_seed(0)
    m.calibrate(cal, Q_prev=0.5)
    a = m.last_calibration
    m._gen.manual_seed(0)
    m.calibrate(cal, Q_prev=0.5, weight_lambda=0.0)
    b = m.last_calibration
    assert np.array_equal(a["scores"], b["scores"])  # same samples
    assert np.all(b["weights"] == 1.0) and not np.all(a["weights"] == 1.0)  # lambda = 0: uniform weights


def test_data_refuses_nan_and_wrong_sizes():
    d = make_split(4, 16, nu=0.01, dt=2e-3, amp=1.0, seed=0)
    u = d.u.clone()
    u[0, 0, 0] = float("inf")
    with pytest.raises(SafediffconError, match="finite"):
        BurgersData(u, d.f)
    with pytest.raises(SafediffconError, match="f must be"):
        BurgersData(d.u, d.f[:, :5])


def test_h5_roundtrip_in_the_official_layout(tmp_path):
    h5py = pytest.importorskip("h5py")
    from safediffcon.data import load_h5, save_h5

    d = make_split(5, 16, nu=0.01, dt=2e-3, amp=1.0, seed=0)
    p = save_h5(tmp_path / "burgers_test.h5", "test", d, dt=2e-3)
    with h5py.File(p) as fh:
        assert fh["test"]["pde_11-16"].shape == (5, 11, 16) and fh["test"]["pde_11-16_f"].shape == (5, 10, 16)
    e = load_h5(p, "test")
    assert torch.equal(e.u, d.u) and torch.equal(e.f, d.f)
    with pytest.raises(SafediffconError, match="no group"):
        load_h5(p, "train")


@pytest.mark.parametrize("field, value", [("nx", 2), ("alpha", 1.5), ("u_bound", 0.0), ("weight_lambda", -1.0),
                                          ("dt", 0.0), ("ddim_steps", 500), ("n_cal", 10), ("seeds", 0),
                                          ("ema_beta", 1.0), ("few_seeds", -1), ("state_guidance_grid", (1.0,)),
                                          ("attention", "yes")])
def test_bad_config_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        Config(**{field: value})


def test_readme_quickstart_runs():
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(block, "README quickstart", "exec"), {})


# ---------------------------------------------------------------- trivial controls, post-training weights, plateau
def test_advance_is_one_interval_of_simulate():
    from safediffcon.burgers import advance

    u0, f = _u0(), _f()
    u = simulate(u0, f, dt=2e-3)
    torch.testing.assert_close(advance(u0, f[:, 0], dt=2e-3), u[:, 1], rtol=0, atol=0)
    torch.testing.assert_close(advance(u[:, 4], f[:, 4], dt=2e-3), u[:, 5], rtol=0, atol=0)
    assert not torch.equal(advance(u0, f[:, 1], dt=2e-3), u[:, 1])  # negative control: another interval's force


def test_proportional_control_is_closed_loop_and_zero_gain_is_the_zero_control():
    from safediffcon.feedback import proportional_control

    kw = dict(nu=0.01, dt=2e-3)
    d = make_split(6, 32, amp=0.7, safe_only=True, seed=3, **kw)
    f0 = proportional_control(d.u0, d.u_target, gain=0.0, **kw)
    assert f0.shape == (6, 10, 32) and torch.count_nonzero(f0) == 0
    k = 3.0
    f = proportional_control(d.u0, d.u_target, gain=k, **kw)
    u = simulate(d.u0, f, **kw)  # re-simulating the open-loop equivalent reproduces the closed loop
    torch.testing.assert_close(f, k * (d.u_target[:, None] - u[:, :-1]), rtol=1e-5, atol=1e-6)
    j = lambda g: float(control_objective(simulate(d.u0, g, **kw), d.u_target).mean())  # noqa: E731
    assert j(f) < 0.25 * j(f0)  # feedback pulls the final state to the target; f = 0 does not
    with pytest.raises(SafediffconError, match="gain"):
        proportional_control(d.u0, d.u_target, gain=-1.0, **kw)


def test_effective_sample_size_and_post_training_records_it():
    ess = SafeDiffCon.effective_sample_size
    assert ess(np.ones(50)) == pytest.approx(50)
    assert ess(np.r_[1.0, np.zeros(49)]) == pytest.approx(1.0)
    assert ess(np.r_[np.ones(10), np.zeros(40)]) == pytest.approx(10)
    m = _tiny()
    train = make_split(32, 16, nu=0.01, dt=2e-3, amp=1.0, seed=0)
    cal = make_split(20, 16, nu=0.01, dt=2e-3, amp=0.7, safe_only=True, seed=1)
    m.pretrain(train, steps=2, batch_size=8)
    m.post_train(train, cal, epochs=2, steps_per_epoch=2, batch_size=8)
    e = m.history["post_train_ess"]
    safe = int((train.s <= m.s0).sum())
    assert len(e) == 2 and e[0] == pytest.approx(safe, rel=1e-3)  # Q = 0, lambda 2500: the safe ones, weight 1
    assert m.history["post_train_param_change"][0] > 0


def test_pretrain_stops_at_a_validation_plateau_and_keeps_the_best_weights():
    m = _tiny()
    train = make_split(32, 16, nu=0.01, dt=2e-3, amp=1.0, seed=0)
    scores = iter([3.0, 1.0, 2.0, 2.0, 2.0, 0.5])
    snaps = []

    def evaluate(model):
        snaps.append(torch.cat([p.detach().flatten().clone() for p in model.net.parameters()]))
        return next(scores)

    m.pretrain(train, steps=12, batch_size=8, evaluate=evaluate, eval_every=2, patience=3)
    c = m.pretrain_curve
    assert c.stopped_by == "plateau" and c.steps == [2, 4, 6, 8, 10] and c.best == 1.0
    now = torch.cat([p.detach().flatten() for p in m.net.parameters()])
    assert torch.equal(now, snaps[1]) and not torch.equal(now, snaps[-1])  # the best (step 4), not the last


def test_pretrain_with_ema_validates_and_keeps_the_averaged_weights():
    train = make_split(32, 16, nu=0.01, dt=2e-3, amp=1.0, seed=0)
    flat = lambda m: torch.cat([p.detach().flatten().clone() for p in m.net.parameters()])  # noqa: E731
    seen = {}
    for ema in (0.0, 0.5):
        m = _tiny()
        init = flat(m)
        scores = iter([1.0, 2.0, 2.0, 2.0])
        snaps = []

        def evaluate(model, snaps=snaps, scores=scores):
            snaps.append(flat(model))
            return next(scores)

        m.pretrain(train, steps=8, batch_size=8, lr=1e-2, evaluate=evaluate, eval_every=2, patience=3, ema=ema)
        assert torch.equal(flat(m), snaps[0])  # the best (first) validated weights are kept
        seen[ema] = (init, snaps[0])
    init, online = seen[0.0]
    _, averaged = seen[0.5]
    # two steps of decay 0.5 from the initial weights: e = 0.25 w0 + 0.25 w1 + 0.5 w2, strictly between w0 and w2
    assert not torch.equal(averaged, online)
    assert (averaged - init).norm() < (online - init).norm()
    with pytest.raises(SafediffconError, match="ema"):
        _tiny().pretrain(train, steps=2, batch_size=8, evaluate=lambda m: 0.0, ema=1.0)


@pytest.mark.parametrize("attention", ["mid", "all"])
def test_unet_attention_gives_a_global_receptive_field(attention):
    """With attention the output at the far end of the grid depends on the first column (64 columns apart)."""
    torch.manual_seed(0)
    net = UNet2D(dim=8, mults=(1, 2, 4), attention=attention)
    torch.nn.init.normal_(net.out[-1].weight, std=0.1)  # the zero-initialised output layer would hide every path
    x = torch.randn(1, 3, 16, 64, requires_grad=True)
    out = net(x, torch.tensor([5]))
    assert out.shape == x.shape
    (g,) = torch.autograd.grad(out[0, :, :, -1].sum(), x)
    assert float(g[0, :, :, 0].abs().sum()) > 0.0


def test_attention_setting_is_saved_and_bad_values_refused(tmp_path):
    m = SafeDiffCon(nx=16, dt=2e-3, dim=4, mults=(1, 2), timesteps=20, ddim_steps=3, attention="all")
    m.save(tmp_path / "m")
    back = SafeDiffCon.load(tmp_path / "m")
    assert back.net.attention == "all"
    for p, q in zip(m.net.parameters(), back.net.parameters()):
        assert torch.equal(p, q)
    with pytest.raises(SafediffconError, match="attention"):
        SafeDiffCon(nx=16, dt=2e-3, dim=4, mults=(1, 2), timesteps=20, ddim_steps=3, attention="yes")


def test_attention_heads_divide_any_channel_count():
    from safediffcon.unet import _heads

    for c in (4, 8, 12, 20, 28, 56, 64):
        h = _heads(c)
        assert c % h == 0 and 1 <= h <= max(1, c // 8)
    net = UNet2D(dim=14, mults=(1, 2), attention="all")  # 14 and 28 channels
    assert net(torch.randn(1, 3, 16, 16), torch.tensor([3])).shape == (1, 3, 16, 16)
