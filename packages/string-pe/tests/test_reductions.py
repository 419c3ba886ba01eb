"""Reductions to known special cases (float64)."""

import math

import pytest
import torch
from icml25.testing import assert_close64
from string_pe import RoPEAxial, RoPEMixed
from string_pe.rope import axial_frequencies, mixed_init_frequencies, rope_generators


def rope_1d_reference(z, pos, base=10000.0):
    """Textbook 1D RoPE (Su et al.) on consecutive pairs, written with complex numbers: z (N, d), pos (N,)."""
    d = z.shape[-1]
    theta = base ** (-2 * torch.arange(d // 2, dtype=z.dtype) / d)  # θ_n = λ^{-2(n-1)/d}
    zc = torch.complex(z[:, 0::2], z[:, 1::2])
    rot = zc * torch.exp(1j * pos[:, None] * theta[None, :])
    return torch.stack([rot.real, rot.imag], dim=-1).flatten(-2)


def test_rope_mixed_with_zero_y_frequencies_is_1d_rope(f64):
    d = 8
    theta = 10000.0 ** (-2 * torch.arange(d // 2) / d)
    freqs = torch.stack([theta, torch.zeros(d // 2)], dim=-1)[None]  # (1, d/2, 2): f^y = 0
    m = RoPEMixed(head_dim=d, coord_dim=2, num_heads=1, freqs=freqs)
    z, pos = torch.randn(1, 1, 6, d), torch.randn(1, 6, 2) * 20
    ref = rope_1d_reference(z[0, 0], pos[0, :, 0])
    assert_close64(m.encode(z, pos)[0, 0], ref, atol=1e-12)


def test_rope_mixed_with_axis_aligned_frequencies_is_rope_axial(f64):
    ax = RoPEAxial(head_dim=16, coord_dim=2, num_heads=3)
    mixed = RoPEMixed(head_dim=16, coord_dim=2, num_heads=3,
                      freqs=axial_frequencies(head_dim=16, coord_dim=2, base=100.0).expand(3, -1, -1))
    q, k, pos = torch.randn(2, 3, 5, 16), torch.randn(2, 3, 5, 16), torch.randn(2, 5, 2) * 4
    qa, ka = ax(q, k, pos)
    qm, km = mixed(q, k, pos)
    assert torch.equal(qa, qm) and torch.equal(ka, km)
    # rope-vit axial: first d/4 blocks x only with 1/100^{4j/d}, then y only
    f = ax.freqs[0]
    j = torch.arange(4, dtype=torch.float64)
    assert_close64(f[:4, 0], 1 / 100 ** (4 * j / 16), atol=1e-15)
    assert torch.all(f[:4, 1] == 0) and torch.all(f[4:, 0] == 0)


def test_rope_mixed_init_matches_rope_vit_description(f64):
    g = torch.Generator().manual_seed(0)
    f = mixed_init_frequencies(head_dim=16, coord_dim=2, num_heads=2, base=10.0, generator=g)
    mags = 1 / 10 ** (4 * torch.arange(4, dtype=torch.float64) / 16)
    for h in range(2):
        a = math.atan2(f[h, 0, 1], f[h, 0, 0])
        first = mags[:, None] * torch.tensor([math.cos(a), math.sin(a)])
        second = mags[:, None] * torch.tensor([math.cos(a + math.pi / 2), math.sin(a + math.pi / 2)])
        assert_close64(f[h, :4], first, atol=1e-14)
        assert_close64(f[h, 4:], second, atol=1e-14)


@pytest.mark.parametrize("coord_dim", [2, 3])
def test_eq5_product_of_per_axis_ropes_equals_exp_of_summed_generators(f64, coord_dim):
    m = RoPEMixed(head_dim=8, coord_dim=coord_dim, num_heads=2)
    pos = torch.randn(1, 4, coord_dim) * 3
    L = rope_generators(m.freqs.detach())  # (H, d_c, d, d)
    prod = torch.eye(8).expand(1, 2, 4, 8, 8)
    for kx in range(coord_dim):  # Π_k RoPE([r]_k) with RoPE([r]_k) = exp(L_k r_k)
        prod = prod @ torch.linalg.matrix_exp(torch.einsum("bn,hij->bhnij", pos[..., kx], L[:, kx]).contiguous())
    assert_close64(m.rotation_matrix(pos), prod, atol=1e-12)
