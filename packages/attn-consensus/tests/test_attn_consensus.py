"""Tests of the mathematics of the attention flow and the diagnostics (float64); each has a negative control."""

import numpy as np
import pytest
import torch
from attn_consensus.diagnostics import consensus_gap, decay_rate, first_token_drift, geodesic_diameter
from attn_consensus.errors import AttnConsensusError
from attn_consensus.flow import AttentionFlow, integrate, reference_solution
from attn_consensus.scenarios import build_scenario, random_matrix, random_v, sample_tokens


def _two_tokens(theta0: float) -> torch.Tensor:
    return torch.tensor([[1.0, 0.0, 0.0], [np.cos(theta0), np.sin(theta0), 0.0]], dtype=torch.float64)


def _angle(x: torch.Tensor) -> np.ndarray:
    """Angle between token 1 and token 2 along a trajectory ``[S, 2, d]``."""
    return torch.arccos((x[:, 0] * x[:, 1]).sum(-1).clamp(-1, 1)).numpy()


def test_two_token_closed_form_rk4_to_1e6():
    """Causal, V = I, Q = K = 0: a = 1/2, θ' = −sin(θ)/2, tan(θ/2) = tan(θ0/2) e^{−t/2}."""
    th0 = 2.8
    flow = AttentionFlow(dim=3, mask="causal", q=np.zeros((3, 3)), k=np.zeros((3, 3)))
    tr = integrate(flow, _two_tokens(th0), dt=0.02, steps=500)
    exact = 2 * np.arctan(np.tan(th0 / 2) * np.exp(-tr.t / 2))
    assert np.abs(_angle(tr.x) - exact).max() < 1e-6
    # negative controls: the wrong rate e^{-t}, and Euler at the same step, miss the closed form by far more
    assert np.abs(_angle(tr.x) - 2 * np.arctan(np.tan(th0 / 2) * np.exp(-tr.t))).max() > 0.1
    eu = integrate(flow, _two_tokens(th0), dt=0.02, steps=500, method="euler")
    assert np.abs(_angle(eu.x) - exact).max() > 1e-4


def test_causal_identity_v_keeps_the_leader_bit_exactly_fixed():
    x0 = sample_tokens(12, 5, seed=1)
    q = random_matrix(5, scale=3.0, batch=(4, 1), seed=2)  # 4 layers: time-varying Q(t), K(t)
    k = random_matrix(5, scale=3.0, batch=(4, 1), seed=3)
    tr = integrate(AttentionFlow(dim=5, mask="causal", q=q, k=k, layer_time=0.5), x0, dt=0.05, steps=200)
    assert first_token_drift(tr.x) == 0.0
    assert (tr.x[:, 1:] != tr.x[:1, 1:]).any()  # the others move
    # negative controls: a random V moves the leader; so does full attention
    tr_v = integrate(AttentionFlow(dim=5, mask="causal", q=q, k=k, v=random_v(5, kind="random", seed=4)), x0,
                     dt=0.05, steps=20)
    assert first_token_drift(tr_v.x) > 1e-3
    tr_f = integrate(AttentionFlow(dim=5, mask="full", q=q, k=k), x0, dt=0.05, steps=20)
    assert first_token_drift(tr_f.x) > 1e-3


@pytest.mark.parametrize("scale", [0.5, 2.0, 5.0])
def test_two_token_causal_angle_is_non_increasing_for_any_qk(scale):
    for seed in range(2):
        q, k = random_matrix(3, scale=scale, seed=seed), random_matrix(3, scale=scale, seed=seed + 100)
        tr = integrate(AttentionFlow(dim=3, mask="causal", q=q, k=k), _two_tokens(2.5), dt=0.05, steps=100)
        assert np.diff(_angle(tr.x)).max() <= 1e-12
    # negative control: a negative-definite V pushes token 2 away from token 1
    neg = AttentionFlow(dim=3, mask="causal", q=q, k=k, v=-np.eye(3))
    assert np.diff(_angle(integrate(neg, _two_tokens(1.0), dt=0.02, steps=100).x)).min() > 0


def test_full_identity_v_hemisphere_min_projection_is_non_decreasing():
    d, n = 4, 10
    g = torch.Generator().manual_seed(0)
    w = torch.randn(d, generator=g, dtype=torch.float64)
    w /= w.norm()
    x0 = torch.randn(n, d, generator=g, dtype=torch.float64)
    x0 = x0 * torch.sign(x0 @ w)[:, None]
    for seed in range(2):
        q, k = random_matrix(d, scale=2.0, seed=seed), random_matrix(d, scale=2.0, seed=seed + 7)
        tr = integrate(AttentionFlow(dim=d, mask="full", q=q, k=k), x0, dt=0.04, steps=200)
        m = (tr.x @ w).min(dim=-1).values.numpy()
        assert m[0] > 0 and np.diff(m).min() >= -1e-10
        assert m[-1] > m[0] + 0.05  # and it actually rises
    neg = integrate(AttentionFlow(dim=d, mask="full", q=q, k=k, v=-np.eye(d)), x0, dt=0.02, steps=100)
    assert np.diff((neg.x @ w).min(dim=-1).values.numpy()).min() < -1e-4  # negative control


@pytest.mark.parametrize("method", ["rk4", "euler"])
def test_unit_norms_after_every_step(method):
    flow, x0, _ = build_scenario("random-v", n=8, d=6, scales=(2.0,), runs=2, seed=0)
    tr = integrate(flow, x0 * 3.0, dt=0.05, steps=50, method=method)
    assert (tr.x.norm(dim=-1) - 1).abs().max() < 1e-14
    # negative control: one unretracted Euler step leaves the sphere (the tangent step has second-order drift)
    y = tr.x[0] + 0.05 * flow.vector_field(tr.x[0])
    assert (y.norm(dim=-1) - 1).abs().max() > 1e-6


def test_equal_tokens_are_an_equilibrium():
    x = torch.tensor([[0.6, 0.8, 0.0]] * 5, dtype=torch.float64)
    q, k = random_matrix(3, scale=2.0, seed=0), random_matrix(3, scale=2.0, seed=1)
    for mask in ("causal", "full"):
        assert flow_abs_max(AttentionFlow(dim=3, mask=mask, q=q, k=k), x) < 1e-15
    assert flow_abs_max(AttentionFlow(dim=3, mask="full", q=q, k=k, v=random_v(3, kind="random", seed=2)), x) > 1e-3


def flow_abs_max(flow: AttentionFlow, x: torch.Tensor) -> float:
    return float(flow.vector_field(x).abs().max())


def test_full_attention_is_permutation_equivariant_and_causal_is_not():
    x = sample_tokens(7, 4, seed=3)
    q, k = random_matrix(4, scale=2.0, seed=0), random_matrix(4, scale=2.0, seed=1)
    perm = torch.randperm(7, generator=torch.Generator().manual_seed(0))
    full = AttentionFlow(dim=4, mask="full", q=q, k=k, v=random_v(4, kind="random", seed=5))
    torch.testing.assert_close(full.vector_field(x[perm]), full.vector_field(x)[perm], rtol=0, atol=1e-13)
    causal = AttentionFlow(dim=4, mask="causal", q=q, k=k)
    assert (causal.vector_field(x[perm]) - causal.vector_field(x)[perm]).abs().max() > 1e-3


def test_rotation_equivariance_for_identity_weights():
    x0 = sample_tokens(6, 4, seed=0)
    r, _ = torch.linalg.qr(torch.randn(4, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64))
    for mask in ("causal", "full"):
        flow = AttentionFlow(dim=4, mask=mask)  # Q = K = V = I
        a = integrate(flow, x0 @ r.T, dt=0.05, steps=40).final
        b = integrate(flow, x0, dt=0.05, steps=40).final @ r.T
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
    q = random_matrix(4, scale=2.0, seed=9)  # negative control: a generic Q does not commute with R
    flow = AttentionFlow(dim=4, mask="full", q=q, k=q)
    a = integrate(flow, x0 @ r.T, dt=0.05, steps=40).final
    b = integrate(flow, x0, dt=0.05, steps=40).final @ r.T
    assert (a - b).abs().max() > 1e-3


def test_gap_is_zero_iff_positive_multiples_and_invariant_to_rescaling():
    g = torch.Generator().manual_seed(0)
    h1 = torch.randn(5, dtype=torch.float64, generator=g)
    pos = torch.stack([h1 * c for c in (1.0, 2.0, 0.3, 7.0)])
    assert float(consensus_gap(pos)) < 1e-15
    neg = pos.clone()
    neg[2] *= -1  # a negative multiple is not consensus (signed), but the absolute variant misses it
    assert float(consensus_gap(neg)) == pytest.approx(0.5, abs=1e-12)
    assert float(consensus_gap(neg, absolute=True)) < 1e-15
    h = torch.randn(3, 9, 5, dtype=torch.float64, generator=g)
    scale = torch.rand(3, 9, 1, dtype=torch.float64, generator=g) * 10 + 0.01
    torch.testing.assert_close(consensus_gap(h * scale), consensus_gap(h), rtol=0, atol=1e-14)
    assert (consensus_gap(h) > 0.1).all()
    # numpy in, numpy out; the diameter of a known configuration
    x = np.array([[1.0, 0.0], [0.0, 1.0], [np.cos(0.3), np.sin(0.3)]])
    assert isinstance(consensus_gap(x), np.ndarray)
    assert float(geodesic_diameter(x)) == pytest.approx(np.pi / 2, abs=1e-12)
    assert float(geodesic_diameter(np.array([[1.0, 1e-9], [1.0, 0.0]]))) == pytest.approx(1e-9, rel=1e-6)


def test_rk4_agrees_with_solve_ivp_and_euler_does_not():
    flow, x0, _ = build_scenario("hemisphere", n=6, d=4, scales=(2.0,), seed=0)
    flow2 = AttentionFlow(dim=4, mask="full", q=flow.q[0, 0, 0], k=flow.k[0, 0, 0])
    x0 = x0[0]
    tr = integrate(flow2, x0, dt=0.02, steps=100)
    ref = reference_solution(flow2, x0, t_eval=tr.t[::25])
    assert (tr.x[::25] - ref.x).abs().max() < 1e-7
    eu = integrate(flow2, x0, dt=0.02, steps=100, method="euler")
    assert (eu.x[::25] - ref.x).abs().max() > 1e-5


def test_batched_simulation_equals_one_by_one():
    flow, x0, _ = build_scenario("causal-tv", n=5, d=3, scales=(0.5, 2.0), runs=2, seed=1)
    batched = integrate(flow, x0, dt=0.05, steps=30).final
    for b in range(x0.shape[0]):
        one = AttentionFlow(dim=3, mask="causal", q=flow.q[b], k=flow.k[b], v=flow.v[b, :, 0])
        torch.testing.assert_close(integrate(one, x0[b], dt=0.05, steps=30).final, batched[b], rtol=0, atol=1e-13)


def test_multi_head_is_the_sum_over_heads():
    x = sample_tokens(6, 4, seed=0)
    q = random_matrix(4, scale=1.0, batch=(2,), seed=1)  # [H=2, d, d]
    k = random_matrix(4, scale=1.0, batch=(2,), seed=2)
    both = AttentionFlow(dim=4, mask="full", q=q, k=k).vector_field(x)
    parts = sum(AttentionFlow(dim=4, mask="full", q=q[h], k=k[h]).vector_field(x) for h in range(2))
    torch.testing.assert_close(both, parts, rtol=0, atol=1e-14)
    assert (both - AttentionFlow(dim=4, mask="full", q=q[0], k=k[0]).vector_field(x)).abs().max() > 1e-3


def test_consensus_under_the_theorems_assumptions():
    """Causal V = I: the gap falls below 1e-6; full V = I from a hemisphere: the diameter goes to 0."""
    for name in ("causal", "hemisphere"):
        flow, x0, _ = build_scenario(name, n=6, d=4, scales=(1.0,), runs=3, seed=0)
        tr = integrate(flow, x0, dt=0.1, steps=300, save_every=50)
        assert float(consensus_gap(tr.final).max()) < 1e-6
        assert float(geodesic_diameter(tr.final).max()) < 1e-3
    flow, x0, _ = build_scenario("negdef-v", n=8, d=4, scales=(1.0,), runs=3, seed=0)  # negative control
    assert float(geodesic_diameter(integrate(flow, x0, dt=0.05, steps=200).final).min()) > 1.0


def test_decay_rate_recovers_an_exponential():
    t = np.linspace(0, 20, 201)
    y = 3.0 * np.exp(-0.7 * t)
    y[y < 1e-7] = 1e-16  # a floor the fit must skip
    assert decay_rate(y, t, floor=1e-12) == pytest.approx(0.7, rel=1e-9)
    assert np.isnan(decay_rate(np.zeros(5), np.arange(5.0)))


def test_same_inputs_same_numbers():
    a = build_scenario("uniform", n=5, d=3, scales=(2.0,), runs=2, seed=4)
    b = build_scenario("uniform", n=5, d=3, scales=(2.0,), runs=2, seed=4)
    torch.testing.assert_close(integrate(a[0], a[1], dt=0.05, steps=20).final,
                               integrate(b[0], b[1], dt=0.05, steps=20).final, rtol=0, atol=0)
    c = build_scenario("uniform", n=5, d=3, scales=(2.0,), runs=2, seed=5)
    assert not torch.equal(a[1], c[1])


# ------------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("x0, needle", [
    (np.zeros((3, 3)), "zero-norm"),
    (np.array([[1.0, np.nan, 0.0]]), "finite"),
    (np.array([[np.inf, 1.0, 0.0]]), "finite"),
    (np.ones((0, 3)), "n >= 1"),
    (np.ones(3), "shape"),
])
def test_bad_tokens_refused(x0, needle):
    with pytest.raises(AttnConsensusError, match=needle):
        integrate(AttentionFlow(dim=3), x0, dt=0.1, steps=1)


@pytest.mark.parametrize("kwargs, needle", [
    (dict(dim=1), "dim"),
    (dict(dim=3, mask="bidirectional"), "mask"),
    (dict(dim=3, q=np.eye(3), k=np.eye(4)), "k"),
    (dict(dim=3, q=np.ones((2, 3)), k=np.ones((3, 3))), "same shape"),
    (dict(dim=3, v=np.ones((3, 2))), "v"),
    (dict(dim=3, v=np.ones((2, 3))), "d×d"),
    (dict(dim=3, q=np.ones((2, 3, 3)), k=np.ones((2, 3, 3)), v=np.ones((3, 3, 3))), "heads"),
    (dict(dim=3, layer_time=0.0), "layer_time"),
])
def test_bad_flow_refused(kwargs, needle):
    with pytest.raises(AttnConsensusError, match=needle):
        AttentionFlow(**kwargs)


@pytest.mark.parametrize("kwargs, needle", [
    (dict(dt=0.0, steps=1), "dt"), (dict(dt=-0.1, steps=1), "dt"), (dict(dt=float("nan"), steps=1), "dt"),
    (dict(dt=0.1, steps=0), "steps"), (dict(dt=0.1, steps=1, method="midpoint"), "method"),
])
def test_bad_integration_args_refused(kwargs, needle):
    with pytest.raises(AttnConsensusError, match=needle):
        integrate(AttentionFlow(dim=3), np.eye(3), **kwargs)


def test_wrong_token_dimension_refused():
    with pytest.raises(AttnConsensusError, match="dim"):
        integrate(AttentionFlow(dim=4), np.eye(3), dt=0.1, steps=1)
    with pytest.raises(AttnConsensusError, match="zero-norm"):
        consensus_gap(np.zeros((2, 3)))


def test_attention_logits_are_q_x_i_dot_k_x_j():
    """The fused form x_iᵀ (QᵀK) x_j equals the naive ⟨Q x_i, K x_j⟩ for non-symmetric Q, K (2 heads, d_k ≠ d)."""
    g = torch.Generator().manual_seed(3)
    q, k = torch.randn(2, 3, 5, generator=g, dtype=torch.float64), torch.randn(2, 3, 5, generator=g, dtype=torch.float64)
    x = sample_tokens(6, 5, seed=2)
    a = AttentionFlow(dim=5, mask="full", q=q, k=k, v=torch.eye(5).expand(2, 5, 5)).attention(x)  # [H, n, n]
    naive = torch.stack([torch.softmax(torch.stack([torch.stack([(q[h] @ x[i]) @ (k[h] @ x[j]) for j in range(6)])
                                                    for i in range(6)]), dim=-1) for h in range(2)])
    torch.testing.assert_close(a, naive, rtol=1e-12, atol=1e-14)
    # negative control: swapping the roles of Q and K (the transposed bilinear form) gives other weights
    swapped = AttentionFlow(dim=5, mask="full", q=k, k=q, v=torch.eye(5).expand(2, 5, 5)).attention(x)
    assert (swapped - naive).abs().max() > 1e-3


def test_cross_cluster_attention_sees_only_far_pairs():
    from attn_consensus.diagnostics import cross_cluster_attention

    h = torch.tensor([[1.0, 0.0], [1.0, 1e-3], [0.0, 1.0]], dtype=torch.float64)  # tokens 0, 1 close; 2 far
    a = torch.tensor([[[0.5, 0.4, 0.1], [0.3, 0.69, 0.01], [0.2, 0.2, 0.6]]], dtype=torch.float64)  # [H=1, n, n]
    assert float(cross_cluster_attention(a, h)) == pytest.approx(0.2)  # max over (0,2), (1,2), (2,0), (2,1)
    # negative control: a single cluster has no far pair, whatever the weights
    assert float(cross_cluster_attention(a, h[[0, 1, 1]])) == 0.0
