"""Model selection by p-thinning hold-out (the official scripts' protocol) or the in-sample LSCV.

**p-thinning.** Each split keeps every point in the training set with probability ``p`` (an independent thinning,
so train and test are independent Poisson processes with intensities ``pλ`` and ``(1 − p)λ``). An estimator is fit
on the training points — with ``a·p/(1 − p)`` (``cv_a_scaling="release"``, the released K²IE rule, applied to every
estimator with an ``a``) or ``a`` unchanged (``"none"``) — and its rate ``g = factor·λ̂``, ``factor = (1 − p)/p``, is
scored on the test points:

* least squares (K²IE): ``2 Σ_test g(x) − ∫_T g²`` (an unbiased estimate of ``−∫(g − (1 − p)λ)²`` + const);
* log-likelihood (KIE, Flaxman): ``Σ_test log g(x) − ∫_T g``.

The score is averaged over ``n_splits`` splits (the same splits for every grid point) and maximised over the grid;
non-finite scores are never chosen (:func:`icml25.tuning.select`). The chosen parameters are refit on all points.

**LSCV** (``cv="lscv"``, K²IE only): minimise :meth:`k2ie.K2IE.lscv` over the grid, no splits.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from icml25.tuning import Selection
from icml25.tuning import select as grid_select

from k2ie.errors import K2ieError
from k2ie.window import Window, as_window


@dataclass
class SelectResult:
    """What :func:`select` chose: ``estimator`` (refit on all points), ``params``, ``score``, the icml25
    ``selection`` (every trial, edges), the splits used and the wall time of selection plus refit."""

    estimator: Any
    params: dict[str, Any]
    score: float
    selection: Selection
    seconds: float
    cpu_seconds: float


def thinning_splits(n: int, *, p: float, n_splits: int, seed: int) -> list[np.ndarray]:
    """``n_splits`` boolean masks ``(n,)``: True = training point (kept with probability ``p``)."""
    rng = np.random.default_rng(seed)
    return [rng.random(n) < p for _ in range(n_splits)]


def holdout_score(est, test: np.ndarray, factor: float, kind: str) -> float:
    """Hold-out score of a fitted estimator on ``test`` points (higher is better); see the module docstring."""
    if kind == "ls":
        return float(2.0 * factor * est.predict(test).sum() - factor ** 2 * est.integral_squared())
    if kind == "loglik":
        lam = est.predict(test, clip_negative=True) if len(test) else np.zeros(0)
        with np.errstate(divide="ignore"):
            ll = float(np.sum(np.log(factor * lam)))
        return ll - factor * est.integral()
    raise K2ieError(f"score must be 'ls' or 'loglik', got {kind!r}")


def select(estimator, points: np.ndarray, window: Window | np.ndarray, *, grid: Mapping[str, Sequence[Any]],
           p: float = 0.6, n_splits: int = 5, seed: int = 0, cv: str = "holdout",
           cv_a_scaling: str = "release", score: str | None = None) -> SelectResult:
    """Choose ``estimator``'s parameters over the Cartesian ``grid`` (e.g. ``{"a": [...], "b": [...]}``).

    Args:
        estimator: an unfitted template (``K2IE``, ``KIE``, ``FlaxmanRKHS``): its other parameters are kept.
        points, window: the data.
        grid: parameter name -> candidate values.
        p: thinning probability of the training split, in (0, 1).
        n_splits: hold-out splits (the same for every grid point).
        seed: seed of the splits.
        cv: ``"holdout"`` (p-thinning) or ``"lscv"`` (K²IE's in-sample least-squares CV).
        cv_a_scaling: ``"release"`` (fit the training split with ``a·p/(1−p)``) or ``"none"``.
        score: ``"ls"`` or ``"loglik"``; default the estimator's own (``selection_score``).
    """
    t0, c0 = time.perf_counter(), time.process_time()
    win = as_window(window)
    x = win.check_points(points)
    if not (isinstance(p, (int, float)) and 0.0 < p < 1.0):
        raise K2ieError(f"p must be in (0, 1) (probability of keeping a point for training), got {p!r}")
    if isinstance(n_splits, bool) or not isinstance(n_splits, (int, np.integer)) or n_splits < 1:
        raise K2ieError(f"n_splits must be a positive integer, got {n_splits!r}")
    if cv not in ("holdout", "lscv"):
        raise K2ieError(f"cv must be 'holdout' or 'lscv', got {cv!r}")
    if cv_a_scaling not in ("release", "none"):
        raise K2ieError(f"cv_a_scaling must be 'release' or 'none', got {cv_a_scaling!r}")
    if len(x) == 0:
        raise K2ieError("selection needs data: points is empty (fit alone gives λ̂ ≡ 0)")
    if not grid:
        raise K2ieError("grid must name at least one parameter, e.g. {'a': [...], 'b': [...]}")
    allowed = estimator.get_params()
    for k, vals in grid.items():
        if k not in allowed:
            raise K2ieError(f"grid names {k!r}, which {type(estimator).__name__} does not have; allowed: "
                            f"{sorted(allowed)}")
        if len(list(vals)) == 0:
            raise K2ieError(f"grid[{k!r}] is empty")
    kind = score or estimator.selection_score
    factor = (1.0 - p) / p
    name = type(estimator).__name__

    if cv == "lscv":
        if not hasattr(estimator, "lscv"):
            raise K2ieError(f"cv='lscv' is defined for K2IE only, not {name}")
        if len(x) < 2:
            raise K2ieError(f"LSCV needs at least 2 points, got N={len(x)}")

        def evaluate(params: dict[str, Any]) -> float:
            return -estimator.clone(**params).fit(x, win).lscv()
    else:
        splits = thinning_splits(len(x), p=p, n_splits=n_splits, seed=seed)

        def evaluate(params: dict[str, Any]) -> float:
            fit_params = dict(params)
            if cv_a_scaling == "release" and "a" in allowed:
                fit_params["a"] = fit_params.get("a", allowed["a"]) / factor
            est = estimator.clone(**fit_params)
            scores = []
            for mask in splits:
                est.fit(x[mask], win)
                scores.append(holdout_score(est, x[~mask], factor, kind))
            s = float(np.mean(scores))
            if not math.isfinite(s):
                warnings.warn(f"{name} {params}: non-finite hold-out score, never chosen", stacklevel=2)
            return s

    sel = grid_select(evaluate, {k: list(v) for k, v in grid.items()}, name=name, higher_is_better=True)
    best = estimator.clone(**sel.params).fit(x, win)
    return SelectResult(best, dict(sel.params), float(sel.score), sel, time.perf_counter() - t0,
                        time.process_time() - c0)
