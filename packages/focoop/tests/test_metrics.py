import numpy as np
import pytest
from focoop.errors import FOCoOpConfigError
from focoop.metrics import auroc, fpr_at_95_tpr, fpr_at_95_tpr_official
from scipy.stats import norm


@pytest.mark.parametrize("mu", [0.5, 1.5, 3.0])
def test_gaussian_closed_forms(mu):
    rng = np.random.default_rng(0)
    s_id = rng.normal(mu, 1.0, 20000)
    s_ood = rng.normal(0.0, 1.0, 20000)
    assert auroc(s_id, s_ood) == pytest.approx(norm.cdf(mu / np.sqrt(2)), abs=0.01)
    assert fpr_at_95_tpr(s_id, s_ood) == pytest.approx(norm.cdf(1.6449 - mu), abs=0.01)


def test_official_fpr_is_fnr_at_5pct_fpr_and_wrong_for_unequal_variances():
    rng = np.random.default_rng(1)
    s_id = rng.normal(2.0, 0.5, 20000)
    s_ood = rng.normal(0.0, 2.0, 20000)
    true = norm.sf(norm.ppf(0.05, 2.0, 0.5), 0.0, 2.0)  # P(OOD >= 5th pct of ID)
    assert fpr_at_95_tpr(s_id, s_ood) == pytest.approx(true, abs=0.01)
    assert true == pytest.approx(0.278, abs=0.005)
    assert fpr_at_95_tpr_official(s_id, s_ood) > 0.95  # the released code's number


def test_invariances_and_extremes():
    rng = np.random.default_rng(2)
    a, b = rng.normal(1, 1, 500), rng.normal(0, 1, 700)
    assert auroc(-a, -b) == pytest.approx(1 - auroc(a, b))
    assert auroc(np.exp(a), np.exp(b)) == pytest.approx(auroc(a, b))
    assert fpr_at_95_tpr(np.exp(a), np.exp(b)) == pytest.approx(fpr_at_95_tpr(a, b))
    assert auroc([2.0, 3.0], [0.0, 1.0]) == 1.0 and fpr_at_95_tpr([2.0, 3.0], [0.0, 1.0]) == 0.0
    assert fpr_at_95_tpr([0.0, 1.0], [2.0, 3.0]) == 1.0


@pytest.mark.parametrize("bad", [([np.nan, 1.0], [0.0]), ([], [0.0]), (np.zeros((2, 2)), [0.0])])
def test_bad_scores(bad):
    with pytest.raises(FOCoOpConfigError):
        auroc(*bad)
    with pytest.raises(FOCoOpConfigError):
        fpr_at_95_tpr(*bad)
