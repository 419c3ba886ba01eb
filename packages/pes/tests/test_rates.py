"""Sample-complexity helpers: N(ε) is last-iterate (the gap must stay below ε) and the exponent recovers a known
power law."""

import math

import numpy as np
from pes.rates import bootstrap_ci, rate_exponent, samples_to_reach


def test_samples_to_reach_is_last_iterate():
    n = [0, 10, 20, 30, 40]
    g = [1.0, 0.05, 0.5, 0.04, 0.01]  # dips below 0.1 at 10 samples but rises again at 20
    out = samples_to_reach(n, g, [0.1, 0.02, 0.001])
    assert out[0] == 30 and out[1] == 40 and math.isnan(out[2])
    first_dip = np.nonzero(np.asarray(g) <= 0.1)[0][0]  # the naive "first time below" would say 10: negative control
    assert n[first_dip] == 10 != out[0]


def test_rate_exponent_recovers_a_power_law():
    eps = np.array([0.3, 0.1, 0.03, 0.01])
    for r in (1.0, 3.0, 5.0):
        samples = np.geomspace(1, 1e12, 2000)
        gaps = samples ** (-1.0 / r)  # N(ε) = ε^-r
        n = samples_to_reach(samples, gaps, eps)
        assert abs(rate_exponent(eps, n) - r) < 0.02
    assert math.isnan(rate_exponent(eps, [10.0, 20.0, np.nan, np.nan]))  # fewer than 3 reached levels


def test_bootstrap_ci_brackets_the_mean_and_skips_nan():
    lo, hi = bootstrap_ci([1.0, 2.0, 3.0, float("nan")])
    assert lo <= 2.0 <= hi and lo >= 1.0 and hi <= 3.0
    assert all(math.isnan(x) for x in bootstrap_ci([float("nan")]))
