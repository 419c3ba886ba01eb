"""Attention layer, sdpa wrapper, ViT and point-set classifier: invariances and training sanity (float64)."""

import pytest
import torch
import torch.nn.functional as F
from icml25.testing import assert_close64
from string_pe import Attention, PointSetClassifier, ViT, make_encoding, string_sdpa
from string_pe.train import TrainSettings, fit, param_groups

ROTARY = ["rope-axial", "rope-mixed", "cayley", "circulant"]


@pytest.mark.parametrize("name", ROTARY)
def test_attention_outputs_identical_after_translation(f64, name):
    attn = Attention(dim=16, num_heads=2, encoding=name, coord_dim=3,
                     encoding_kwargs={"s_init_std": 0.3} if name == "cayley" else None)
    x, pos = torch.randn(2, 6, 16), torch.randn(2, 6, 3)
    delta = torch.tensor([37.0, -12.5, 101.0])
    assert_close64(attn(x, pos + delta), attn(x, pos), rtol=1e-9, atol=1e-10)
    # a non-uniform change of positions does change the output (the test can fail)
    assert (attn(x, pos * 2) - attn(x, pos)).abs().max() > 1e-4


@pytest.mark.parametrize("name", ROTARY)
def test_unrotated_cls_token_patch_block_invariant_cls_row_not(f64, name):
    """With an unrotated CLS token only the patch–patch logits are translation invariant (CLS–patch logits see
    absolute positions) — why the point-set model pools by mean instead of a CLS token."""
    attn = Attention(dim=16, num_heads=2, encoding=name, coord_dim=2)
    x, pos = torch.randn(1, 5, 16), torch.randn(1, 4, 2)
    a = attn.logits(x, pos, num_unrotated=1)
    b = attn.logits(x, pos + torch.tensor([5.0, -3.0]), num_unrotated=1)
    assert_close64(b[..., 1:, 1:], a[..., 1:, 1:], rtol=1e-9, atol=1e-10)
    assert_close64(b[..., 0, 0], a[..., 0, 0], atol=1e-12)
    assert (b[..., 0, 1:] - a[..., 0, 1:]).abs().max() > 1e-4


def test_string_sdpa_matches_manual_softmax(f64):
    enc = make_encoding("cayley", head_dim=8, coord_dim=2, num_heads=2, s_init_std=0.3)
    q, k, v, pos = torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8), torch.randn(2, 5, 2)
    out = string_sdpa(q, k, v, pos, enc)
    qe, ke = enc(q, k, pos)
    ref = torch.softmax(qe @ ke.transpose(-1, -2) / 8**0.5, dim=-1) @ v
    assert_close64(out, ref, atol=1e-12)
    assert_close64(string_sdpa(q, k, v, None, None), F.scaled_dot_product_attention(q, k, v), atol=0)


@pytest.mark.parametrize("pe", ROTARY)
def test_point_set_classifier_exactly_translation_invariant(f64, pe):
    m = PointSetClassifier(feature_dim=3, coord_dim=2, num_classes=4, dim=16, depth=2, num_heads=2, pe=pe)
    f, pos = torch.randn(3, 10, 3), torch.rand(3, 10, 2) * 8
    assert_close64(m(f, pos + torch.tensor([40.0, -80.0])), m(f, pos), rtol=1e-9, atol=1e-10)


def test_ape_and_none_behave_as_expected(f64):
    f, pos = torch.randn(3, 10, 3), torch.rand(3, 10, 2) * 8
    ape = PointSetClassifier(feature_dim=3, coord_dim=2, num_classes=4, dim=16, depth=1, num_heads=2, pe="ape")
    assert (ape(f, pos + 40) - ape(f, pos)).abs().max() > 1e-3  # absolute PE is not invariant
    none = PointSetClassifier(feature_dim=3, coord_dim=2, num_classes=4, dim=16, depth=1, num_heads=2, pe="none")
    assert_close64(none(f, torch.randn(3, 10, 2)), none(f, pos), atol=1e-12)  # positions ignored


@pytest.mark.parametrize("pe", ["cayley", "circulant"])
def test_vit_2d_and_3d_from_depth(f64, pe):
    img = torch.rand(2, 1, 8, 8)
    vit2 = ViT(image_size=(8, 8), patch_size=2, dim=16, depth=1, num_heads=2, pe=pe)
    assert vit2(img).shape == (2, 10)
    assert torch.equal(vit2.positions(1)[0, :5], torch.tensor([[0.0, 0], [1, 0], [2, 0], [3, 0], [0, 1]]))
    vit3 = ViT(image_size=(8, 8), patch_size=2, dim=16, depth=1, num_heads=2, pe=pe, coord_dim=3, pool="mean")
    depth = torch.rand(2, 1, 8, 8)
    out = vit3(img, depth)
    assert out.shape == (2, 10)
    pos = vit3.positions(2, depth)
    w, b = vit3.height.weight.item(), vit3.height.bias.item()
    assert_close64(pos[0, 0, 2], depth[0, 0, :2, :2].mean() * w + b, atol=1e-12)  # mean-pooled depth -> height
    # depth enters through the positions: changing its shape changes the output ...
    assert (vit3(img, depth.flip(-1)) - out).abs().max() > 1e-6
    # ... but a constant depth offset is a translation along z: exact invariance with mean pooling
    assert_close64(vit3(img, depth + 3.0), out, rtol=1e-9, atol=1e-10)


def test_training_step_changes_every_parameter_and_is_deterministic():
    def run():
        torch.manual_seed(0)
        m = ViT(image_size=(4, 4), patch_size=2, dim=16, depth=1, num_heads=2, pe="cayley",
                encoding_kwargs={"s_init_std": 0.1})
        before = {n: p.detach().clone() for n, p in m.named_parameters()}
        x, y = torch.rand(8, 1, 4, 4), torch.randint(0, 10, (8,))
        fit(m, (x,), y, TrainSettings(epochs=1, batch_size=8, lr=1e-2, warmup_epochs=0))
        return before, dict(m.named_parameters())

    before, after = run()
    unchanged = [n for n in before if torch.equal(before[n], after[n])]
    assert not unchanged, unchanged
    _, again = run()
    for n in after:
        assert torch.equal(after[n], again[n]), n


def test_pe_parameters_are_excluded_from_weight_decay():
    m = ViT(image_size=(4, 4), patch_size=2, dim=16, depth=1, num_heads=2, pe="cayley")
    groups = param_groups(m, 0.05)
    no_decay = {id(p) for p in groups[1]["params"]}
    enc = m.encoder.blocks[0].attn.encoding
    assert id(enc.freqs) in no_decay and id(enc.s_params) in no_decay
    assert id(m.encoder.blocks[0].attn.q.weight) not in no_decay


def test_low_precision_inputs_are_rotated_in_float32():
    enc = make_encoding("circulant", head_dim=8, coord_dim=2, num_heads=2)
    q, k, pos = torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8), torch.rand(1, 4, 2) * 100
    q16, k16 = enc(q.bfloat16(), k.bfloat16(), pos)
    assert q16.dtype == torch.bfloat16
    ref, _ = enc(q.bfloat16().float(), k.bfloat16().float(), pos)
    assert (q16.float() - ref).abs().max() < 0.05  # only the final cast to bfloat16 rounds
    with torch.autocast("cpu", dtype=torch.bfloat16):
        qa, _ = enc(q, k, pos)
    assert qa.dtype == torch.float32
    assert (qa - enc(q, k, pos)[0]).abs().max() < 1e-6
