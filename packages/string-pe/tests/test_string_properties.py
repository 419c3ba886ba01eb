"""STRING properties of every encoding (float64): relative position, group law, orthogonality, generators."""

import pytest
import torch
from _string_pe_helpers import VARIANTS, build, relative_logits
from icml25.testing import assert_close64


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("coord_dim", [1, 2, 3])
def test_relative_position_property(f64, name, coord_dim):
    m = build(name, coord_dim=coord_dim)
    q, k = torch.randn(2, 2, 6, 8), torch.randn(2, 2, 6, 8)
    pos = torch.randn(2, 6, coord_dim) * 3
    lhs, rhs = relative_logits(m.encode, m.rotation_matrix, q, k, pos)
    assert_close64(lhs, rhs, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", VARIANTS)
def test_group_law_orthogonality_and_generators(f64, name):
    m = build(name, coord_dim=3)
    d = m.head_dim
    eye = torch.eye(d)
    a, b = torch.randn(1, 5, 3) * 2, torch.randn(1, 5, 3) * 2
    Ra, Rb, Rab = m.rotation_matrix(a), m.rotation_matrix(b), m.rotation_matrix(a + b)
    assert_close64(m.rotation_matrix(torch.zeros(1, 3, 3)), eye.expand(1, 2, 3, d, d), atol=1e-13)
    assert_close64(Ra @ Rb, Rab, atol=1e-12)
    assert_close64(m.rotation_matrix(-a), Ra.transpose(-1, -2), atol=1e-12)
    assert_close64(Ra.transpose(-1, -2) @ Ra, eye.expand_as(Ra), atol=1e-12)
    assert_close64(torch.linalg.det(Ra), torch.ones(Ra.shape[:-2]), atol=1e-12)
    z = torch.randn(1, 2, 5, d)
    assert_close64(m.encode(z, a).norm(dim=-1), z.norm(dim=-1), atol=1e-12)
    assert_close64(m.apply_string(z, a).norm(dim=-1), z.norm(dim=-1), atol=1e-12)
    # generators: skew, commuting, and R(r) = exp(Σ_k L_k r_k)
    L = m.generators().detach()  # (H, d_c, d, d)
    assert_close64(L, -L.transpose(-1, -2), atol=1e-14)
    for i in range(3):
        for j in range(3):
            assert_close64(L[:, i] @ L[:, j], L[:, j] @ L[:, i], atol=1e-12)
    gen = torch.einsum("bnc,hcij->bhnij", a, L).contiguous()
    assert_close64(torch.linalg.matrix_exp(gen), Ra, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", VARIANTS)
def test_encoding_is_per_token_and_permutation_equivariant(f64, name):
    m = build(name)
    q, k, pos = torch.randn(3, 2, 7, 8), torch.randn(3, 2, 7, 8), torch.randn(3, 7, 2)
    qe, ke = m(q, k, pos)
    perm = torch.randperm(7)
    qp, kp = m(q[:, :, perm], k[:, :, perm], pos[:, perm])
    assert_close64(qp, qe[:, :, perm], atol=1e-14)
    assert_close64(kp, ke[:, :, perm], atol=1e-14)
    # batch separability: encoding one sample alone gives the same as in the batch
    q1, _ = m(q[1:2], k[1:2], pos[1:2])
    assert_close64(q1, qe[1:2], atol=1e-14)
    # positions shared over the batch as (N, d_c)
    qs, _ = m(q, k, pos[0])
    qs0, _ = m(q[:1], k[:1], pos[:1])
    assert_close64(qs[:1], qs0, atol=1e-14)
    assert qe.shape == q.shape and ke.shape == k.shape


@pytest.mark.parametrize("name", VARIANTS)
def test_unrotated_prefix_tokens(f64, name):
    m = build(name)
    q, k, pos = torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8), torch.randn(2, 4, 2)
    qe, ke = m(q, k, pos, num_unrotated=1)
    assert torch.equal(qe[:, :, 0], q[:, :, 0]) and torch.equal(ke[:, :, 0], k[:, :, 0])
    qr, kr = m(q[:, :, 1:], k[:, :, 1:], pos)
    assert_close64(qe[:, :, 1:], qr, atol=0)
    assert_close64(ke[:, :, 1:], kr, atol=0)


def test_non_commuting_generators_violate_relative_property(f64):
    """Negative control (LieRE-like): the relative-property check is sensitive."""
    d = 8
    A, B = torch.randn(d, d), torch.randn(d, d)
    L1, L2 = A - A.T, B - B.T
    assert (L1 @ L2 - L2 @ L1).abs().max() > 1e-2

    def matrix(pos):  # (B, N, 2) -> (B, 1, N, d, d)
        gen = pos[..., 0, None, None] * L1 + pos[..., 1, None, None] * L2
        return torch.linalg.matrix_exp(gen).unsqueeze(1)

    def encode(z, pos):
        return torch.einsum("bhnij,bhnj->bhni", matrix(pos), z)

    q, k, pos = torch.randn(1, 1, 5, d), torch.randn(1, 1, 5, d), torch.randn(1, 5, 2)
    lhs, rhs = relative_logits(encode, matrix, q, k, pos)
    assert (lhs - rhs).abs().max() > 1e-2
    # and the same construction with commuting generators (L2 := 2 L1) satisfies it
    L2 = 2 * L1
    lhs, rhs = relative_logits(encode, matrix, q, k, pos)
    assert_close64(lhs, rhs, atol=1e-10)


@pytest.mark.parametrize("name", ["rope-mixed", "cayley", "circulant"])
def test_gradcheck_inputs_and_parameters(f64, name):
    """Gradients through the rotation, Cayley's linear solve and Circulant's FFT (double precision)."""
    m = build(name, head_dim=4, coord_dim=2, num_heads=1)
    q = torch.randn(1, 1, 3, 4, requires_grad=True)
    k = torch.randn(1, 1, 3, 4, requires_grad=True)
    pos = torch.randn(1, 3, 2, requires_grad=True)
    assert torch.autograd.gradcheck(lambda q, k, pos: m(q, k, pos), (q, k, pos))
    names = [n for n, _ in m.named_parameters()]
    assert names
    for name_p in names:
        p0 = dict(m.named_parameters())[name_p].detach().clone().requires_grad_(True)

        def f(x, name_p=name_p):
            return torch.func.functional_call(m, {name_p: x}, (q.detach(), k.detach(), pos.detach()), strict=False)

        assert torch.autograd.gradcheck(f, (p0,)), name_p
