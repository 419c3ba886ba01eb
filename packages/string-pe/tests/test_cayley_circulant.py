"""Cayley-STRING and Circulant-STRING specifics (float64)."""

import torch
from icml25.testing import assert_close64
from string_pe import Attention, CayleySTRING, CirculantSTRING, RoPEMixed
from string_pe.cayley import cayley_transform
from string_pe.circulant import circulant, real_fourier_basis
from string_pe.rope import rope_generators


def test_cayley_transform_properties(f64):
    A = torch.randn(3, 8, 8)
    S = A - A.transpose(-1, -2)
    P = cayley_transform(S)
    eye = torch.eye(8)
    assert_close64(P.transpose(-1, -2) @ P, eye.expand_as(P), atol=1e-12)
    assert_close64(torch.linalg.det(P), torch.ones(3), atol=1e-12)
    assert_close64(cayley_transform(-S), P.transpose(-1, -2), atol=1e-12)
    assert_close64((eye - S) @ torch.linalg.inv(eye + S), torch.linalg.inv(eye + S) @ (eye - S), atol=1e-12)
    assert_close64(P, (eye - S) @ torch.linalg.inv(eye + S), atol=1e-12)
    # I + S invertible even for a large skew S: eigenvalues 1 + iλ have modulus >= 1
    assert torch.linalg.svdvals(eye + 100 * S).min() >= 1 - 1e-12


def test_cayley_with_zero_skew_equals_rope_mixed_exactly(f64):
    g = torch.Generator().manual_seed(3)
    cay = CayleySTRING(head_dim=16, coord_dim=2, num_heads=4, generator=g)  # s_init_std=0: S = 0
    mixed = RoPEMixed(head_dim=16, coord_dim=2, num_heads=4, freqs=cay.freqs.detach())
    q, k, pos = torch.randn(2, 4, 9, 16), torch.randn(2, 4, 9, 16), torch.randn(2, 9, 2) * 5
    qc, kc = cay(q, k, pos)
    qm, km = mixed(q, k, pos)
    assert torch.equal(qc, qm) and torch.equal(kc, km)
    # the same seed gives the same RoPE-Mixed init as RoPEMixed's own init
    mixed2 = RoPEMixed(head_dim=16, coord_dim=2, num_heads=4, generator=torch.Generator().manual_seed(3))
    assert torch.equal(mixed2.freqs, cay.freqs)
    # and a non-zero S changes the encoding
    cay.set_skew(torch.ones(4, 16, 16).triu(1) - torch.ones(4, 16, 16).tril(-1))
    assert (cay(q, k, pos)[0] - qm).abs().max() > 1e-2


def test_sparse_cayley_keeps_only_masked_entries(f64):
    cay = CayleySTRING(head_dim=8, num_heads=2, s_init_std=1.0, sparsity=0.25)
    S = cay.skew()
    n_free = 8 * 7 // 2
    assert int(cay.s_mask.sum()) == round(0.25 * n_free)
    assert int((S.triu(1) != 0).sum(dim=(-1, -2)).max()) <= round(0.25 * n_free)
    loss = cay(torch.randn(1, 2, 3, 8), torch.randn(1, 2, 3, 8), torch.randn(1, 3, 2))[0].sum()
    loss.backward()
    assert torch.all(cay.s_params.grad[:, cay.s_mask == 0] == 0)


def test_fold_cayley_into_projections_same_logits(f64):
    torch.manual_seed(0)
    attn = Attention(dim=32, num_heads=4, encoding="cayley", encoding_kwargs={"s_init_std": 0.5}).double()
    x, pos = torch.randn(2, 7, 32), torch.randn(2, 7, 2) * 3
    logits, out = attn.logits(x, pos), attn(x, pos)
    enc = attn.encoding
    wq, bq = enc.fold_projection(attn.q.weight, attn.q.bias)
    wk, bk = enc.fold_projection(attn.k.weight, attn.k.bias)
    rope = enc.as_rope_mixed()
    qf = (x @ wq.T + bq).unflatten(-1, (4, 8)).transpose(1, 2)
    kf = (x @ wk.T + bk).unflatten(-1, (4, 8)).transpose(1, 2)
    qf, kf = rope(qf, kf, pos)
    assert_close64(qf @ kf.transpose(-1, -2) / 8**0.5, logits, atol=1e-12)
    attn.fold_()
    assert isinstance(attn.encoding, RoPEMixed)
    assert_close64(attn.logits(x, pos), logits, atol=1e-12)
    assert_close64(attn(x, pos), out, atol=1e-12)


def test_fold_circulant_into_projections_same_outputs(f64):
    torch.manual_seed(1)
    attn = Attention(dim=32, num_heads=2, encoding="circulant", coord_dim=3,
                     encoding_kwargs={"init": "normal", "init_std": 0.3}).double()
    x, pos = torch.randn(2, 6, 32), torch.randn(2, 6, 3) * 3
    logits, out = attn.logits(x, pos), attn(x, pos)
    attn.fold_()
    assert_close64(attn.logits(x, pos), logits, atol=1e-12)
    assert_close64(attn(x, pos), out, atol=1e-12)


def test_circulant_fft_equals_dense_matrix_exponential(f64):
    for block in (None, 4):
        m = CirculantSTRING(head_dim=16, coord_dim=3, num_heads=2, block_size=block, init="normal", init_std=0.5)
        z, pos = torch.randn(2, 2, 5, 16), torch.randn(2, 5, 3) * 4
        L = m.generators()  # dense C_k - C_k^T
        cb = m.coeffs.unflatten(-1, (-1, m.block_size))
        C = circulant(cb)
        i, j = 3, 1
        assert_close64(C[..., i, j], cb[..., (i - j) % m.block_size])  # C_ij = c_{(i-j) mod b}
        dense = torch.linalg.matrix_exp(torch.einsum("bnc,hcij->bhnij", pos, L).contiguous())
        ref = torch.einsum("bhnij,bhnj->bhni", dense, z)
        fast = m.encode(z, pos)
        rel = (fast - ref).norm() / ref.norm()
        assert rel < 1e-10
        # the complex FFT path has no imaginary residue
        mu = torch.fft.fft(m.coeffs.detach()) - torch.fft.fft(m.coeffs.detach()).conj()
        if block is None:
            mult = torch.exp(torch.einsum("bnc,hcd->bhnd", pos.to(mu.dtype), mu))
            full = torch.fft.ifft(mult * torch.fft.fft(z))
            assert full.imag.abs().max() < 1e-12
            assert_close64(full.real, ref, atol=1e-12)


def test_circulant_zero_coefficients_identity_and_fixed_directions(f64):
    m = CirculantSTRING(head_dim=8, num_heads=1, coeffs=torch.zeros(1, 2, 8))
    z, pos = torch.randn(1, 1, 4, 8), torch.randn(1, 4, 2) * 10
    assert_close64(m.encode(z, pos), z, atol=1e-14)
    m = CirculantSTRING(head_dim=8, num_heads=1, init="normal", init_std=1.0)
    ones = torch.ones(1, 1, 4, 8)
    alt = ((-1.0) ** torch.arange(8)).expand(1, 1, 4, 8)
    assert_close64(m.encode(ones, pos), ones, atol=1e-12)
    assert_close64(m.encode(alt, pos), alt, atol=1e-12)
    assert (m.encode(z, pos) - z).abs().max() > 1e-2


def test_thm_3_4_real_fourier_basis_block_diagonalises(f64):
    m = CirculantSTRING(head_dim=12, coord_dim=2, num_heads=2, init="normal", init_std=0.5)
    Qb, _ = real_fourier_basis(12)
    assert_close64(Qb.T @ Qb, torch.eye(12), atol=1e-13)
    Q, freqs = m.as_rope()
    L = m.generators().detach()
    assert_close64(Q.T @ L @ Q, rope_generators(freqs), atol=1e-12)
    pos = torch.randn(1, 3, 2)
    R = m.rotation_matrix(pos)
    rope = RoPEMixed(head_dim=12, coord_dim=2, num_heads=2, freqs=freqs)
    assert_close64(Q @ rope.rotation_matrix(pos) @ Q.T, R, atol=1e-12)


def test_spectral_init_matches_rope_mixed_frequencies(f64):
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    m = CirculantSTRING(head_dim=16, coord_dim=2, num_heads=2, generator=g1)
    _, freqs = m.as_rope()  # pairs: (fixed, 7 rotating modes)
    from string_pe.rope import mixed_init_frequencies

    want = mixed_init_frequencies(head_dim=14, coord_dim=2, num_heads=2, base=10.0, generator=g2)
    assert_close64(freqs[:, 1:], want, atol=1e-12)
    assert_close64(freqs[:, 0], torch.zeros(2, 2), atol=1e-14)
