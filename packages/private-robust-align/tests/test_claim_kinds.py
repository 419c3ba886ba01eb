"""Which reproduce claims count as reproductions: rows true by the estimator's construction are ``property``, interval
claims are one row tested on both ends (issue 66 / 53 "relabel")."""

import math

import numpy as np
import pytest
from private_robust_align.config import BUDGETS
from private_robust_align.reproduce import _interval, rates, separation


def _claim(lo=-0.65, hi=-0.35, values=()):
    return _interval(claim="slope in [lo, hi]", metric="slope", values=list(values), lo=lo, hi=hi, paper="p")


def test_interval_claim_holds_inside_and_is_one_row_with_the_larger_p():
    c = _claim(values=[-0.50, -0.49, -0.51, -0.50, -0.52])
    assert c.verdict == "holds" and c.kind == "paper" and c.baseline is None
    assert c.baseline_name == "interval [-0.65, -0.35]"
    assert -0.65 < c.ci[0] < c.ours < c.ci[1] < -0.35
    # the p-value is the larger one-sided one (intersection-union): an off-centre mean has the nearer end's p
    near = _claim(values=[-0.40, -0.39, -0.41, -0.40, -0.42])
    assert near.verdict == "holds" and near.p_value > c.p_value


@pytest.mark.parametrize("values", [[-0.20, -0.21, -0.19, -0.20, -0.22], [-0.90, -0.91, -0.89, -0.92, -0.90]])
def test_interval_claim_fails_beyond_either_end(values):
    # negative control: the old split rows would have shown one ✅ (the end the values are on the right side of)
    # next to one ❌; the single row fails
    assert _claim(values=values).verdict == "fails"


def test_interval_claim_is_inconclusive_when_the_noise_straddles_an_end():
    c = _claim(values=[-0.70, -0.30, -0.60, -0.40, -0.55])
    assert c.verdict == "inconclusive" and c.ci[0] < -0.65 < c.ci[1]


def test_interval_claim_rejects_an_empty_interval():
    with pytest.raises(ValueError, match="lo < hi"):
        _claim(lo=-0.3, hi=-0.6, values=[-0.5, -0.5, -0.5])


PROPERTY = ("LTC is harder than CTL", "CLC(α/2, α/2) lies between CTL and LTC", "The LTC/CTL bias ratio grows as ε falls",
            "The CTL bias does not depend on ε", "LTC = CTL under random flips", "The naive MLE's error does not vanish",
            "Debiasing beats the naive MLE")
PAPER = ("The LTC/CTL bias ratio ≈ c(ε)", "Error slope in n lies in", "Error slope in ε is ≈ −1",
         "The norm constraint is needed", "bias is linear in α, not √α", "The separation holds beyond our estimator")


def test_reproduce_labels_construction_rows_property_and_keeps_the_ones_that_can_fail_paper(tmp_path):
    cfg = BUDGETS.smoke
    claims = separation(cfg, [0, 1, 2], tmp_path).claims + rates(cfg, [0, 1, 2], tmp_path).claims
    for c in claims:
        want = "property" if c.claim.startswith(PROPERTY) else "paper" if any(p in c.claim for p in PAPER) else None
        assert want is not None, f"unexpected claim {c.claim!r}"
        assert c.kind == want, f"{c.claim!r}: kind {c.kind!r}, expected {want!r}"
        if want == "property" and not c.claim.startswith("LTC = CTL"):
            assert "property:" in c.note, f"{c.claim!r}: the note must say why it is a property"
    texts = [c.claim for c in claims]
    # 2 adversaries × |eps_sep| rows each of LTC > CTL and CLC between, still there with their numbers
    n_cells = 2 * len(cfg.eps_sep)
    assert sum(t.startswith("LTC is harder than CTL") for t in texts) == n_cells
    assert sum(t.startswith("CLC(α/2, α/2)") for t in texts) == n_cells
    # the separation beyond one estimator: 2 estimators × 2 adaptive adversaries; the ratio ≈ c(ε) under both
    assert sum(t.startswith("The separation holds beyond our estimator") for t in texts) == 4
    assert sum(t.startswith("The LTC/CTL bias ratio ≈ c(ε)") for t in texts) == 2
    alpha_rows = [c for c in claims if "bias is linear in α" in c.claim]
    assert len(alpha_rows) == 2 and all(c.baseline == 0.75 for c in alpha_rows)
    assert all(math.isfinite(c.ours) for c in claims)
    # interval claims: one row each (d = dim and d = 10 in n, one in ε), no split "upper/lower bound" rows
    assert sum("Error slope in n" in t for t in texts) == 2 and sum("Error slope in ε" in t for t in texts) == 1
    assert not any("upper bound" in t or "lower bound" in t for t in texts)
    slope = next(c for c in claims if "Error slope in n" in c.claim)
    assert slope.baseline_name == "interval [-0.65, -0.35]" and np.isclose(slope.ours, np.mean(slope.ours_values))
