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
from scipy import linalg

from k2ie.errors import K2ieError
from k2ie.features import RandomFourierFeatures, base_kernel, cached_gram, kernel_box_integral
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
           cv_a_scaling: str = "release", score: str | None = None, fast: bool = True,
           extend: int = 0) -> SelectResult:
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
        fast: share the work that does not depend on the split, for K²IE and FIE alike: K²IE's least-squares
            hold-out through :class:`_K2iePath` (one Cholesky per grid point for all splits, ``φ(x)`` once per
            ``b``), FIE's through :class:`_FiePath` (one Cholesky and one ``ψ(x)`` of all points per grid point,
            then one optimisation per split on the rows of its training points), KIE's through :class:`_KiePath`
            (kernel values at the data and quadrature nodes once per bandwidth, masked sums per split). The scores equal the
            refit-per-split ones up to rounding (tests). ``False`` refits the estimator on every split.
        extend: a numeric knob chosen at the edge of its grid gets up to ``extend`` new values beyond that edge
            (geometric step, :func:`icml25.tuning.select`); the same rule for every method.
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

        path = None
        if fast and kind == "ls" and name == "K2IE":
            path = _K2iePath(estimator, x, win, splits, factor)
        elif fast and kind == "loglik" and name == "FlaxmanRKHS":
            path = _FiePath(estimator, x, win, splits, factor)
        elif fast and kind == "loglik" and name == "KIE":
            path = _KiePath(estimator, x, win, splits, factor)

        def evaluate(params: dict[str, Any]) -> float:
            fit_params = dict(params)
            if cv_a_scaling == "release" and "a" in allowed:
                fit_params["a"] = fit_params.get("a", allowed["a"]) / factor
            est = estimator.clone(**fit_params)
            if path is not None:
                scores = path.scores(est)
            else:
                scores = []
                for mask in splits:
                    est.fit(x[mask], win)
                    scores.append(holdout_score(est, x[~mask], factor, kind))
            s = float(np.mean(scores))
            if not math.isfinite(s):
                warnings.warn(f"{name} {params}: non-finite hold-out score, never chosen", stacklevel=2)
            return s

    sel = grid_select(evaluate, {k: list(v) for k, v in grid.items()}, name=name, higher_is_better=True,
                      extend=extend)
    best = estimator.clone(**sel.params).fit(x, win)
    return SelectResult(best, dict(sel.params), float(sel.score), sel, time.perf_counter() - t0,
                        time.process_time() - c0)


class _K2iePath:
    """K²IE's p-thinning hold-out scores without refitting per split.

    K²IE is linear in the data: fitted on a training split, ``w = (Φ_T + I/a)⁻¹ Σ_train φ(x_n)``, so with
    ``s_tr = Σ_train φ``, ``s_te = Σ_test φ`` the least-squares score is ``2 f s_teᵀw − f² wᵀΦ_T w``. One Cholesky
    of ``Φ_T + I/a`` per grid point solves every split at once, and ``φ(x)`` of all points is computed once per
    feature map (per ``b``). Same equations as refitting, fewer passes: ``n_splits`` Cholesky factorisations and
    ``n_splits`` feature evaluations per grid point become one each."""

    def __init__(self, template, x: np.ndarray, win: Window, splits: list[np.ndarray], factor: float) -> None:
        self.template, self.x, self.win, self.factor = template, x, win, factor
        masks = np.stack(splits).astype(np.float64)  # (S, N)
        self.train, self.test = masks, 1.0 - masks
        self._sums: dict[tuple, tuple] = {}

    def scores(self, est) -> list[float]:
        key = (est.kernel, np.asarray(est.b, dtype=float).tobytes(), est.n_features, est.qmc, est.seed)
        if key not in self._sums:  # the grid iterates b innermost: keep the sums of every feature map (S × M each)
            feats = RandomFourierFeatures(kernel=est.kernel, b=est.b, d=self.win.d, n_features=est.n_features,
                                          qmc=est.qmc, seed=est.seed)
            phi = feats(self.x)  # (N, M)
            self._sums[key] = (cached_gram(feats, self.win), self.train @ phi, self.test @ phi)  # (S, M) sums
        gram, s_tr, s_te = self._sums[key]
        self._s_tr, self._s_te = s_tr, s_te
        mat = np.array(gram)  # Φ_T + I/a without building I
        mat.flat[:: mat.shape[0] + 1] += 1.0 / est.a
        chol = linalg.cholesky(mat, lower=True, overwrite_a=True, check_finite=False)
        w = linalg.cho_solve((chol, True), self._s_tr.T, check_finite=False)  # (M, S)
        fit_term = np.einsum("sm,ms->s", self._s_te, w)
        sq = np.einsum("ms,ms->s", w, gram @ w)
        f = self.factor
        return [float(v) for v in 2.0 * f * fit_term - f * f * sq]


class _FiePath:
    """FIE's p-thinning hold-out with the split-independent work done once per grid point.

    For one ``(a, b)``, ``Φ_T + I/a``, its Cholesky factor ``L`` and ``ψ(x_n) = L⁻¹φ(x_n)`` of *all* points do not
    depend on the split; a fit on a training split only needs the rows ``Ψ[train]``. So one factorisation and one
    triangular solve per grid point serve every split (refitting repeats them ``n_splits`` times); ``φ(x)`` is
    computed once per ``b``. The optimisation of ``α`` (L-BFGS or Adam, as configured) runs per split exactly as in
    :meth:`FlaxmanRKHS.fit`, and the score uses ``f(x) = ψ(x)ᵀβ``, ``β = Ψ[train]ᵀα``, ``∫_T f² = cᵀΦ_T c`` with
    ``c = L⁻ᵀβ``: the same numbers as refitting (a test)."""

    def __init__(self, template, x: np.ndarray, win: Window, splits: list[np.ndarray], factor: float) -> None:
        self.x, self.win, self.splits, self.factor = x, win, splits, factor
        self._phi: dict[tuple, tuple] = {}

    def scores(self, est) -> list[float]:
        key = (est.kernel, np.asarray(est.b, dtype=float).tobytes(), est.n_features, est.qmc, est.seed)
        if key not in self._phi:
            feats = RandomFourierFeatures(kernel=est.kernel, b=est.b, d=self.win.d, n_features=est.n_features,
                                          qmc=est.qmc, seed=est.seed)
            self._phi[key] = (cached_gram(feats, self.win), feats(self.x).T)  # Φ_T (M, M), φ(x)ᵀ (M, N)
        gram, phi_t = self._phi[key]
        mat = np.array(gram)
        mat.flat[:: mat.shape[0] + 1] += 1.0 / est.a
        chol = linalg.cholesky(mat, lower=True, overwrite_a=True, check_finite=False)
        psi = linalg.solve_triangular(chol, phi_t, lower=True, check_finite=False).T  # (N, M): ψ(x_n)
        f, out = self.factor, []
        for mask in self.splits:
            tr, te = psi[mask], psi[~mask]
            n = len(tr)
            if n == 0:
                beta = np.zeros(psi.shape[1])
            else:
                alpha0 = np.full(n, (n / self.win.volume) ** -0.5)
                opt = est._lbfgs if est.optimizer == "lbfgs" else est._adam
                alpha = opt(tr, alpha0)[0]
                beta = tr.T @ alpha
            c = linalg.solve_triangular(chol, beta, lower=True, trans="T", check_finite=False)
            lam = (te @ beta) ** 2
            with np.errstate(divide="ignore"):
                ll = float(np.sum(np.log(f * lam)))
            out.append(ll - f * float(c @ gram @ c))
        return out


class _KiePath:
    """The edge-corrected KIE's p-thinning hold-out with the split-independent work done once per bandwidth.

    A KIE fitted on a training split is ``λ̂(x) = Σ_n m_n k_b(x, x_n) / ∫_T k_b(x, t) dt`` with the split's 0/1
    mask ``m``: the kernel values ``k_b(x_i, x_n)`` at the data, the edge corrections and the per-axis kernel values
    at the quadrature nodes of :meth:`KIE.integral` do not depend on the split, so they are computed once per ``b``
    and every split is a masked sum (refitting recomputes them per split). Same quadrature, same numbers (a test)."""

    def __init__(self, template, x: np.ndarray, win: Window, splits: list[np.ndarray], factor: float) -> None:
        self.x, self.win, self.splits, self.factor = x, win, splits, factor
        self.masks = np.stack(splits).astype(np.float64)  # (S, N)

    def scores(self, est) -> list[float]:
        from k2ie.estimators import _kernel_1d

        est.fit(self.x, self.win)  # KIE's fit only stores the data: sets b_ and window_ for the node layout
        x, b, d = self.x, est.b_, self.win.d
        num = self.masks @ base_kernel(est.kernel, x, x, b)  # (S, N): Σ_train k_b(x_i, x_n), kernel symmetric
        lam = num / kernel_box_integral(est.kernel, x, self.win, b)[None, :]  # (S, N) λ̂_split at every point
        letters = "ijklmnopqrs"[:d]
        spec = ",".join(f"{c}z" for c in letters) + ",sz->s" + letters
        integral = np.zeros(len(self.splits))
        for nodes, weights, denom in est._box_terms(self.win):
            factors = [_kernel_1d(est.kernel, (nodes[i][:, None] - x[None, :, i]) * b[i]) for i in range(d)]
            wgt = weights[0]
            for wi in weights[1:]:
                wgt = np.multiply.outer(wgt, wi)
            vals = np.einsum(spec, *factors, self.masks, optimize=True)  # (S, n_1, …, n_d)
            integral += np.sum((wgt / denom)[None] * vals, axis=tuple(range(1, d + 1)))
        f, out = self.factor, []
        for s, mask in enumerate(self.splits):
            with np.errstate(divide="ignore"):
                ll = float(np.sum(np.log(f * lam[s, ~mask])))
            out.append(ll - f * float(integral[s]))
        return out
