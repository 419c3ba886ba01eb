"""Tests of the mathematics of sggm; each would fail if the method were wrong (negative controls inline)."""

from __future__ import annotations

import numpy as np
import pytest
from sggm.errors import SggmError
from sggm.gaussian import GaussianGraphModel, propagate_dense, propagate_diagonal
from sggm.graphs import (
    as_adjacency,
    degrees,
    laplacian,
    normalized_adjacency,
    powerlaw_graph,
    regular_graph,
    upper,
)
from sggm.kl import gaussian_kl
from sggm.sampler import noise_graph, sample
from sggm.sde import VE, VP


# ------------------------------------------------------------------------------------------------ forward SDEs
def test_vp_marginal_closed_form_matches_monte_carlo_euler_maruyama():
    sde = VP(0.1, 5.0)
    t_end, steps, m = 0.8, 400, 40_000
    rng = np.random.default_rng(0)
    x0 = 1.5
    x = np.full(m, x0)
    h = t_end / steps
    for k in range(steps):
        t = k * h
        x = x + h * sde.drift_coef(t) * x + np.sqrt(h * sde.g2(t)) * rng.standard_normal(m)
    a = float(np.exp(-0.5 * (0.1 * t_end + 0.5 * 4.9 * t_end**2)))
    assert sde.mean_coef(t_end) == pytest.approx(a, rel=1e-12)
    assert sde.var(t_end) == pytest.approx(1 - a**2, rel=1e-12)
    assert x.mean() == pytest.approx(a * x0, abs=0.02)
    assert x.var() == pytest.approx(1 - a**2, abs=0.02)
    # negative control: the constant-β formula with β_min would be far off
    assert abs(x.mean() - np.exp(-0.05 * t_end) * x0) > 0.3


def test_ve_marginal_variance_matches_monte_carlo():
    sde = VE(0.2, 5.0)
    rng = np.random.default_rng(1)
    x = np.zeros(40_000)
    steps, t_end = 400, 1.0
    h = t_end / steps
    for k in range(steps):
        x = x + np.sqrt(h * sde.g2(k * h + h / 2)) * rng.standard_normal(x.shape)
    assert x.var() == pytest.approx(float(sde.var(t_end)), rel=0.03)
    assert sde.mean_coef(0.7) == 1.0


def test_noised_adjacency_symmetric_and_independent_of_feature_noise():
    n, F, B = 6, 3, 4000
    X0, A0 = np.zeros((B, n, F)), np.broadcast_to(regular_graph(n, 2, seed=0), (B, n, n))
    xt, at, zx, za = noise_graph(X0, A0, 0.5, sde_x=VP(1, 1), sde_a=VE(0.2, 2.0), seed=0)
    assert np.array_equal(at, np.swapaxes(at, 1, 2))
    assert np.all(np.diagonal(za, axis1=1, axis2=2) == 0)
    cross = np.corrcoef(zx.reshape(B, -1).T, upper(za).T)[: n * F, n * F:]
    assert np.abs(cross).max() < 0.08  # 4000 draws: |corr| of independent normals < 4.5 / sqrt(4000)
    # negative control: feature noise is correlated with itself
    assert np.corrcoef(zx[:, 0, 0], 0.5 * zx[:, 0, 0] + za[:, 0, 1])[0, 1] > 0.3


# ------------------------------------------------------------------------------------------------ graphs
def test_graph_generators_and_normalisation():
    a = regular_graph(30, 4, seed=3)
    assert np.all(degrees(a) == 4)
    p = powerlaw_graph(200, 2, seed=3)
    assert degrees(p).max() > 4 * degrees(p).mean()
    for g in (a, p):
        assert np.linalg.norm(normalized_adjacency(g), 2) <= 1 + 1e-12
        ev = np.linalg.eigvalsh(laplacian(g, "normalized"))
        assert ev.min() > -1e-12 and ev.max() <= 2 + 1e-12
    # negative control: the raw adjacency of a power-law graph has spectral norm far above 1
    assert np.linalg.norm(p, 2) > 3


# ------------------------------------------------------------------------------------------------ scores
def _torch_logp(model: GaussianGraphModel, t: float, y):
    import torch

    if model.paradigm == "features":
        a, v = float(model.sde_x.mean_coef(t)), float(model.sde_x.var(t))
        cov = torch.tensor(a * a * model.sigma_graph + v * np.eye(model.n))
        mvn = torch.distributions.MultivariateNormal(torch.zeros(model.n, dtype=torch.float64), cov)
        return mvn.log_prob(y.T).sum()  # columns i.i.d.
    if model.paradigm == "structure":
        a, v = float(model.sde_a.mean_coef(t)), float(model.sde_a.var(t))
        sd = float(np.sqrt(a * a * model.noise_std**2 + v))
        return torch.distributions.Normal(torch.tensor(a * model.mean_a), sd).log_prob(y).sum()
    ax, vx = float(model.sde_x.mean_coef(t)), float(model.sde_x.var(t))
    aa, va = float(model.sde_a.mean_coef(t)), float(model.sde_a.var(t))
    ac = np.r_[np.full(model.dim_x, ax), np.full(model.dim_a, aa)]
    vc = np.r_[np.full(model.dim_x, vx), np.full(model.dim_a, va)]
    cov = torch.tensor(ac[:, None] * model.joint_cov * ac[None, :] + np.diag(vc))
    return torch.distributions.MultivariateNormal(torch.zeros(len(ac), dtype=torch.float64), cov).log_prob(y)


@pytest.mark.parametrize("paradigm", ["features", "structure", "joint"])
def test_exact_score_equals_autograd_gradient_of_log_density(paradigm):
    import torch

    g = powerlaw_graph(7, 2, seed=0)
    m = GaussianGraphModel(paradigm=paradigm, graph=g, n_features=3, coupling=0.7, alpha=1.3)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((7, 3))
    z = np.triu(rng.standard_normal((7, 7)), 1)
    A = z + z.T
    t = 0.37
    sx, sa = m.score(X, A, t)
    if paradigm == "features":
        y = torch.tensor(X, requires_grad=True)
        _torch_logp(m, t, y).backward()
        np.testing.assert_allclose(sx, y.grad.numpy(), rtol=1e-10, atol=1e-12)
        wrong = m.score(X, A, t, score_error=0.1)[0]
        assert np.abs(wrong - y.grad.numpy()).max() > 1e-2  # negative control
    elif paradigm == "structure":
        y = torch.tensor(upper(A), requires_grad=True)
        _torch_logp(m, t, y).backward()
        np.testing.assert_allclose(upper(sa), y.grad.numpy(), rtol=1e-10, atol=1e-12)
        assert np.all(np.diag(sa) == 0) and np.array_equal(sa, sa.T)
    else:
        y = torch.tensor(np.r_[X.ravel(), upper(A)], requires_grad=True)
        _torch_logp(m, t, y).backward()
        gr = y.grad.numpy()
        np.testing.assert_allclose(sx.ravel(), gr[:21], rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(upper(sa), gr[21:], rtol=1e-9, atol=1e-11)
        # negative control: the partial score of X depends on A through the coupling
        assert np.abs(m.score(X, 0 * A, t)[0] - sx).max() > 1e-3


def test_dsm_target_and_its_conditional_mean_is_the_score():
    import torch

    m = GaussianGraphModel(paradigm="features", graph=regular_graph(8, 2, seed=0), n_features=1)
    t = 0.6
    a, v = float(m.sde_x.mean_coef(t)), float(m.sde_x.var(t))
    rng = np.random.default_rng(0)
    x0, z = rng.standard_normal(8), rng.standard_normal(8)
    xt = a * x0 + np.sqrt(v) * z
    y = torch.tensor(xt, requires_grad=True)
    torch.distributions.Normal(torch.tensor(a * x0), float(np.sqrt(v))).log_prob(y).sum().backward()
    target = -(xt - a * x0) / (1 - a**2)
    np.testing.assert_allclose(y.grad.numpy(), target, rtol=1e-12)
    # E[target | x_t] with E[x0 | x_t] = a Σ_A Σ_t⁻¹ x_t equals the marginal score -Σ_t⁻¹ x_t
    sig_t = a * a * m.sigma_graph + v * np.eye(8)
    post_mean = a * m.sigma_graph @ np.linalg.solve(sig_t, xt)
    np.testing.assert_allclose(-(xt - a * post_mean) / v, m.score_x(xt[:, None], None, t)[:, 0], rtol=1e-10)


def test_dsm_loss_prefers_the_exact_score():
    import torch
    from sggm.score_net import dsm_loss

    m = GaussianGraphModel(paradigm="features", graph=regular_graph(6, 2, seed=0), n_features=2)
    X0, A0 = m.sample_data(4096, seed=0)

    class Exact(torch.nn.Module):
        def __init__(self, err):
            super().__init__()
            self.sde_x, self.sde_a, self.err = m.sde_x, m.sde_a, err

        def forward(self, X, A, t, heads="xa"):
            out = [m.score_x(X[i].numpy(), None, float(t[i]), score_error=self.err) for i in range(len(t))]
            return torch.tensor(np.stack(out)), None

    g1, g2 = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    X0t, A0t = torch.tensor(X0), torch.tensor(A0)
    good = dsm_loss(Exact(0.0), X0t, A0t, generate="X", T=4.0, t_min=1e-2, generator=g1)
    bad = dsm_loss(Exact(0.5), X0t, A0t, generate="X", T=4.0, t_min=1e-2, generator=g2)
    assert float(good) < float(bad)


# ------------------------------------------------------------------------------------------------ KL
def test_gaussian_kl_properties_and_monte_carlo():
    rng = np.random.default_rng(0)
    b = rng.standard_normal((4, 4))
    s0 = b @ b.T + np.eye(4)
    c = rng.standard_normal((4, 4))
    s1 = c @ c.T + 0.5 * np.eye(4)
    m0, m1 = rng.standard_normal(4), rng.standard_normal(4)
    assert gaussian_kl(m0, s0, m0, s0) == pytest.approx(0.0, abs=1e-12)
    kl = gaussian_kl(m0, s0, m1, s1)
    assert kl > 0 and gaussian_kl(m1, s1, m0, s0) > 0 and kl != pytest.approx(gaussian_kl(m1, s1, m0, s0))
    from scipy.stats import multivariate_normal as mvn

    x = rng.multivariate_normal(m0, s0, size=200_000)
    mc = np.mean(mvn(m0, s0).logpdf(x) - mvn(m1, s1).logpdf(x))
    assert mc == pytest.approx(kl, rel=0.03)
    # additive over independent blocks (i.i.d. feature columns)
    big0 = np.kron(np.eye(3), s0)
    big1 = np.kron(np.eye(3), s1)
    assert gaussian_kl(np.tile(m0, 3), big0, np.tile(m1, 3), big1) == pytest.approx(3 * kl, rel=1e-10)
    # diagonal path = dense path
    d0, d1 = np.diag(s0), np.diag(s1)
    assert gaussian_kl(m0, d0, m1, d1) == pytest.approx(gaussian_kl(m0, np.diag(d0), m1, np.diag(d1)), rel=1e-12)


def test_kl_refuses_non_positive_definite_covariance():
    with pytest.raises(SggmError, match="positive-definite"):
        gaussian_kl(None, np.array([[1.0, 2.0], [2.0, 1.0]]), None, np.eye(2))
    with pytest.raises(SggmError, match="positive-definite"):
        gaussian_kl(None, np.array([1.0, -1.0]), None, np.ones(2))


# ------------------------------------------------------------------------------------------------ sampler law
def test_exact_score_kl_decreases_in_n_steps_and_vanishes():
    m = GaussianGraphModel(paradigm="features", graph=powerlaw_graph(30, 2, seed=0), n_features=5)
    kls = [m.sampler_law(n_steps=N, T=6.0, t_min=1e-5).kl for N in (25, 50, 100, 200, 400, 800)]
    assert all(b < a for a, b in zip(kls, kls[1:]))
    assert np.log(kls[-2] / kls[-1]) / np.log(2) == pytest.approx(2.0, abs=0.2)  # KL ∝ 1/N²
    long = m.sampler_law(n_steps=20_000, T=14.0).kl_per_entry
    assert long < 1e-4
    # what is left is of the order of the early-stopping floor KL(p_{t_min} ‖ p_0)
    assert m.early_stopping_kl(1e-3) < long < 3 * m.early_stopping_kl(1e-3)
    # negative control: a perturbed score does not vanish with N
    assert m.sampler_law(n_steps=20_000, T=14.0, score_error=0.2).kl_per_entry > 100 * long


def test_eigenbasis_recursion_equals_dense_recursion():
    for family in ("regular", "powerlaw"):
        g = regular_graph(24, 4, seed=1) if family == "regular" else powerlaw_graph(24, 2, seed=1)
        for kw in ({}, {"score_error": 0.1}, {"exact_prior": True}):
            m = GaussianGraphModel(paradigm="features", graph=g, n_features=3, laplacian="normalized")
            e = m.sampler_law(n_steps=60, T=5.0, method="eigen", **kw)
            d = m.sampler_law(n_steps=60, T=5.0, method="dense", **kw)
            np.testing.assert_allclose(e.cov, d.cov, atol=1e-10, rtol=0)
            assert e.kl == pytest.approx(d.kl, abs=1e-10)
    s = GaussianGraphModel(paradigm="structure", graph=regular_graph(6, 2, seed=0), n_features=2)
    e, d = s.sampler_law(n_steps=30, T=4.0, method="eigen"), s.sampler_law(n_steps=30, T=4.0, method="dense")
    np.testing.assert_allclose(e.mean, d.mean, atol=1e-10)
    assert e.kl == pytest.approx(d.kl, abs=1e-10)


def test_recursion_equals_empirical_covariance_of_simulated_chains():
    m = GaussianGraphModel(paradigm="features", graph=powerlaw_graph(6, 2, seed=0), n_features=4)
    law = m.sampler_law(n_steps=30, T=3.0, score_error=0.1)
    rng = np.random.default_rng(0)
    XT = rng.standard_normal((20_000, 6, 4))
    X, _ = sample(lambda X, A, t: m.score_x(X, A, t, score_error=0.1), None, XT, m.adjacency, n_steps=30, T=3.0,
                  sde_x=m.sde_x, seed=1)
    cols = np.swapaxes(X, 1, 2).reshape(-1, 6)
    emp = np.cov(cols, rowvar=False)
    assert np.abs(emp - law.cov).max() < 0.03
    # negative control: the exact-score law differs from the perturbed chains by more than the MC error
    assert np.abs(emp - m.sampler_law(n_steps=30, T=3.0).cov).max() > 0.05


def test_structure_and_joint_laws_match_monte_carlo_means_and_covariances():
    m = GaussianGraphModel(paradigm="joint", graph=regular_graph(4, 2, seed=0), n_features=2, coupling=1.0)
    law = m.sampler_law(n_steps=40, T=1.0)
    rng = np.random.default_rng(0)
    B = 20_000
    XT = rng.standard_normal((B, 4, 2))
    z = np.triu(rng.standard_normal((B, 4, 4)), 1) * np.sqrt(m.sde_a.prior_var(1.0))
    X, A = sample(m.score_x, m.score_a, XT, z + np.swapaxes(z, 1, 2), n_steps=40, T=1.0, sde_x=m.sde_x,
                  sde_a=m.sde_a, seed=2)
    y = np.concatenate([X.reshape(B, -1), upper(A)], axis=1)
    emp = np.cov(y, rowvar=False)
    assert np.abs(emp - law.cov).max() < 0.05 * np.abs(law.cov).max()


def test_joint_without_coupling_splits_into_the_two_conditional_paradigms():
    g = regular_graph(6, 2, seed=0)
    kw = dict(n_steps=40, T=1.0)
    m = GaussianGraphModel(paradigm="joint", graph=g, n_features=2, coupling=0.0)
    j, x, a = m.sampler_law(**kw).kl, m.sampler_law(generate="X", **kw).kl, m.sampler_law(generate="A", **kw).kl
    assert j == pytest.approx(x + a, rel=1e-10)
    mc = GaussianGraphModel(paradigm="joint", graph=g, n_features=2, coupling=1.5)
    jc = mc.sampler_law(**kw).kl
    assert abs(jc - mc.sampler_law(generate="X", **kw).kl - mc.sampler_law(generate="A", **kw).kl) > 1e-6


def test_propagate_diagonal_with_exact_prior_and_fine_steps_recovers_the_data():
    lam = np.array([0.3, 1.0, 2.0])
    mean = np.array([1.0, -0.5, 0.0])
    m, v = propagate_diagonal(mean=mean, var=lam, sde=VP(1, 1), n_steps=20_000, T=3.0, t_min=1e-4,
                              exact_prior=True)
    np.testing.assert_allclose(m, mean, atol=2e-3)
    np.testing.assert_allclose(v, lam, rtol=2e-3)
    md, cd = propagate_dense(mean=mean, cov=np.diag(lam), groups=[(np.arange(3), VP(1, 1))],
                             generated=np.ones(3, bool), n_steps=50, T=3.0, exact_prior=True)
    m2, v2 = propagate_diagonal(mean=mean, var=lam, sde=VP(1, 1), n_steps=50, T=3.0, exact_prior=True)
    np.testing.assert_allclose(md, m2, atol=1e-12)
    np.testing.assert_allclose(np.diag(cd), v2, atol=1e-12)


# ------------------------------------------------------------------------------------------------ learned score
def _equivariance_gaps(net, n=7, seed=0):
    """max |s(PX, PAPᵀ) - (P s_X, P s_A Pᵀ)| for the X and the A head, float64."""
    import torch

    torch.manual_seed(seed)
    X = torch.randn(2, n, 3, dtype=torch.float64)
    A = torch.tensor(np.stack([powerlaw_graph(n, 2, seed=s) for s in (0, 1)]))
    t = torch.tensor([0.3, 0.8], dtype=torch.float64)
    P = torch.eye(n, dtype=torch.float64)[torch.randperm(n)]
    with torch.no_grad():
        sx, sa = net(X, A, t)
        psx, psa = net(P @ X, P @ A @ P.T, t)
    return float((psx - P @ sx).abs().max()), float((psa - P @ sa @ P.T).abs().max()), (X, A, t, P, sx, sa)


def test_score_network_is_permutation_equivariant_and_symmetric():
    import torch
    from sggm.score_net import ScoreNetwork

    torch.manual_seed(0)
    net = ScoreNetwork(n_features=3, hidden=8, depth=2).double()
    gx, ga, (X, A, t, P, sx, sa) = _equivariance_gaps(net)
    assert gx < 1e-12 and ga < 1e-12
    torch.testing.assert_close(sa, sa.transpose(-1, -2))
    assert torch.all(torch.diagonal(sa, dim1=-2, dim2=-1) == 0)
    # negative control 1: permuting X alone (graph left in place) changes the output
    assert (net(P @ X, A, t)[0] - P @ sx).abs().max() > 1e-6

    # negative control 2: a node-index embedding (what a non-equivariant score model does) breaks the identity
    class Positional(ScoreNetwork):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.pos = torch.nn.Parameter(torch.randn(7, 3))

        def forward(self, X, A, t, *, heads="xa"):
            return super().forward(X + self.pos.to(X.dtype), A, t, heads=heads)

    torch.manual_seed(0)
    bad = Positional(n_features=3, hidden=8, depth=2).double()
    bx, ba, _ = _equivariance_gaps(bad)
    assert bx > 1e-3 and ba > 1e-3


def test_gcn_layers_are_pyg_dense_gcn_conv_with_the_gcn_equation():
    import torch
    from sggm.score_net import ScoreNetwork
    from torch_geometric.nn import DenseGCNConv

    net = ScoreNetwork(n_features=2, hidden=5, depth=2).double()
    assert all(type(c) is DenseGCNConv for c in net.convs)
    conv = net.convs[0]
    torch.nn.init.normal_(conv.bias)
    torch.manual_seed(1)
    h = torch.randn(3, 6, 5, dtype=torch.float64)
    z = torch.triu(torch.randn(3, 6, 6, dtype=torch.float64), 1)
    a = z + z.transpose(-1, -2)  # a noisy, continuous A_t: signed weights, zero diagonal
    a_hat = a + torch.eye(6, dtype=torch.float64)
    dinv = a_hat.sum(-1).clamp(min=1.0).rsqrt()
    ref = (dinv[..., :, None] * a_hat * dinv[..., None, :]) @ (h @ conv.lin.weight.T) + conv.bias
    torch.testing.assert_close(conv(h, a), ref, rtol=1e-12, atol=1e-12)
    # negative control: without the self-loops the equation gives something else
    d0 = a.sum(-1).clamp(min=1.0).rsqrt()
    no_loop = (d0[..., :, None] * a * d0[..., None, :]) @ (h @ conv.lin.weight.T) + conv.bias
    assert (conv(h, a) - no_loop).abs().max() > 1e-3
    # the parameter names and shapes of the checkpoints
    names = {k: tuple(v.shape) for k, v in net.state_dict().items() if k.startswith("convs.0")}
    assert names == {"convs.0.lin.weight": (5, 5), "convs.0.bias": (5,)}


def test_training_reduces_the_dsm_loss_and_is_deterministic():
    import torch
    from sggm.score_net import ScoreNetwork, train_score

    m = GaussianGraphModel(paradigm="features", graph=regular_graph(8, 2, seed=0), n_features=2)
    X0, A0 = m.sample_data(256, seed=0)

    def run():
        torch.manual_seed(0)
        net = ScoreNetwork(n_features=2, hidden=16, depth=1)
        return net, train_score(net, X0, A0, generate="X", steps=60, batch_size=32, T=4.0, seed=0)

    net1, l1 = run()
    _, l2 = run()
    assert l1 == l2
    assert np.mean(l1[-10:]) < 0.7 * np.mean(l1[:10])
    torch.manual_seed(0)
    before = ScoreNetwork(n_features=2, hidden=16, depth=1)
    # the held-out DSM loss (the validation score of the learning-rate choice) is deterministic and falls too
    from sggm.score_net import validation_loss

    Xv, Av = m.sample_data(128, seed=1)
    v1 = validation_loss(net1, Xv, Av, generate="X", T=4.0, seed=3)
    assert v1 == validation_loss(net1, Xv, Av, generate="X", T=4.0, seed=3)
    assert v1 < 0.8 * validation_loss(before, Xv, Av, generate="X", T=4.0, seed=3)
    changed = {name: not torch.equal(p, q) for (name, p), q in zip(before.named_parameters(), net1.parameters())}
    # every parameter of the X score changed; the A head is not used when only X is generated
    assert all(v for k, v in changed.items() if not k.startswith("out_a")), changed
    assert not any(v for k, v in changed.items() if k.startswith("out_a"))


def test_sample_is_deterministic_and_keeps_the_fixed_component():
    m = GaussianGraphModel(paradigm="features", graph=regular_graph(6, 2, seed=0), n_features=2)
    XT = np.random.default_rng(0).standard_normal((3, 6, 2))
    X1, A1 = sample(m.score_x, None, XT, m.adjacency, n_steps=10, T=2.0, seed=5)
    X2, _ = sample(m.score_x, None, XT, m.adjacency, n_steps=10, T=2.0, seed=5)
    X3, _ = sample(m.score_x, None, XT, m.adjacency, n_steps=10, T=2.0, seed=6)
    assert np.array_equal(X1, X2) and not np.array_equal(X1, X3)
    assert np.array_equal(A1, np.broadcast_to(m.adjacency, A1.shape))


def test_mmd_is_zero_for_identical_sets_and_separates_families():
    from sggm.metrics import degree_mmd, spectrum_mmd

    reg = np.stack([regular_graph(16, 4, seed=s) for s in range(64)])
    pl = np.stack([powerlaw_graph(16, 2, seed=s) for s in range(64)])
    assert degree_mmd(reg, reg) == pytest.approx(0.0, abs=1e-12)
    assert degree_mmd(pl[:32], reg[32:]) > 0.1 > degree_mmd(reg[:32], reg[32:])
    assert spectrum_mmd(pl[:32], reg[32:]) > 1.5 * spectrum_mmd(reg[:32], reg[32:])


# ------------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("bad, match", [
    (lambda: as_adjacency(np.ones((3, 4))), "square"),
    (lambda: as_adjacency(np.array([[0, 1.0], [0, 0]])), "symmetric"),
    (lambda: as_adjacency(np.array([[0, np.nan], [np.nan, 0]])), "NaN"),
    (lambda: GaussianGraphModel(paradigm="structure", graph=regular_graph(6, 2), features=np.ones((5, 2))), "rows"),
    (lambda: GaussianGraphModel(paradigm="structure", graph=regular_graph(6, 2),
                                features=np.full((6, 2), np.inf)), "NaN or inf"),
    (lambda: GaussianGraphModel(paradigm="features", graph=regular_graph(6, 2)).sampler_law(n_steps=10, T=0.0), "T"),
    (lambda: GaussianGraphModel(paradigm="features", graph=regular_graph(6, 2)).sampler_law(n_steps=0, T=1.0),
     "n_steps"),
    (lambda: GaussianGraphModel(paradigm="features", graph=regular_graph(6, 2)).sampler_law(n_steps=5, T=1.0,
                                                                                           t_min=1.0), "t_min"),
    (lambda: GaussianGraphModel(paradigm="features", graph=regular_graph(6, 2)).sampler_law(n_steps=5, T=1.0,
                                                                                           t_min=0.0), "t_min"),
    (lambda: VP(2.0, 1.0), "beta_max"),
    (lambda: VP(-1.0, 1.0), ">= 0"),
    (lambda: VE(1.0, 0.5), "sigma_max"),
    (lambda: regular_graph(5, 3), "even"),
    (lambda: regular_graph(4, 4), "d must be < n"),
    (lambda: powerlaw_graph(3, 3), "m must be < n"),
    (lambda: GaussianGraphModel(paradigm="nope", graph=regular_graph(6, 2)), "paradigm"),
    (lambda: GaussianGraphModel(paradigm="features", graph=regular_graph(6, 2), alpha=-1.0), "alpha"),
    (lambda: sample(None, None, np.zeros((3, 2)), np.zeros((3, 3)), n_steps=2, T=1.0), "score"),
    (lambda: sample(lambda *a: 0, None, np.zeros((4, 2)), np.zeros((3, 3)), n_steps=2, T=1.0), "rows"),
])
def test_bad_input_is_refused_with_a_clear_message(bad, match):
    with pytest.raises(SggmError, match=match):
        bad()


def test_spectrum_only_law_equals_the_model_and_the_ring_lattice_spectrum_is_exact():
    import networkx as nx
    from sggm.gaussian import features_law_from_spectrum
    from sggm.graphs import ring_lattice_spectrum

    n, d = 30, 4
    ring = nx.to_numpy_array(nx.circulant_graph(n, range(1, d // 2 + 1)))
    np.testing.assert_allclose(ring_lattice_spectrum(n, d), np.linalg.eigvalsh(laplacian(ring)), atol=1e-10)
    kw = dict(n_steps=40, T=4.0, t_min=1e-3, score_error=0.05)
    m = GaussianGraphModel(paradigm="features", graph=ring, alpha=1.5, n_features=7)
    law = features_law_from_spectrum(ring_lattice_spectrum(n, d), alpha=1.5, n_features=7, **kw)
    assert law.kl == pytest.approx(m.sampler_law(**kw).kl, rel=1e-10)
    assert law.kl_reverse == pytest.approx(m.sampler_law(**kw).kl_reverse, rel=1e-10)
    # negative control: a 6-regular lattice's spectrum gives another KL
    other = features_law_from_spectrum(ring_lattice_spectrum(n, 6), alpha=1.5, n_features=7, **kw)
    assert abs(other.kl - law.kl) > 1e-3 * law.kl
    with pytest.raises(SggmError, match="even"):
        ring_lattice_spectrum(10, 3)
    with pytest.raises(SggmError, match=">= 0"):
        features_law_from_spectrum(np.array([-1.0, 0.0]), n_steps=5, T=1.0)


# ------------------------------------------------------------------------------------------------ reproduce helpers
def test_chains_for_tolerance_solves_the_bias_plus_variance_law():
    from sggm.kl import chains_for_tolerance

    M = np.array([125.0, 250.0, 500.0, 1000.0])
    b, c = 8.0, 0.4  # rms² = b²/M² + c²/M
    rms = np.sqrt(b**2 / M**2 + c**2 / M)
    m_star = chains_for_tolerance(M, rms, 0.01)
    assert b**2 / m_star**2 + c**2 / m_star == pytest.approx(1e-4, rel=1e-8)  # extrapolated beyond the ladder
    # pure 1/√M noise: M* = c² / tol²
    assert chains_for_tolerance(M, c / np.sqrt(M), 0.01) == pytest.approx(c**2 / 1e-4, rel=1e-8)
    # negative control: ignoring the bias (reading the largest ladder point as pure 1/√M noise) gives another M
    assert abs(rms[-1] ** 2 * M[-1] / 1e-4 - m_star) > 0.05 * m_star
    with pytest.raises(SggmError, match="tolerance"):
        chains_for_tolerance(M, rms, 0.0)
    with pytest.raises(SggmError, match="same length"):
        chains_for_tolerance(M[:1], rms[:1], 0.01)


def test_reproduce_monte_carlo_kl_error_is_small_and_shrinks_with_chains():
    from sggm.config import Config
    from sggm.reproduce import _mc_kl_rel_err, _model, _run_mc

    cfg = Config(n_features=10, n_steps=40)
    m = _model(cfg, "powerlaw", 8, 0)
    law = m.sampler_law(n_steps=cfg.n_steps, T=cfg.T, t_min=cfg.t_min)
    X, secs = _run_mc(m, cfg, 2000, 1)
    assert secs > 0 and X.shape == (2000, 8, 10)
    err = [abs(_mc_kl_rel_err(m, law, X[:k])) for k in (2000,)]
    assert err[0] < 0.05
    # negative control: a Monte Carlo of another sampler (N = 10 steps) misses the N = 40 law by far more
    X10, _ = _run_mc(m, Config(n_features=10, n_steps=10), 2000, 1)
    assert abs(_mc_kl_rel_err(m, law, X10)) > 5 * err[0]


def test_exact_feature_score_module_equals_the_model_score_per_row_time():
    import torch
    from sggm.reproduce import _exact_feature_score
    from sggm.score_net import validation_loss

    m = GaussianGraphModel(paradigm="features", graph=powerlaw_graph(9, 2, seed=1), n_features=3, alpha=1.3)
    X0, A0 = m.sample_data(256, seed=0)
    net = _exact_feature_score(m)
    t = torch.tensor([0.01, 0.5, 2.0, 7.0], dtype=torch.float64)
    X = torch.tensor(np.random.default_rng(0).standard_normal((4, 9, 3)))
    sx, sa = net(X, None, t)
    assert sa is None
    for i in range(4):
        np.testing.assert_allclose(sx[i].numpy(), m.score_x(X[i].numpy(), None, float(t[i])), rtol=1e-10)
    # its held-out DSM loss is the floor: a perturbed score scores worse on the same draws (negative control)
    exact = validation_loss(net, X0, A0, generate="X", T=4.0, t_min=1e-3, seed=0)

    class Perturbed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.sde_x, self.sde_a = m.sde_x, m.sde_a

        def forward(self, X, A, t, heads="x"):
            return net(X, A, t)[0] * 1.2, None

    assert exact < validation_loss(Perturbed(), X0, A0, generate="X", T=4.0, t_min=1e-3, seed=0)


def test_adjacency_power_channels_keep_equivariance_and_see_common_neighbours():
    import torch
    from sggm.score_net import ScoreNetwork

    torch.manual_seed(0)
    net = ScoreNetwork(n_features=3, hidden=8, depth=2, adj_powers=3).double()
    gx, ga, (X, A, t, P, sx, sa) = _equivariance_gaps(net)
    assert gx < 1e-12 and ga < 1e-12
    torch.testing.assert_close(sa, sa.transpose(-1, -2))
    assert net.out_a[0].in_features == 2 * 8 + 3 + 16 and net.config["adj_powers"] == 3
