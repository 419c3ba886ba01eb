"""Tests of the GPT-2 consensus loop: masks, eager/sdpa agreement, MLP removal, re-initialisation, determinism."""

import numpy as np
import pytest
import torch
from attn_consensus.errors import AttnConsensusError
from attn_consensus.hf_loop import (
    ZeroMLP,
    _call_block,
    hf_consensus_loop,
    make_mask,
    mlps_dropped,
    plain_passes,
    reinitialise,
)
from attn_consensus.models import random_prompts, set_attn_implementation, tiny_gpt2


@pytest.fixture(scope="module")
def model():
    return tiny_gpt2(n_layer=2, n_embd=32, n_head=4, vocab_size=64, n_positions=16, seed=0)


def _one_pass(model, ids, mask):
    tr = model.transformer
    h = tr.wte(ids) + tr.wpe(torch.arange(ids.shape[1])[None])
    am = make_mask(mask, ids.shape[1])
    with torch.no_grad():
        for block in tr.h:
            h = _call_block(block, h, am)
    return h


def test_causal_mask_earlier_tokens_ignore_later_ones_and_full_does_not(model):
    ids = random_prompts(2, 10, vocab_size=64, seed=0)
    pert = ids.clone()
    pert[:, 6] = (pert[:, 6] + 1) % 64
    for impl in ("sdpa", "eager"):
        set_attn_implementation(model, impl)
        a, b = _one_pass(model, ids, "causal"), _one_pass(model, pert, "causal")
        assert torch.equal(a[:, :6], b[:, :6])
        assert (a[:, 6:] - b[:, 6:]).abs().max() > 1e-4
        a, b = _one_pass(model, ids, "full"), _one_pass(model, pert, "full")  # negative control
        assert (a[:, :6] - b[:, :6]).abs().max() > 1e-4
    set_attn_implementation(model, "sdpa")


@pytest.mark.parametrize("mask", ["causal", "full"])
def test_eager_and_sdpa_agree_for_the_same_explicit_mask(model, mask):
    ids = random_prompts(3, 12, vocab_size=64, seed=1)
    set_attn_implementation(model, "eager")
    a = hf_consensus_loop(model, ids, iterations=3, mask=mask)
    set_attn_implementation(model, "sdpa")
    b = hf_consensus_loop(model, ids, iterations=3, mask=mask)
    np.testing.assert_allclose(a.gap, b.gap, atol=1e-6)
    assert a.attn_implementation == "eager" and b.attn_implementation == "sdpa"
    other = hf_consensus_loop(model, ids, iterations=3, mask="full" if mask == "causal" else "causal")
    assert np.abs(other.gap[1:] - b.gap[1:]).max() > 1e-4  # negative control: the mask matters


def test_curve_shape_and_first_point_is_the_embeddings(model):
    ids = random_prompts(2, 8, vocab_size=64, seed=2)
    c = hf_consensus_loop(model, ids, iterations=4)
    assert c.gap.shape == (4 * 2 + 1,) and c.gap_per_prompt.shape == (2, 9) and c.per_pass().shape == (5,)
    tr = model.transformer
    h0 = (tr.wte(ids) + tr.wpe(torch.arange(8)[None])).detach().double()
    u = h0 / h0.norm(dim=-1, keepdim=True)
    expect = (1 - (u[:, :1] * u).sum(-1).mean(-1)).mean()
    assert c.gap[0] == pytest.approx(float(expect), abs=1e-12)
    # the loop's final state equals plain passes of the same blocks
    torch.testing.assert_close(c.final_hidden, plain_passes(model, ids, iterations=4), rtol=0, atol=0)


def test_drop_mlp_patches_a_copy_and_changes_the_curve(model):
    ids = random_prompts(2, 8, vocab_size=64, seed=3)
    with_mlp = hf_consensus_loop(model, ids, iterations=2)
    without = hf_consensus_loop(model, ids, iterations=2, drop_mlp=True)
    assert not mlps_dropped(model)  # the caller's model is untouched
    assert np.abs(with_mlp.gap[1:] - without.gap[1:]).max() > 1e-6


def test_reinit_changes_weights_keeps_the_patch_and_is_seeded():
    m = tiny_gpt2(n_layer=2, n_embd=32, n_head=4, vocab_size=64, n_positions=16, seed=0)
    from attn_consensus.hf_loop import drop_mlps

    drop_mlps(m)
    before = m.transformer.h[0].attn.c_attn.weight.detach().clone()
    reinitialise(m, seed=5)
    after = m.transformer.h[0].attn.c_attn.weight.detach().clone()
    assert not torch.equal(before, after) and isinstance(m.transformer.h[0].mlp, ZeroMLP)
    reinitialise(m, seed=5)
    assert torch.equal(after, m.transformer.h[0].attn.c_attn.weight)
    # GPT-2's depth scaling of the residual projections
    assert m.transformer.h[0].attn.c_proj.weight.std() < 0.7 * m.transformer.h[0].attn.c_attn.weight.std()


def test_loop_is_deterministic_whatever_the_global_seed(model):
    ids = random_prompts(2, 8, vocab_size=64, seed=4)
    torch.manual_seed(0)
    a = hf_consensus_loop(model, ids, iterations=3, reinit="every_pass", seed=1)
    torch.manual_seed(123)
    b = hf_consensus_loop(model, ids, iterations=3, reinit="every_pass", seed=1)
    np.testing.assert_array_equal(a.gap, b.gap)
    c = hf_consensus_loop(model, ids, iterations=3, reinit="every_pass", seed=2)
    assert not np.array_equal(a.gap, c.gap)


def test_random_init_no_mlp_converges_towards_the_first_token():
    m = tiny_gpt2(n_layer=2, n_embd=128, n_head=4, vocab_size=64, n_positions=16, seed=0)
    c = hf_consensus_loop(m, random_prompts(2, 8, vocab_size=64, seed=0), iterations=60, drop_mlp=True)
    assert c.ratio < 0.5
    assert c.per_pass()[-1] < c.per_pass()[len(c.per_pass()) // 2]


# ------------------------------------------------------------------------------------------------- bad input
def test_bad_loop_input_refused(model):
    ids = random_prompts(1, 4, vocab_size=64, seed=0)
    with pytest.raises(AttnConsensusError, match="iterations"):
        hf_consensus_loop(model, ids, iterations=0)
    with pytest.raises(AttnConsensusError, match="mask"):
        hf_consensus_loop(model, ids, iterations=1, mask="bidirectional")
    with pytest.raises(AttnConsensusError, match="reinit"):
        hf_consensus_loop(model, ids, iterations=1, reinit="sometimes")
    with pytest.raises(AttnConsensusError, match="vocab_size"):
        hf_consensus_loop(model, ids + 1000, iterations=1)
    with pytest.raises(AttnConsensusError, match="positions"):
        hf_consensus_loop(model, random_prompts(1, 40, vocab_size=64, seed=0), iterations=1)
    with pytest.raises(AttnConsensusError, match="transformer.h"):
        hf_consensus_loop(torch.nn.Linear(2, 2), ids, iterations=1)


def test_full_mask_refused_on_gpt_neo():
    from transformers import GPTNeoConfig, GPTNeoForCausalLM

    cfg = GPTNeoConfig(vocab_size=64, max_position_embeddings=16, hidden_size=32, num_layers=2, num_heads=4,
                       attention_types=[[["global", "local"], 1]], window_size=8)
    neo = GPTNeoForCausalLM(cfg).eval()
    ids = random_prompts(1, 6, vocab_size=64, seed=0)
    with pytest.raises(AttnConsensusError, match="full"):
        hf_consensus_loop(neo, ids, iterations=1, mask="full")
    c = hf_consensus_loop(neo, ids, iterations=2, mask="causal", drop_mlp=True)  # causal works on GPT-Neo
    assert c.gap.shape == (5,)


def test_fused_diagnostic_equals_the_float64_reference_and_refines_near_consensus():
    from attn_consensus.diagnostics import consensus_gap
    from attn_consensus.hf_loop import _gap_rows, _gap_rows_exact

    g = torch.Generator().manual_seed(0)
    spread = torch.randn(6, 16, 32, generator=g)  # gaps of order 1
    base = torch.randn(6, 1, 32, generator=g)
    tight = base + 1e-4 * torch.randn(6, 16, 32, generator=g)  # gaps of order 1e-8 (below float32 resolution)
    for h in (spread, tight):
        ref = consensus_gap(h.double())
        assert torch.allclose(_gap_rows_exact(h, False), ref, rtol=1e-5, atol=1e-12)
        assert torch.allclose(_gap_rows(h, False), ref, rtol=1e-4, atol=1e-12)
        assert torch.allclose(_gap_rows(h, True), consensus_gap(h.double(), absolute=True), rtol=1e-4, atol=1e-12)
    assert float(consensus_gap(tight.double()).max()) < 1e-6
    # negative control: without the exact refinement the fused float32 value is off near consensus
    rough = _gap_rows(tight, False, refine_below=0.0)
    assert not torch.allclose(rough, consensus_gap(tight.double()), rtol=1e-2, atol=1e-12)
