"""Three-valued verdicts from per-seed numbers: ``holds``, ``inconclusive`` or ``fails``.

A claim says "ours beats the baseline by more than ``margin``" on a metric (``margin < 0`` reads "ours is not worse
than the baseline by more than ``|margin|``"). With the signed difference ``d = ours - baseline`` (``baseline - ours``
when lower is better) the verdict tests two one-sided hypotheses at level ``alpha`` (default 0.05):

* ``holds``  when ``H0: E[d] <= margin`` is rejected (p = ``p_value`` < alpha),
* ``fails``  when ``H0: E[d] >= margin`` is rejected (the evidence says the claim is false),
* ``inconclusive`` otherwise: the difference is inside the noise.

Tests (``test=``):

* ``"welch"``   one-sided Welch t-test (unequal variances, Welch-Satterthwaite df); ``paired=True`` uses the
  one-sample t-test of the per-seed differences instead (both sides measured on the same seeds, same order).
* ``"bootstrap"`` a seeded percentile bootstrap of the mean difference (paired: resample the per-seed differences;
  unpaired: resample each side on its own); ``holds`` when the ``alpha`` quantile is above ``margin``, ``fails``
  when the ``1 - alpha`` quantile is below it. Same seed, same numbers.

The interval reported in ``ci`` is ``[lower, upper]``: the two one-sided ``1 - alpha`` bounds of the difference
(together a ``1 - 2 alpha`` two-sided interval), so the verdict can be read off it: ``lower > margin`` holds,
``upper < margin`` fails.

Small samples: fewer than :data:`MIN_SEEDS` values on either side give ``inconclusive`` unless the comparison is
``deterministic`` (the numbers do not depend on the seed, e.g. exact counts or closed forms): then the means are
compared directly. Zero variance on both sides (every seed gave the same number) is treated as deterministic too.
Ties: when the means are exactly equal up to the margin in a noise-free comparison (0 vs 0 at a floor on every seed,
1.0 vs 1.0 at a ceiling) the verdict is ``inconclusive``, never ``fails``: a floor tie says nothing about the claim.
NaN and infinite values are rejected with a :class:`ValueError`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MIN_SEEDS = 3
"""The smallest number of per-seed values on each side for a statistical verdict."""

VERDICTS = ("holds", "inconclusive", "fails")
TESTS = ("welch", "bootstrap")


@dataclass(frozen=True)
class Verdict:
    """The outcome of :func:`verdict`: the verdict, its test, the p-value of "holds" and the interval of ``d``."""

    verdict: str
    test: str
    p_value: float | None
    ci: tuple[float, float] | None
    diff: float
    """Mean signed difference (positive = ours better)."""


def _values(name: str, xs: float | Sequence[float]) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(xs, dtype=np.float64))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a number or a non-empty 1-D sequence of numbers, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values: {arr.tolist()}")
    return arr


def _exact(diff: float, margin: float, test: str) -> Verdict:
    """Noise-free comparison: the means decide; an exact tie with the margin (0 vs 0 at a floor, 1.0 vs 1.0 at a
    ceiling) is ``inconclusive``: equal numbers say nothing either way."""
    if diff == margin:
        v = "inconclusive"
    else:
        v = "holds" if diff > margin else "fails"
    return Verdict(verdict=v, test=test, p_value=None, ci=(diff, diff), diff=diff)


def verdict(
    ours: float | Sequence[float],
    baseline: float | Sequence[float],
    *,
    higher_is_better: bool = True,
    margin: float = 0.0,
    paired: bool = False,
    test: str = "welch",
    deterministic: bool = False,
    alpha: float = 0.05,
    n_boot: int = 10_000,
    seed: int = 0,
) -> Verdict:
    """Verdict of "ours beats baseline by more than ``margin``" from per-seed values (see the module docstring)."""
    if test not in TESTS:
        raise ValueError(f"test must be one of {TESTS}, got {test!r}")
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    if not math.isfinite(margin):
        raise ValueError(f"margin must be finite, got {margin}")
    o, b = _values("ours", ours), _values("baseline", baseline)
    sign = 1.0 if higher_is_better else -1.0
    diff = float(sign * (o.mean() - b.mean()))
    if paired and o.size != b.size:
        raise ValueError(f"paired comparison needs as many ours as baseline values, got {o.size} and {b.size}")
    if deterministic:
        return _exact(diff, margin, "deterministic")
    if o.size < MIN_SEEDS or b.size < MIN_SEEDS:
        return Verdict(verdict="inconclusive", test=f"n<{MIN_SEEDS}", p_value=None, ci=None, diff=diff)
    if paired:
        d = sign * (o - b)
        if np.ptp(d) == 0.0:
            return _exact(diff, margin, "zero-variance")
        if test == "welch":
            return _t_verdict(diff, margin, se=float(d.std(ddof=1) / math.sqrt(d.size)), df=d.size - 1,
                              alpha=alpha, name="paired-t")
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, d.size, size=(n_boot, d.size))
        boots = d[idx].mean(axis=1)
        return _boot_verdict(diff, margin, boots, alpha, "paired-bootstrap")
    if np.ptp(o) == 0.0 and np.ptp(b) == 0.0:
        return _exact(diff, margin, "zero-variance")
    if test == "welch":
        vo, vb = o.var(ddof=1) / o.size, b.var(ddof=1) / b.size
        se = math.sqrt(vo + vb)
        df = (vo + vb) ** 2 / ((vo**2 / (o.size - 1) if vo else 0.0) + (vb**2 / (b.size - 1) if vb else 0.0))
        return _t_verdict(diff, margin, se=se, df=df, alpha=alpha, name="welch")
    rng = np.random.default_rng(seed)
    bo = o[rng.integers(0, o.size, size=(n_boot, o.size))].mean(axis=1)
    bb = b[rng.integers(0, b.size, size=(n_boot, b.size))].mean(axis=1)
    return _boot_verdict(diff, margin, sign * (bo - bb), alpha, "bootstrap")


def _t_verdict(diff: float, margin: float, *, se: float, df: float, alpha: float, name: str) -> Verdict:
    from scipy import stats

    t = (diff - margin) / se
    p = float(stats.t.sf(t, df))  # H0: E[d] <= margin
    q = float(stats.t.ppf(1.0 - alpha, df))
    lo, hi = diff - q * se, diff + q * se
    v = "holds" if lo > margin else "fails" if hi < margin else "inconclusive"
    return Verdict(verdict=v, test=name, p_value=p, ci=(lo, hi), diff=diff)


def _boot_verdict(diff: float, margin: float, boots: np.ndarray, alpha: float, name: str) -> Verdict:
    lo, hi = (float(x) for x in np.quantile(boots, [alpha, 1.0 - alpha]))
    p = float((np.count_nonzero(boots <= margin) + 1) / (boots.size + 1))
    v = "holds" if lo > margin else "fails" if hi < margin else "inconclusive"
    return Verdict(verdict=v, test=name, p_value=p, ci=(lo, hi), diff=diff)


def threshold_verdict(
    values: float | Sequence[float],
    threshold: float,
    *,
    higher_is_better: bool = True,
    deterministic: bool = False,
    test: str = "welch",
    alpha: float = 0.05,
    seed: int = 0,
) -> Verdict:
    """Verdict of "the measured values are above ``threshold``" (below, when lower is better).

    A one-sample version of :func:`verdict`: the baseline is the fixed number ``threshold`` (a target such as
    "≥ 800 decisions/s"), so only ``values`` carries noise.
    """
    v = _values("values", values)
    if not math.isfinite(threshold):
        raise ValueError(f"threshold must be finite, got {threshold}")
    sign = 1.0 if higher_is_better else -1.0
    d = sign * (v - threshold)
    return verdict(d, np.zeros_like(d), margin=0.0, paired=True, test=test, deterministic=deterministic,
                   alpha=alpha, seed=seed)
