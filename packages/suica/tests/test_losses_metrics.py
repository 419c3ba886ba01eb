import numpy as np
import pytest
import torch
from suica.losses import dice_loss, masked_mse, rbc_loss
from suica.metrics import (
    clustering_ari,
    evaluate,
    masked_cosine,
    rate_correlation,
    support_recovery,
    zero_iou,
)


def _target():
    g = torch.Generator().manual_seed(0)
    y = torch.rand(20, 30, generator=g) * 5
    y[torch.rand(20, 30, generator=g) < 0.8] = 0.0
    return y


def test_dice_closed_forms():
    y = _target()
    b = float((y > 0).sum())
    # ŷ = 0 everywhere: p = 0 => Dice = 1 - 1/(Σb + 1)
    assert float(dice_loss(torch.zeros_like(y), y)) == pytest.approx(1 - 1 / (b + 1), rel=1e-6)
    # ŷ -> ∞ on the support, 0 elsewhere => Dice -> 0
    big = torch.where(y > 0, torch.full_like(y, 1e3), torch.zeros_like(y))
    assert float(dice_loss(big, y)) == pytest.approx(0.0, abs=1e-6)


def test_masked_mse_ignores_zero_entries():
    y = _target()
    pred = torch.rand_like(y)
    changed = torch.where(y == 0, pred + 100.0, pred)
    assert float(masked_mse(pred, y)) == float(masked_mse(changed, y))
    m = y != 0
    assert float(masked_mse(pred, y)) == pytest.approx(float(((pred[m] - y[m]) ** 2).mean()), rel=1e-6)
    # the full RbC loss does change (L1 and Dice see the zeros)
    assert float(rbc_loss(changed, y)) > float(rbc_loss(pred, y))
    # closed form of RbC at ŷ = y: masked MSE = L1 = 0, only the Dice term remains
    p = 2 * torch.sigmoid(y) - 1
    b = (y > 0).float()
    dice = 1 - (2 * (p * b).sum() + 1) / (p.sum() + b.sum() + 1)
    assert float(rbc_loss(y, y, dice_weight=0.5)) == pytest.approx(0.5 * float(dice), rel=1e-5)


def test_metric_identities_on_perfect_prediction():
    y = _target().numpy().astype(np.float64)
    r = evaluate(y, y)
    assert r["mae"] == 0 and r["rmse"] == 0
    assert r["cosine"] == pytest.approx(1) and r["masked_cosine"] == pytest.approx(1)
    assert r["sam"] == pytest.approx(0, abs=1e-5) and r["masked_sam"] == pytest.approx(0, abs=1e-5)
    assert r["zero_iou"] == 1 and r["support_recovery"] == 1
    assert r["pearson"] == pytest.approx(1) and r["masked_pearson"] == pytest.approx(1)


def test_metric_properties():
    rng = np.random.default_rng(0)
    y = _target().numpy().astype(np.float64)
    p = np.maximum(y + rng.normal(0, 1, y.shape), 0)
    assert zero_iou(p, y) == pytest.approx(zero_iou(y, p))  # symmetric
    assert support_recovery(p, y) == pytest.approx(support_recovery(y, p))
    r = evaluate(p, y)
    assert 0 <= r["sam"] <= 180 and r["rmse"] == pytest.approx(np.sqrt(r["mse"]))
    assert r["rmse_per_gene"] <= r["rmse"] + 1e-12  # Jensen
    # a tiny positive offset kills the exact-zero IoU but not the thresholded one
    assert zero_iou(p + 1e-6, y) == 0.0 and zero_iou(p + 1e-6, y, tau=1e-5) == pytest.approx(zero_iou(p, y))
    # a degenerate all-zero predicted row never turns a metric into NaN
    p[0] = 0
    r = evaluate(p, y)
    assert all(np.isfinite(v) for v in r.values()) and r["n_degenerate_pearson"] >= 1
    # pooled vs per-spot masked cosine are different numbers in general
    assert masked_cosine(p, y, pooled=True) != pytest.approx(masked_cosine(p, y))


def test_rate_correlation_and_ari():
    rng = np.random.default_rng(0)
    rate = rng.gamma(2.0, 1.0, size=(50, 40))
    assert rate_correlation(np.expm1(np.log(rate + 1e-8)), rate) == pytest.approx(1.0)
    lab = np.repeat([0, 1, 2], 30)
    expr = np.eye(3)[lab] * 50 + rng.gamma(1, 0.1, size=(90, 3))
    expr = np.concatenate([expr, rng.gamma(1, 0.1, size=(90, 7))], axis=1)
    assert clustering_ari(expr, lab) == pytest.approx(1.0)


def test_leiden_ari_recovers_separated_clusters():
    from suica.metrics import leiden_ari, leiden_available

    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(3), 40)
    centres = rng.gamma(2.0, 5.0, size=(3, 20)) * (rng.uniform(size=(3, 20)) < 0.5)
    x = rng.poisson(centres[labels] + 0.1).astype(float)
    assert leiden_ari(x, labels, seed=0) > 0.9
    # negative control: shuffled labels carry no information
    assert abs(leiden_ari(x, rng.permutation(labels), seed=0)) < 0.2
    assert isinstance(leiden_available(), bool)
