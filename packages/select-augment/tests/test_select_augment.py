"""Tests of the mathematics of select-augment: each would fail if the method were wrong (negative controls inline)."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from select_augment.augment import TargetedAugment, strong_policy
from select_augment.config import AugConfig, Config, ScoreConfig, SelectConfig
from select_augment.data import check_classnames
from select_augment.errors import SelectAugmentError
from select_augment.scoring import Scores, class_ranks, gmm_clean_probability, score, toy_encoder
from select_augment.selection import (
    CostMeter,
    DynamicSelector,
    InfoBatch,
    LossPolicySelector,
    bottom_k,
    ratio_for_cost,
)
from select_augment.train import SmallCNN, weighted_loss

README = Path(__file__).resolve().parents[1] / "README.md"


def _toy(n_per=30, C=4, noise=0.3, seed=0):
    y = np.repeat(np.arange(C), n_per)
    z, t = toy_encoder(y, num_classes=C, dim=8, noise=noise, seed=seed)
    return z, t, y


def _images(n, seed=0):
    return np.random.default_rng(seed).integers(0, 256, size=(n, 32, 32, 3), dtype=np.uint8)


# ------------------------------------------------------------------------------------------ budget and cost
@pytest.mark.parametrize("ratio", [0.3, 0.5, 0.77])
def test_budget_is_ceil_rN_before_annealing_and_cost_has_its_closed_form(ratio):
    z, t, y = _toy()
    s = score(z, y, text_features=t, k=5, gate="off")
    T, n = 8, len(y)
    sel = DynamicSelector(s, ratio=ratio, delta=0.75, epochs=T, seed=1)
    meter = CostMeter(n, T)
    rng = np.random.default_rng(0)
    for epoch in range(T):
        sel.set_epoch(epoch)
        expected = math.ceil(ratio * n) if epoch < math.ceil(0.75 * T) else n
        assert len(sel.selected) == expected == len(list(iter(sel)))
        assert len(np.unique(sel.selected)) == expected
        meter.add(len(sel.selected))
        sel.update(sel.selected, rng.exponential(size=len(sel.selected)))
    n_pruned = math.ceil(0.75 * T)
    assert meter.total == n_pruned * math.ceil(ratio * n) + (T - n_pruned) * n
    # gating removes samples: never more than the budget, fewer only by the gated ones
    sg = score(z, y, text_features=t, k=5, gate="quantile", q_noise=0.5)
    selg = DynamicSelector(sg, ratio=0.9, delta=1.0, epochs=2, seed=0)
    selg.set_epoch(0)
    assert len(selg.selected) == min(math.ceil(0.9 * n), int(sg.gate.sum())) < math.ceil(0.9 * n)
    assert sg.gate[selg.selected].all()


def test_ratio_for_cost_matches_the_measured_cost():
    r = ratio_for_cost(0.5, delta=0.875, epochs=12)
    z, t, y = _toy(n_per=50)
    sel = DynamicSelector(score(z, y, text_features=t, k=5), ratio=r, delta=0.875, epochs=12, seed=0)
    meter = CostMeter(len(y), 12)
    for e in range(12):
        sel.set_epoch(e)
        meter.add(len(sel.selected))
    assert abs(meter.fraction - 0.5) < 2 / len(y)
    assert meter.fraction <= 0.5 + 12 / (12 * len(y))


def test_extra_view_mode_counts_one_sample_step_per_extra_view():
    z, t, y = _toy(n_per=10)
    s = score(z, y, text_features=t, k=3)
    sel = DynamicSelector(s, ratio=0.5, delta=1.0, epochs=2, seed=0)
    aug = TargetedAugment((_images(len(y)), y), sel, aug_ratio=0.5, mode="extra-view")
    aug.set_epoch(0)
    ids = sel.selected
    x, tgt, view_ids = aug.batch(ids)
    n_strong = round(0.5 * len(ids))
    assert aug.extra_views == n_strong and x.shape[0] == len(ids) + n_strong == len(view_ids) == len(tgt)
    replace = TargetedAugment((_images(len(y)), y), sel, aug_ratio=0.5, mode="replace")
    replace.set_epoch(0)
    assert replace.extra_views == 0 and replace.batch(ids)[0].shape[0] == len(ids)


# ------------------------------------------------------------------------------------------ unbiasedness
def _successive_sampling_pi(p, m):
    from select_augment.selection import successive_sampling_inclusion

    return successive_sampling_inclusion(p, m)


def test_horvitz_thompson_is_unbiased_by_enumeration_n5():
    """The package's exact inclusion probabilities (enumeration) make the HT total exactly unbiased, and they are the
    selection frequencies of DynamicSelector's fill (gate off, no informative set, HT weights) on N = 5."""
    from select_augment.selection import successive_sampling_inclusion

    p = np.array([0.05, 0.1, 0.2, 0.3, 0.35])
    g = np.array([1.0, -2.0, 0.5, 3.0, 1.5])
    for m in (1, 2, 3):
        pi, sets = successive_sampling_inclusion(p, m)
        assert abs(sum(sets.values()) - 1) < 1e-12 and abs(pi.sum() - m) < 1e-12
        expectation = sum(pr * sum(g[i] / pi[i] for i in S) for S, pr in sets.items())
        assert expectation == pytest.approx(g.sum(), rel=1e-12)
        if m > 1:  # negative control: the first-order weights m p_i / sum p are biased for skewed p and m > 1
            naive = m * p / p.sum()
            biased = sum(pr * sum(g[i] / naive[i] for i in S) for S, pr in sets.items())
            assert abs(biased - g.sum()) > 1e-2
    # the selector draws these sets: suitability a = p - eps, so that the fill probabilities are eps + a = p
    eps, m, draws = 1e-3, 2, 4000
    a = p - eps
    sc = Scores(a, a, a, a, a, np.ones(5, bool), np.zeros(5, np.int64), 1)
    pi, _ = successive_sampling_inclusion(p, m)
    counts, est = np.zeros(5), []
    for seed in range(draws):
        sel = DynamicSelector(sc, ratio=m / 5, delta=1.0, epochs=1, seed=seed, eps=eps, use_gate=False,
                              keep_informative=False, weighting="ht")
        sel.set_epoch(0)
        counts[sel.selected] += 1
        est.append(float((sel.weights(sel.selected).numpy().astype(np.float64) * g[sel.selected]).sum()))
    se = np.sqrt(pi * (1 - pi) / draws)
    assert (np.abs(counts / draws - pi) < 5 * se).all()  # every draw's frequency within 5 binomial SE
    assert abs(np.mean(est) - g.sum()) < 4 * np.std(est) / math.sqrt(draws)


def test_gumbel_top_k_draws_successive_sampling_and_its_rank_conditioned_weights_are_unbiased():
    p = np.array([0.05, 0.1, 0.2, 0.3, 0.35])
    g = np.array([1.0, -2.0, 0.5, 3.0, 1.5])
    m, draws = 2, 40_000
    exact_pi, _ = _successive_sampling_pi(p, m)
    rng = np.random.default_rng(0)
    cand = np.arange(5)
    counts, est, naive_est = np.zeros(5), [], []
    naive = m * p / p.sum()
    for _ in range(draws):
        chosen, pi = bottom_k(rng, cand, p, m)
        counts[chosen] += 1
        est.append((g[chosen] / pi).sum())
        naive_est.append((g[chosen] / naive[chosen]).sum())
    np.testing.assert_allclose(counts / draws, exact_pi, atol=0.01)  # Gumbel-top-k = successive sampling
    se = np.std(est) / math.sqrt(draws)
    assert abs(np.mean(est) - g.sum()) < 4 * se
    assert abs(np.mean(naive_est) - g.sum()) > 4 * np.std(naive_est) / math.sqrt(draws)  # negative control


# ------------------------------------------------------------------------------------------ reductions
def test_constant_suitability_and_no_gate_select_uniformly():
    from scipy.stats import chisquare

    n, m, reps = 20, 7, 600
    s = Scores.uniform(n)
    counts = np.zeros(n)
    for seed in range(reps):
        sel = DynamicSelector(s, ratio=m / n, delta=1.0, epochs=1, seed=seed)
        sel.set_epoch(0)
        counts[sel.selected] += 1
    assert chisquare(counts).pvalue > 0.001
    # negative control: a non-constant suitability is detected as non-uniform
    a = np.linspace(0, 0.9, n)
    skew = Scores(a, a, a, a, a, np.ones(n, bool), np.zeros(n, np.int64), 1)
    counts2 = np.zeros(n)
    for seed in range(reps):
        sel = DynamicSelector(skew, ratio=m / n, delta=1.0, epochs=1, seed=seed)
        sel.set_epoch(0)
        counts2[sel.selected] += 1
    assert chisquare(counts2).pvalue < 1e-6


def test_scores_switched_off_give_infobatch_sets_with_the_same_rng():
    n, T = 60, 6
    ours = DynamicSelector(Scores.uniform(n), ratio=1.0, delta=0.7, epochs=T, seed=3, budget_mode="infobatch",
                           prune_ratio=0.6, use_gate=False)
    ib = InfoBatch(n, prune_ratio=0.6, delta=0.7, epochs=T, seed=3, thinning="fixed")
    other = InfoBatch(n, prune_ratio=0.6, delta=0.7, epochs=T, seed=4, thinning="fixed")
    rng = np.random.default_rng(0)
    differs = False
    for epoch in range(T):
        for s in (ours, ib, other):
            s.set_epoch(epoch)
        np.testing.assert_array_equal(ours.selected, ib.selected)
        np.testing.assert_allclose(ours.weights(ours.selected).numpy(), ib.weights(ib.selected).numpy())
        differs |= not np.array_equal(ib.selected, other.selected)
        loss = rng.exponential(size=n)
        for s in (ours, ib, other):
            s.update(np.arange(n), loss)
    assert differs  # negative control: another seed gives other sets
    # InfoBatch keeps every above-mean-loss sample and weights the kept well-learned ones 1/keep
    ib.set_epoch(1)
    hard = np.flatnonzero(ib.loss >= ib.loss.mean())
    assert np.isin(hard, ib.selected).all()


def test_ratio_one_selects_everything_with_weight_one():
    z, t, y = _toy()
    s = score(z, y, text_features=t, k=5, gate="off")
    sel = DynamicSelector(s, ratio=1.0, delta=1.0, epochs=3, seed=0)
    for epoch in range(3):
        sel.set_epoch(epoch)
        np.testing.assert_array_equal(sel.selected, np.arange(len(y)))
        assert torch.all(sel.weights(np.arange(len(y))) == 1)
        sel.update(np.arange(len(y)), np.random.default_rng(epoch).exponential(size=len(y)))
    half = DynamicSelector(s, ratio=0.5, delta=1.0, epochs=3, seed=0)
    half.set_epoch(0)
    assert len(half.selected) < len(y)  # negative control


# ------------------------------------------------------------------------------------------ invariances
def test_scores_are_invariant_to_order_and_scale_and_ranks_to_increasing_transforms():
    z, t, y = _toy(noise=0.5)
    s = score(z, y, text_features=t, k=5)
    perm = np.random.default_rng(1).permutation(len(y))
    sp = score(z[perm] * 7.5, y[perm], text_features=t * 0.1, k=5)
    for f in ("consistency", "density", "u", "v", "suitability"):
        np.testing.assert_allclose(getattr(sp, f), getattr(s, f)[perm], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(sp.gate, s.gate[perm])
    # increasing transforms of rho or c leave the ranks and a unchanged; a decreasing one does not
    np.testing.assert_array_equal(class_ranks(np.exp(3 * s.density), y), s.u)
    np.testing.assert_array_equal(class_ranks(np.log(s.consistency) ** 3, y), s.v)
    assert not np.array_equal(class_ranks(-s.density, y), s.u)
    assert ((s.consistency >= 0) & (s.consistency <= 1)).all()
    assert ((s.suitability >= 0) & (s.suitability < 1)).all()


# ------------------------------------------------------------------------------------------ toy closed forms
def test_toy_encoder_closed_forms():
    C, T = 5, 0.05
    y = np.repeat(np.arange(C), 12)
    _, t = toy_encoder(y, num_classes=C, noise=0.0)
    z = t[y].copy()  # z_i = t_{y_i}
    s = score(z, y, text_features=t, k=3, temperature=T)
    closed = 1.0 / (1.0 + (C - 1) * math.exp(-1.0 / T))  # softmax(<t_y, t_c>/T)[y], orthonormal classes
    np.testing.assert_allclose(s.consistency, closed, rtol=1e-12)
    # m > k identical points: cosine density exactly 1
    np.testing.assert_allclose(s.density, 1.0, rtol=1e-12)
    # a flipped label gets c < 1/C
    y_flip = y.copy()
    y_flip[0] = (y[0] + 1) % C
    sf = score(z, y_flip, text_features=t, k=3, temperature=T)
    assert sf.consistency[0] < 1 / C < sf.consistency[1]
    assert sf.v[0] == sf.v[y_flip == y_flip[0]].min()


def test_gmm_gate_separates_two_modes():
    rng = np.random.default_rng(0)
    c = np.concatenate([rng.normal(0.9, 0.03, 300), rng.normal(0.1, 0.05, 100)])
    p = gmm_clean_probability(c)
    assert (p[:300] > 0.5).mean() > 0.99 and (p[300:] < 0.5).mean() > 0.99


# ------------------------------------------------------------------------------------------ determinism
def test_same_seed_same_selections_other_seed_other():
    z, t, y = _toy()
    s = score(z, y, text_features=t, k=5)
    sets = []
    for seed in (0, 0, 1):
        sel = DynamicSelector(s, ratio=0.4, delta=1.0, epochs=3, seed=seed)
        out = []
        for e in range(3):
            sel.set_epoch(e)
            out.append(list(iter(sel)))
            sel.update(sel.selected, np.linspace(0.1, 2, len(sel.selected)))
        sets.append(out)
    assert sets[0] == sets[1] and sets[0] != sets[2]


# ------------------------------------------------------------------------------------------ augmentation targeting
@pytest.mark.parametrize("aug_ratio", [0.0, 0.3, 0.5, 1.0])
def test_exactly_round_aug_ratio_of_the_selected_get_the_strong_policy_and_they_are_the_top_by_a(aug_ratio):
    z, t, y = _toy()
    s = score(z, y, text_features=t, k=5, gate="off")
    sel = DynamicSelector(s, ratio=0.5, delta=1.0, epochs=2, seed=0)
    aug = TargetedAugment((_images(len(y)), y), sel, aug_ratio=aug_ratio)
    aug.set_epoch(0)
    S = sel.selected
    strong = np.flatnonzero(aug.strong)
    assert len(strong) == round(aug_ratio * len(S)) and np.isin(strong, S).all()
    if 0 < len(strong) < len(S):
        rest = np.setdiff1d(S, strong)
        assert s.suitability[strong].min() >= s.suitability[rest].max()
        uni = TargetedAugment((_images(len(y)), y), sel, aug_ratio=aug_ratio, targeting="uniform")
        uni.set_epoch(0)
        assert uni.strong.sum() == len(strong) and not np.array_equal(np.flatnonzero(uni.strong), strong)


def test_geometric_ops_can_be_excluded_from_the_policy():
    pol = strong_policy("trivialaugment", exclude_ops=("Rotate", "ShearX", "ShearY"))
    assert "Rotate" not in pol._AUGMENTATION_SPACE and "Brightness" in pol._AUGMENTATION_SPACE
    assert "Rotate" in strong_policy("trivialaugment")._AUGMENTATION_SPACE


TA_OPS = ["Identity", "Brightness", "Color", "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast",
          "Equalize", "TranslateX", "TranslateY"]


@pytest.mark.parametrize("op", TA_OPS)
def test_batched_trivialaugment_ops_equal_torchvision_image_by_image(op):
    from select_augment.augment import apply_op
    from torchvision.transforms import v2

    ta = v2.TrivialAugmentWide()
    x = torch.from_numpy(_images(6, seed=3).transpose(0, 3, 1, 2).copy()) // 2 + 30  # [6, 3, 32, 32] uint8
    fn, signed = ta._AUGMENTATION_SPACE[op]
    values = fn(31, 32, 32)
    bins = [0, 5, 12, 17, 25, 30]
    sign = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0]) if signed else torch.ones(6)
    mags = torch.zeros(6) if values is None else torch.stack([values[b] for b in bins]).float() * sign
    ours = apply_op(op, x, mags)
    ref = torch.stack([ta._apply_image_or_video_transform(img, op, float(m), interpolation=ta.interpolation,
                                                          fill=ta._fill) for img, m in zip(x, mags)])
    assert ours.dtype == torch.uint8 and ours.shape == x.shape
    # equal up to one grey level (float rounding before the uint8 truncation in the blends)
    assert (ours.int() - ref.int()).abs().max() <= 1
    assert (ours != ref).float().mean() < 0.01
    if op != "Identity":
        assert not torch.equal(ref, x)  # the op does something
    if signed:  # negative control: the opposite sign is another transform
        flipped = apply_op(op, x, -mags)
        assert (flipped.int() - ref.int()).abs().max() > 1


def test_batched_trivialaugment_draws_ops_and_magnitudes_uniformly_and_deterministically():
    from scipy.stats import chisquare
    from select_augment.augment import BatchedTrivialAugment

    ta = BatchedTrivialAugment(exclude_ops=("Rotate", "ShearX", "ShearY"))
    assert set(ta.ops) == set(TA_OPS)
    op, mags = ta.draw(22_000, 32, 32, torch.Generator().manual_seed(0))
    assert chisquare(np.bincount(op.numpy(), minlength=len(ta.ops))).pvalue > 1e-3
    k = ta.ops.index("Brightness")
    assert (mags[k] < 0).float().mean().item() == pytest.approx(0.5, abs=0.02)
    assert mags[k].abs().max() <= 0.99 + 1e-6
    x = torch.from_numpy(_images(16).transpose(0, 3, 1, 2).copy())
    a = ta(x, torch.Generator().manual_seed(1))
    b = ta(x, torch.Generator().manual_seed(1))
    c = ta(x, torch.Generator().manual_seed(2))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_digits_weak_augmentation_has_no_flip_and_a_one_pixel_crop():
    pytest.importorskip("sklearn")
    from select_augment.augment import weak_augment
    from select_augment.data import digits

    d = digits(seed=0, split="train", image_size=8)
    assert d.images.shape[1:] == (8, 8, 3) and d.images.dtype == np.uint8
    x = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).reshape(2, 3, 8, 8)
    g = torch.Generator().manual_seed(0)
    outs = [weak_augment(x, g, pad=1, flip=False) for _ in range(50)]
    # without flips the inner columns keep the left-to-right order of the input (reflect-pad crop offsets only)
    assert all((o[..., 2:-1] > o[..., 1:-2]).all() for o in outs)
    flipped = [weak_augment(x, torch.Generator().manual_seed(s), pad=1, flip=True) for s in range(20)]
    assert any((o[..., 2:-1] < o[..., 1:-2]).any() for o in flipped)  # negative control: flips reverse rows
    sel = DynamicSelector(Scores.uniform(len(d)), ratio=0.5, epochs=2, seed=0)
    aug = TargetedAugment(d, sel, targeting="uniform", flip=False,
                          exclude_ops=("Rotate", "ShearX", "ShearY", "TranslateX", "TranslateY"))
    assert aug.pad == 1
    aug.set_epoch(0)
    xb, yb, _ = aug.batch(sel.selected[:32])
    assert xb.shape == (32, 3, 8, 8)
    splits = [set(map(bytes, digits(seed=0, split=s, image_size=8).images.reshape(-1, 192)))
              for s in ("train", "val", "test")]
    assert sum(map(len, splits)) >= 1700  # disjoint splits of the 1797 images (duplicates aside)


def test_prototype_text_features_are_class_means_and_give_high_consistency():
    from select_augment.data import prototype_text_features

    z, _, y = _toy(noise=0.3)
    t = prototype_text_features(z, y, 4)
    np.testing.assert_allclose(np.linalg.norm(t, axis=1), 1.0)
    m = z[y == 2].mean(0)
    np.testing.assert_allclose(t[2], m / np.linalg.norm(m))
    s = score(z, y, text_features=t, k=5)
    shuffled = score(z, np.roll(y, 7), text_features=t, k=5)  # negative control: wrong labels
    assert s.consistency.mean() > 0.9 > shuffled.consistency.mean()
    with pytest.raises(SelectAugmentError, match="missing"):
        prototype_text_features(z, np.where(y == 3, 0, y), 4)


# ------------------------------------------------------------------------------------------ loss
def test_weighted_loss_and_its_gradient_match_the_formula_in_float64():
    torch.manual_seed(0)
    logits = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 1, 2, 3, 1, 0])
    w = torch.tensor([1.0, 2.0, 0.5, 1.0, 3.0, 1.0], dtype=torch.float64)
    loss, ce = weighted_loss(logits, y, w)
    ref = (w * torch.nn.functional.cross_entropy(logits, y, reduction="none")).sum() / 6
    assert torch.allclose(loss, ref)
    loss.backward()
    h = 1e-6
    num = torch.zeros_like(logits)
    for i, j in itertools.product(range(6), range(4)):
        lp, lm = logits.detach().clone(), logits.detach().clone()
        lp[i, j] += h
        lm[i, j] -= h
        num[i, j] = (weighted_loss(lp, y, w)[0] - weighted_loss(lm, y, w)[0]) / (2 * h)
    assert torch.allclose(logits.grad, num, atol=1e-8)
    unweighted = weighted_loss(logits.detach(), y, torch.ones(6, dtype=torch.float64))[0]
    assert not torch.allclose(unweighted, ref)  # negative control


def test_small_cnn_shapes():
    out = SmallCNN(8, width=4, downsample=2)(torch.zeros(3, 3, 32, 32))
    assert out.shape == (3, 8)


# ------------------------------------------------------------------------------------------ bad input
def test_bad_scoring_input_is_refused_with_the_field_named():
    z, t, y = _toy(n_per=6)
    cases = [
        (dict(features=z[:-1]), "labels"),
        (dict(features=np.where(np.arange(z.size).reshape(z.shape) == 0, np.nan, z)), "finite"),
        (dict(labels=np.where(y == 3, 4, y)), r"\[0, 4\)"),
        (dict(labels=y - 1), r"\[0, 4\)"),
        (dict(k=0), "k must"),
        (dict(k=6), "k must"),
        (dict(temperature=0.0), "temperature"),
        (dict(temperature=-1.0), "temperature"),
        (dict(q_noise=1.0), "q_noise"),
        (dict(gate="bogus"), "gate"),
        (dict(text_features=t[:, :3] + 0.1), "dimension"),
    ]
    for kw, needle in cases:
        args = dict(features=z, labels=y, text_features=t, k=3)
        args.update(kw)
        with pytest.raises(SelectAugmentError, match=needle):
            score(args.pop("features"), args.pop("labels"), **args)


def test_bad_selection_and_augmentation_input_is_refused():
    z, t, y = _toy(n_per=6)
    s = score(z, y, text_features=t, k=3)
    for kw, needle in [(dict(ratio=0.0), "ratio"), (dict(ratio=1.5), "ratio"), (dict(delta=-0.1), "delta"),
                       (dict(delta=1.1), "delta"), (dict(epochs=0), "epochs")]:
        args = dict(ratio=0.5, delta=0.5, epochs=2)
        args.update(kw)
        with pytest.raises(SelectAugmentError, match=needle):
            DynamicSelector(s, **args)
    with pytest.raises(SelectAugmentError, match="budget after gating is zero"):
        DynamicSelector(s.with_gate(np.zeros(len(y), bool)), ratio=0.5, epochs=2)
    sel = DynamicSelector(s, ratio=0.5, epochs=2)
    sel.set_epoch(0)
    with pytest.raises(SelectAugmentError, match="one value per sample id"):
        sel.update(sel.selected[:4], np.ones(3))
    with pytest.raises(SelectAugmentError, match="finite"):
        sel.update(sel.selected[:2], np.array([1.0, np.nan]))
    with pytest.raises(SelectAugmentError, match="policy"):
        TargetedAugment((_images(len(y)), y), sel, policy="bogus")
    with pytest.raises(SelectAugmentError, match="aug_ratio"):
        TargetedAugment((_images(len(y)), y), sel, aug_ratio=1.2)
    with pytest.raises(SelectAugmentError, match="prune_ratio"):
        InfoBatch(10, prune_ratio=1.0, epochs=2)
    with pytest.raises(SelectAugmentError, match="policy"):
        LossPolicySelector(10, epochs=2, policy="bogus")
    for names, needle in [((), "non-empty"), (("a", "a"), "distinct"), (("a", "b"), "one class name")]:
        with pytest.raises(SelectAugmentError, match=needle):
            check_classnames(names, 3 if needle == "one class name" else len(names) or 1)


def test_bad_augmentation_data_and_grid_input_is_refused():
    from select_augment.augment import BatchedTrivialAugment
    from select_augment.data import digits

    z, t, y = _toy(n_per=6)
    sel = DynamicSelector(score(z, y, text_features=t, k=3), ratio=0.5, epochs=2)
    with pytest.raises(SelectAugmentError, match="pad"):
        TargetedAugment((_images(len(y)), y), sel, pad=32)
    with pytest.raises(SelectAugmentError, match="exclude_ops"):
        strong_policy("trivialaugment", exclude_ops=("Spin",))
    with pytest.raises(SelectAugmentError, match="every operation"):
        BatchedTrivialAugment(exclude_ops=tuple(strong_policy("trivialaugment")._AUGMENTATION_SPACE))
    with pytest.raises(SelectAugmentError, match="image_size"):
        digits(image_size=12)
    with pytest.raises(SelectAugmentError, match="split"):
        digits(split="dev")
    for kw, needle in [(dict(lr_grid=()), "lr_grid"), (dict(lr_grid=(0.1, -1.0)), "lr_grid"),
                       (dict(infobatch_prune_grid=(1.0,)), "infobatch_prune_grid"), (dict(lr_extend=-1), "lr_extend"),
                       (dict(lr_extend=1.5), "lr_extend"), (dict(lr_extend=True), "lr_extend")]:
        with pytest.raises(ValueError, match=needle):
            Config(**kw)


@pytest.mark.parametrize("make, field", [
    (lambda: SelectConfig(ratio=0.0), "ratio"), (lambda: SelectConfig(delta=2.0), "delta"),
    (lambda: AugConfig(aug_ratio=-0.1), "aug_ratio"), (lambda: ScoreConfig(q_noise=1.0), "q_noise"),
    (lambda: ScoreConfig(temperature=0.0), "temperature"), (lambda: ScoreConfig(k=0), "k"),
    (lambda: Config(seeds=0), "seeds"), (lambda: SelectConfig(ratio=float("nan")), "ratio"),
])
def test_bad_config_names_the_field(make, field):
    with pytest.raises(ValueError, match=field):
        make()


def test_cli_bad_input_exits_2_and_writes_nothing(tmp_path, capsys):
    from select_augment.cli import main

    for args, needle in [(["train", "--select.ratio", "0"], "ratio"), (["train", "--aug.aug-ratio", "2"], "aug_ratio"),
                         (["train", "--score.temperature", "0"], "temperature"),
                         (["train", "--learn.epochs", "0"], "epochs"),
                         (["train", "--dataset", "folder"], "--folder")]:
        rc = main([*args, "--out", str(tmp_path / "never")])
        err = capsys.readouterr().err
        # one "select-augment: error: ..." line naming the field, also for nested-config validation errors
        assert rc == 2 and err.startswith("select-augment: error:") and needle in err, err
        assert len(err.strip().splitlines()) == 1 and "Value error" not in err, err
        assert not (tmp_path / "never").exists()


# ------------------------------------------------------------------------------------------ README
def test_readme_python_quickstart_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python block"
    exec(compile(blocks[0], "README quickstart", "exec"), {})


# ------------------------------------------------------------------------------------------ reproduce logic
def test_every_method_tunes_lr_on_the_same_grid_and_infobatch_is_cost_calibrated(monkeypatch, tmp_path):
    """The experiment logic with a fake trainer: InfoBatch's prune ratio is walked down until its measured cost
    reaches the target, every method then gets the same lr grid on the validation split (never test), edges are
    extended once and flagged, and the claims/tables are built from the per-seed test runs."""
    from dataclasses import replace

    from select_augment import reproduce as R
    from select_augment.config import BUDGETS

    calls = []

    def fake(name, cfg, regime, seed, params, eval_split="test"):
        calls.append((name, regime, seed, dict(params), eval_split))
        lr = params.get("lr", 0.1)
        cost = 1.0 if name.startswith("full") else 0.5
        if name == "infobatch +gate":
            cost = 1.0 - params["prune_ratio"] * 0.7  # 0.9 -> 0.37, 0.8 -> 0.44, 0.7 -> 0.51
        acc = 0.9 - abs(lr - (0.2 if name == "ours" else 0.1)) + 0.001 * seed
        curve = [(e, acc - 0.01 / e) for e in range(6, 13)]  # a plateaued validation curve
        return {"acc": acc, "cost": cost, "seconds": 1.0, "selector_seconds": 0.01, "score_seconds": 0.1,
                "epochs": cfg.learn.epochs, "n": cfg.n_train, "curve": curve}

    from select_augment.reproduce import common, matched_cost
    monkeypatch.setattr(common, "run_method", fake)  # the module that calls it, not the package's re-export
    monkeypatch.setattr(matched_cost, "_bar_figure", lambda out, name, res, title: name)
    R._CACHE.clear()
    cfg = replace(BUDGETS.full, seeds=3, methods_clean=("full", "random +gate", "infobatch +gate", "ours"))
    sec = R.clean_matched_cost(cfg, [0, 1, 2], tmp_path)
    tuning = [c for c in calls if c[4] == "val"]
    assert all(c[2] == 0 for c in tuning)  # tuning on seed 0's validation split only
    ib_cal = [c[3]["prune_ratio"] for c in tuning if c[0] == "infobatch +gate" and "lr" not in c[3]]
    assert ib_cal == [0.9, 0.8, 0.7]  # walked down until the measured cost reached 0.5
    per_method = {m: [c[3]["lr"] for c in tuning if c[0] == m and "lr" in c[3]] for m in cfg.methods_clean}
    grid = list(cfg.lr_grid)
    assert all(lrs[:len(grid)] == grid for lrs in per_method.values())
    assert per_method["ours"] == grid + [0.4]  # chosen at the upper edge: one more step
    tests = [c for c in calls if c[4] == "test"]
    assert len(tests) == 3 * len(cfg.methods_clean)
    assert {c[3]["lr"] for c in tests if c[0] == "random +gate"} == {0.1}
    assert {c[3]["prune_ratio"] for c in tests if c[0] == "infobatch +gate"} == {0.7}
    table = sec.tables["Clean shapes: learning rate chosen on the validation split (seed 0), the same grid for "
                       "every method"]
    assert [r[3] for r in table[1]] == [3, 3, 3, 4]  # grid points tried (+1 extension for ours)
    claims = {c.claim: c for c in sec.claims}
    assert any("InfoBatch" in k for k in claims) and all(c.seeds == 3 for c in claims.values())
    gates = {c.claim for c in sec.claims if c.kind == "gate"}
    assert gates == {R.gate_name("Clean shapes", m) for m in cfg.methods_clean}  # one competence gate per method
    for c in sec.claims:
        if c.kind == "paper":  # every comparison waits on the gates of both sides
            assert c.gates and set(c.gates) <= gates and R.gate_name("Clean shapes", "ours") in c.gates
    full_gate = claims[R.gate_name("Clean shapes", "full")]
    assert any("stated accuracy" in k for k in full_gate.controls) and full_gate.verdict == "fails"  # 0.9 < 0.95


def test_infobatch_default_ratio_row_prunes_less_than_the_cost_matched_one():
    """The reference row runs InfoBatch at its official ratio 0.5: it keeps more of the well-learned samples than the
    cost-matched ratio 0.9 (higher measured cost), and both stay below full data (negative control: full = 1)."""
    from dataclasses import replace

    from select_augment import reproduce as R
    from select_augment.config import BUDGETS

    cfg = replace(BUDGETS.smoke, learn=replace(BUDGETS.smoke.learn, epochs=4), tune=False)
    R._CACHE.clear()
    default = R.run_method(R.INFOBATCH_DEFAULT, cfg, "clean", 0, {})
    matched = R.run_method("infobatch", cfg, "clean", 0, {"prune_ratio": 0.9})
    full = R.run_method("full", cfg, "clean", 0, {})
    assert matched["cost"] < default["cost"] < full["cost"] == pytest.approx(1.0)
    for methods in (BUDGETS.full.methods_clean, BUDGETS.full.methods_noisy, BUDGETS.full.methods_digits):
        assert R.INFOBATCH_DEFAULT + R.GATED in methods and "infobatch" + R.GATED in methods
        # every pruning baseline gets ours' gate; only full data also runs without it
        assert all(m.endswith(R.GATED) or m.startswith("ours") or m == "full" for m in methods)


def test_gated_baseline_selects_within_the_gate_with_ours_budget_and_anneals_on_all_data():
    """GatedSelector: in the pruning epochs S_t lies in the gated-in pool with |S_t| = ceil(r N), the budget ours
    has; in the annealing epochs every sample (as DynamicSelector with the gate); losses reach the inner selector
    (InfoBatch's mean-loss rule sees the pool); the measured cost equals ours' closed form."""
    from select_augment.selection import GatedSelector, pool_ratio

    z, t, y = _toy()
    s = score(z, y, text_features=t, k=5, gate="quantile", q_noise=0.3)
    gate, N, T, r = s.gate, len(y), 8, 0.5
    pool = np.flatnonzero(gate)
    assert 0 < len(pool) < N
    ours = DynamicSelector(s, ratio=r, delta=0.75, epochs=T, seed=0, weighting="none")
    inner = LossPolicySelector(len(pool), ratio=pool_ratio(r, N, len(pool)), delta=0.75, epochs=T, seed=0)
    sel = GatedSelector(inner, gate)
    m_ours, m_sel = CostMeter(N, T), CostMeter(N, T)
    for ep in range(T):
        ours.set_epoch(ep)
        sel.set_epoch(ep)
        m_ours.add(len(ours.selected))
        m_sel.add(len(sel.selected))
        if ep < 6:
            assert set(sel.selected) <= set(pool) and len(sel.selected) == math.ceil(r * N)
        else:
            assert len(sel.selected) == N
    assert m_sel.total == m_ours.total
    ib = GatedSelector(InfoBatch(len(pool), prune_ratio=0.5, delta=0.75, epochs=T, seed=0), gate)
    losses = np.linspace(0.1, 3.0, N)
    ib.update(np.arange(N), losses)
    np.testing.assert_allclose(ib.inner.loss, losses[pool])  # the pool's losses, in local ids
    ib.set_epoch(1)
    assert set(ib.selected) <= set(pool) and len(ib.selected) < len(pool)  # well-learned ones thinned
    with pytest.raises(SelectAugmentError, match="gated-in"):
        GatedSelector(LossPolicySelector(N, ratio=r, epochs=T), gate)


def test_digits_label_noise_flags_and_rate():
    from select_augment.data import digits

    clean = digits(seed=3, split="train", image_size=8)
    noisy = digits(seed=3, split="train", image_size=8, label_noise=0.3)
    flips = noisy.flags["label_noisy"]
    np.testing.assert_array_equal(noisy.images, clean.images)  # the same split and images
    assert (noisy.labels[flips] != clean.labels[flips]).all() and (noisy.labels[~flips] == clean.labels[~flips]).all()
    assert 0.25 < flips.mean() < 0.35
    assert "label_noisy" not in digits(seed=3, split="test", image_size=8, label_noise=0.3).flags  # test stays clean
    with pytest.raises(SelectAugmentError, match="label_noise"):
        digits(seed=0, label_noise=1.5)


def test_out_of_vocabulary_folder_classes_fail_before_any_model_is_built(tmp_path, monkeypatch, capsys):
    """A user's ImageFolder whose class names the tiny CLIP has no words for fails at once, naming the classes and
    the way out (--clip-checkpoint or --text-features prototypes), before any CLIP is built or loaded."""
    from select_augment import data
    from select_augment.cli import main

    for c in ("zebra", "circle"):
        (tmp_path / "imgs" / c).mkdir(parents=True)
    monkeypatch.setattr(data, "load_clip", lambda *a, **k: pytest.fail("a CLIP was built"))
    rc = main(["train", "--dataset", "folder", "--folder", str(tmp_path / "imgs"), "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert rc == 2 and re.search(r"\['zebra'\].*--clip-checkpoint.*prototypes", err), err
    assert not (tmp_path / "run").exists()
    data.check_vocabulary(None, ["circle", "square"], ("a photo of a {}",))  # known words pass
    data.check_vocabulary("user.safetensors", ["zebra"], ("a photo of a {}",))  # a user's open_clip reads any text


def test_competence_gate_plateau_rule_is_the_validation_error_and_the_same_for_every_method():
    """The gate's plateau rule (reproduce.common.validation_curve): a last-window gain below the binomial standard
    error of the validation accuracy is not "still learning"; a gain of several errors is (negative control), as is
    the same small gain when no validation size is known (min_delta 0); a curve that reaches accuracy 1 inside the
    window has nothing left to gain. Applied through _gates, the verdicts follow for any method name alike."""
    from icml25.experiment import Section
    from icml25.train import plateau_check
    from select_augment.reproduce.common import _gates, validation_curve

    flat = [(e, 0.95) for e in range(18, 33)]

    def tail(gain, top=0.95):
        return flat + [(33, top), (34, top + gain), (35, top + gain), (36, top + gain)]

    small = [validation_curve(tail(0.005), 400) for _ in range(3)]  # 2 of 400 images; SE at 0.955 is ~0.0104
    assert small[0].min_delta == pytest.approx(round(np.sqrt(0.955 * 0.045 / 400) * 400) / 400)  # 4 images
    # The error floor in whole images: at 99 % on 400 images the SE is 1.99 images -> 2; a two-image gain (which is
    # 0.0050000000000000044 in floating point) is within it, three images are not (negative control).
    flat99 = [(e, 0.9875) for e in range(18, 34)]
    two = [validation_curve(flat99 + [(34, 0.9875), (35, 0.9925), (36, 0.99)], 400) for _ in range(3)]
    assert 0.9925 - 0.9875 > np.sqrt(0.9925 * 0.0075 / 400)  # the unrounded floor would call it learning
    assert plateau_check(two).plateaued
    three = [validation_curve(flat99 + [(34, 0.9875), (35, 0.995), (36, 0.99)], 400) for _ in range(3)]
    assert not plateau_check(three).plateaued
    assert plateau_check(small).plateaued
    assert not plateau_check([validation_curve(tail(0.005), 0) for _ in range(3)]).plateaued  # min_delta 0
    assert not plateau_check([validation_curve(tail(0.04), 400) for _ in range(3)]).plateaued  # ~4 SE: learning
    assert plateau_check([validation_curve(tail(0.0025, top=0.9975), 400) for _ in range(3)]).plateaued  # ceiling
    res = {m: [{"acc": 0.95, "curve": tail(g), "n_val": 400} for _ in range(3)]
           for m, g in (("ours", 0.04), ("random +gate", 0.005), ("infobatch +gate", 0.04), ("egreedy +gate", 0.005))}
    sec = Section("t")
    names = _gates(sec, "Toy", "clean", res, 8)
    verdicts = {m: next(c.verdict for c in sec.claims if c.claim == names[m]) for m in res}
    assert verdicts == {"ours": "fails", "random +gate": "holds", "infobatch +gate": "fails",
                        "egreedy +gate": "holds"}
