"""The debiased logistic loss and its norm-constrained minimiser (Zhou, Wu & Orabona, ICML 2025).

Linear Bradley–Terry: ``x = φ(s, a¹) − φ(s, a⁰)`` and ``P(y = 1 | x) = σ(θ*ᵀx)``, so reward learning (RLHF) and DPO
with a log-linear policy both reduce to logistic regression on ``(x, y)``. With privatized labels ``z`` the
estimator minimises, over the ball ``‖θ‖ ≤ B``, the *debiased* loss

    L̂(θ) = (1/n) Σᵢ [ log(1 + exp(θᵀxᵢ)) − ŷᵢ θᵀxᵢ ] + (λ/2) ‖θ‖²,      ŷᵢ = (zᵢ − ρ) / (1 − 2ρ)

which, because the logistic loss is linear in the label, equals the rDPO loss
``[(1 − ρ) ℓ(θ; x, z) − ρ ℓ(θ; x, 1 − z)] / (1 − 2ρ)`` with ``ℓ(θ; x, y) = log(1 + e^{θᵀx}) − y θᵀx`` (trl's
``DPOConfig(loss_type=["robust"], label_smoothing=ρ)``). Derivatives (shapes ``x [n, d]``, ``θ [d]``)::

    ∇L̂ = (1/n) Xᵀ (σ(Xθ) − ŷ) + λθ                  (linear in ŷ)
    ∇²L̂ = (1/n) Xᵀ diag(σ'(Xθ)) X + λI               (PSD, independent of ŷ)

ŷ can be negative or above 1, so without the norm constraint L̂ can be unbounded below (small n, small ε): the
constraint is part of the estimator. The minimiser is found by damped Newton; when the unconstrained minimiser
does not exist or lies outside the ball, the KKT point on the sphere is found exactly: ``θ(μ) = argmin L̂ + μ/2‖θ‖²``
with the multiplier μ > 0 solving ``‖θ(μ)‖ = B`` (safeguarded Newton on ``1/‖θ(μ)‖ − 1/B``, as in trust-region
solvers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

from private_robust_align.errors import (
    PrivateRobustAlignError,
    check_epsilon,
    check_features,
    check_l2,
    check_labels,
    check_radius,
)
from private_robust_align.mechanism import debias_labels, flip_rate


# ---------------------------------------------------------------------------------------------- loss and derivatives
def logistic_loss(theta: np.ndarray, x: np.ndarray, labels: np.ndarray, *, l2: float = 0.0) -> float:
    """``mean[log(1 + e^{θᵀx}) − label · θᵀx] + λ/2‖θ‖²`` for any real labels (ŷ or 0/1)."""
    m = x @ theta
    return float(np.mean(np.logaddexp(0.0, m) - labels * m) + 0.5 * l2 * theta @ theta)


def gradient(theta: np.ndarray, x: np.ndarray, labels: np.ndarray, *, l2: float = 0.0) -> np.ndarray:
    """``(1/n) Xᵀ(σ(Xθ) − labels) + λθ``, shape ``[d]``."""
    return x.T @ (expit(x @ theta) - labels) / x.shape[0] + l2 * theta


def hessian(theta: np.ndarray, x: np.ndarray, *, l2: float = 0.0) -> np.ndarray:
    """``(1/n) Xᵀ diag(σ'(Xθ)) X + λI``, shape ``[d, d]`` (no label argument: it does not depend on ŷ)."""
    p = expit(x @ theta)
    w = p * (1.0 - p)
    return (x.T * w) @ x / x.shape[0] + l2 * np.eye(x.shape[1])


def rdpo_loss(margins: np.ndarray, z: np.ndarray, *, rho: float) -> np.ndarray:
    """Per-pair rDPO loss ``[(1 − ρ) ℓ(m, z) − ρ ℓ(m, 1 − z)] / (1 − 2ρ)`` with ``ℓ(m, y) = −log σ((2y − 1) m)``.

    ``margins [n]`` are ``θᵀx`` (or β times the DPO log-ratio difference); ``z [n]`` are the observed labels.
    For z = 1 this is trl's ``robust`` loss ``(−(1 − ρ) log σ(m) + ρ log σ(−m)) / (1 − 2ρ)``.
    """
    m = np.asarray(margins, dtype=np.float64)
    s = 2.0 * np.asarray(z, dtype=np.float64) - 1.0
    clean = np.logaddexp(0.0, -s * m)
    flipped = np.logaddexp(0.0, s * m)
    return ((1.0 - rho) * clean - rho * flipped) / (1.0 - 2.0 * rho)


# ---------------------------------------------------------------------------------------------- the solver
@dataclass
class SolveInfo:
    """How the minimiser was found: Newton iterations, whether the ball constraint is active, the multiplier μ."""

    iterations: int = 0
    converged: bool = False
    active: bool = False
    multiplier: float = 0.0
    history: list[float] = field(default_factory=list)


def _newton(x: np.ndarray, yhat: np.ndarray, ridge: float, theta: np.ndarray, *, tol: float, max_iter: int,
            cap: float, info: SolveInfo) -> tuple[np.ndarray, bool]:
    """Damped Newton on ``L̂ + ridge/2 ‖θ‖²`` from ``theta``; stops early (not converged) if ``‖θ‖ > cap``.

    The margins ``m = Xθ`` are carried along (one matrix-vector product per trial step)."""
    n, d = x.shape
    eye = np.eye(d)

    def objective(m: np.ndarray, th: np.ndarray) -> float:
        return float(np.mean(np.logaddexp(0.0, m) - yhat * m) + 0.5 * ridge * th @ th)

    m = x @ theta
    f = objective(m, theta)
    for _ in range(max_iter):
        p = expit(m)
        g = x.T @ (p - yhat) / n + ridge * theta
        if np.linalg.norm(g) <= tol:
            return theta, True
        h = (x.T * (p * (1.0 - p))) @ x / n + ridge * eye
        try:
            step = np.linalg.solve(h + 1e-14 * np.trace(h) / d * eye, g)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(h, g, rcond=None)[0]
        xs = x @ step
        dec = float(g @ step)
        t = 1.0
        for _ls in range(60):  # Armijo backtracking
            cand, mc = theta - t * step, m - t * xs
            fc = objective(mc, cand)
            if fc <= f - 1e-4 * t * dec or t < 1e-12:
                break
            t *= 0.5
        info.iterations += 1
        if not fc < f and t < 1e-12:  # no more progress possible in float64
            return cand, bool(np.linalg.norm(gradient(cand, x, yhat, l2=ridge)) <= 1e3 * tol)
        if not (np.isfinite(cand).all() and math.isfinite(fc)):
            return theta, False
        theta, m, f = cand, mc, fc
        if np.linalg.norm(theta) > cap:
            return theta, False
    return theta, bool(np.linalg.norm(gradient(theta, x, yhat, l2=ridge)) <= tol)


def minimize_debiased(x: np.ndarray, yhat: np.ndarray, *, radius: float = math.inf, l2: float = 0.0,
                      tol: float = 1e-10, max_iter: int = 200) -> tuple[np.ndarray, SolveInfo]:
    """argmin over ``‖θ‖ ≤ radius`` of ``mean[log(1 + e^{θᵀx}) − ŷ θᵀx] + l2/2 ‖θ‖²`` (float64).

    ``radius = inf`` is the unconstrained estimator: if the loss is unbounded below the iterates grow until
    ``max_iter`` and the returned ``SolveInfo.converged`` is False.
    """
    with np.errstate(over="ignore", invalid="ignore"):  # a diverging unconstrained fit may overflow: reported
        return _minimize(x, yhat, radius=radius, l2=l2, tol=tol, max_iter=max_iter)


def _minimize(x: np.ndarray, yhat: np.ndarray, *, radius: float, l2: float, tol: float,
              max_iter: int) -> tuple[np.ndarray, SolveInfo]:
    n, d = x.shape
    info = SolveInfo()
    theta0 = np.zeros(d)
    cap = math.inf if math.isinf(radius) else 4.0 * radius + 10.0
    theta, ok = _newton(x, yhat, l2, theta0, tol=tol, max_iter=max_iter, cap=cap, info=info)
    if math.isinf(radius) or (ok and np.linalg.norm(theta) <= radius):
        info.converged = ok
        return theta, info
    # The constraint is active: find μ > 0 with ‖θ(μ)‖ = B, θ(μ) = argmin L̂ + μ/2‖θ‖² (strongly convex for μ > 0).
    info.active = True
    g0 = np.linalg.norm(gradient(theta0, x, yhat, l2=0.0))
    lo, hi = 0.0, max(g0 / radius, 1e-12)  # ‖θ(μ)‖ ≤ ‖∇L̂(0)‖ / (λ + μ) ≤ B at μ = hi
    if ok:  # θ(0) exists and lies outside the ball: start Newton on μ from the left, at μ = 0
        mu = 0.0
    else:   # no unconstrained minimiser within reach: start from the right end of the bracket
        mu, theta = hi, np.zeros(d)
        theta, _ok = _newton(x, yhat, l2 + mu, theta, tol=tol, max_iter=max_iter, cap=math.inf, info=info)
    for _ in range(100):
        nt = np.linalg.norm(theta)
        info.history.append(mu)
        if abs(nt - radius) <= 1e-10 * radius:
            break
        if nt > radius:
            lo = mu
        else:
            hi = mu
        if hi - lo <= 1e-15 * max(hi, 1e-300):
            break
        # Newton on φ(μ) = 1/‖θ(μ)‖ − 1/B, φ'(μ) = θᵀ H_μ⁻¹ θ / ‖θ‖³ (dθ/dμ = −H_μ⁻¹ θ)
        h = hessian(theta, x, l2=l2 + mu)
        q = float(theta @ np.linalg.solve(h, theta))
        new = mu - (1.0 / nt - 1.0 / radius) * nt**3 / q if q > 0 and nt > 0 else math.nan
        if not (lo < new < hi):
            new = math.sqrt(lo * hi) if lo > 0 else hi / 10.0
        mu = new
        theta, _ok = _newton(x, yhat, l2 + mu, theta, tol=tol, max_iter=max_iter, cap=math.inf, info=info)
    nt = np.linalg.norm(theta)
    if nt > radius:
        theta = theta * (radius / nt)
    info.multiplier = mu
    info.converged = bool(abs(np.linalg.norm(theta) - radius) <= 1e-8 * radius)
    return theta, info


# ---------------------------------------------------------------------------------------------- estimators
class DebiasedLogistic:
    """The private and robust estimator: minimise the debiased logistic loss over ``‖θ‖ ≤ B``.

    ``DebiasedLogistic(epsilon=1.0, radius=2.0, l2=0.0).fit(x, z).theta_`` with ``x [n, d]`` the feature
    differences and ``z [n]`` the released (privatized, possibly corrupted) labels in {0, 1}. ``epsilon = inf``
    (ρ = 0) is the ordinary constrained MLE; ``radius = inf`` drops the norm constraint (a baseline: the loss may
    then be unbounded below). ``debias=False`` fits the naive MLE on ``z`` (no debiasing; a baseline).
    """

    def __init__(self, *, epsilon: float, radius: float = 2.0, l2: float = 0.0, debias: bool = True,
                 tol: float = 1e-10, max_iter: int = 200) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.radius = check_radius(radius)
        self.l2 = check_l2(l2)
        self.debias = bool(debias)
        if not (tol > 0 and max_iter >= 1):
            raise PrivateRobustAlignError(f"tol must be > 0 and max_iter >= 1, got {tol}, {max_iter}")
        self.tol, self.max_iter = float(tol), int(max_iter)

    @property
    def rho(self) -> float:
        """The flip rate ρ(ε) the labels are debiased with."""
        return flip_rate(self.epsilon)

    def labels(self, z: np.ndarray) -> np.ndarray:
        """The labels the loss uses: ŷ (debiased) or z itself (naive)."""
        return debias_labels(z, epsilon=self.epsilon) if self.debias else check_labels(z, name="z").astype(float)

    def fit(self, x: np.ndarray, z: np.ndarray) -> DebiasedLogistic:
        x = check_features(x)
        z = check_labels(z, n=x.shape[0], name="z")
        self.theta_, self.info_ = minimize_debiased(x, self.labels(z), radius=self.radius, l2=self.l2,
                                                    tol=self.tol, max_iter=self.max_iter)
        self.converged_ = self.info_.converged
        return self

    def loss(self, x: np.ndarray, z: np.ndarray, theta: np.ndarray | None = None) -> float:
        """The (debiased) objective at ``theta`` (default: the fitted θ̂)."""
        x = check_features(x)
        z = check_labels(z, n=x.shape[0], name="z")
        th = self.theta_ if theta is None else np.asarray(theta, dtype=np.float64)
        return logistic_loss(th, x, self.labels(z), l2=self.l2)

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """P(a¹ preferred) = σ(θ̂ᵀx), shape ``[n]``."""
        return expit(check_features(x) @ self.theta_)


def oracle_mle(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The oracle baseline: scikit-learn's unpenalised logistic regression (no intercept) on the *clean* labels.

    ``LogisticRegression(C=inf, fit_intercept=False)`` is the spelling of ``penalty=None`` in scikit-learn ≥ 1.8
    (``newton-cholesky``: exact to ``tol`` in a few iterations at small d).
    """
    import warnings

    from sklearn.linear_model import LogisticRegression

    x = check_features(x)
    y = check_labels(y, n=x.shape[0], name="y")
    if np.unique(y).size < 2:
        raise PrivateRobustAlignError("the oracle MLE needs both labels 0 and 1 in y")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LogisticRegression(C=np.inf, fit_intercept=False, solver="newton-cholesky", tol=1e-10,
                                   max_iter=200).fit(x, y)
    return model.coef_[0].astype(np.float64)


class TrimmedDebiasedLogistic:
    """A trimmed (least-trimmed-loss style) version of :class:`DebiasedLogistic`: fit, drop the ``⌈trim·n⌉`` pairs
    whose debiased residual ``|ŷᵢ − σ(θ̂ᵀxᵢ)|`` is largest, refit on the rest; ``iterations`` rounds.

    A standard robust answer to corrupted labels (outlier removal by loss), used to show that the LTC-vs-CTL
    separation is not an artefact of one estimator. ``trim`` in [0, 0.5)."""

    def __init__(self, *, epsilon: float, radius: float = 2.0, l2: float = 0.0, trim: float = 0.02,
                 iterations: int = 3) -> None:
        if not 0.0 <= trim < 0.5:
            raise PrivateRobustAlignError(f"trim must lie in [0, 0.5), got {trim}")
        if iterations < 1:
            raise PrivateRobustAlignError(f"iterations must be >= 1, got {iterations}")
        self.base = DebiasedLogistic(epsilon=epsilon, radius=radius, l2=l2)
        self.trim, self.iterations = float(trim), int(iterations)

    def fit(self, x: np.ndarray, z: np.ndarray) -> TrimmedDebiasedLogistic:
        x = check_features(x)
        z = check_labels(z, n=x.shape[0], name="z")
        yhat = self.base.labels(z)
        keep = np.ones(x.shape[0], dtype=bool)
        k = int(math.ceil(self.trim * x.shape[0]))
        for it in range(self.iterations):
            if it > 0:  # drop the k pairs the previous fit explains worst (their debiased residual)
                resid = np.abs(yhat - expit(x @ self.base.theta_))  # [n]
                keep = np.ones(x.shape[0], dtype=bool)
                keep[np.argsort(resid)[-k:]] = False
            self.base.fit(x[keep], z[keep])
            if k == 0:
                break
        self.theta_ = self.base.theta_
        self.kept_ = keep  # the pairs the final fit used
        return self


class MedianOfMeansLogistic:
    """Median of means: :class:`DebiasedLogistic` fitted on ``blocks`` disjoint random blocks of the pairs, combined
    by the geometric median of the block estimates (Weiszfeld's iteration): a corrupted pair can move only the
    block it falls in. ``blocks >= 1`` (1 = the plain estimator)."""

    def __init__(self, *, epsilon: float, radius: float = 2.0, l2: float = 0.0, blocks: int = 9,
                 seed: int = 0) -> None:
        if blocks < 1:
            raise PrivateRobustAlignError(f"blocks must be >= 1, got {blocks}")
        self.base = DebiasedLogistic(epsilon=epsilon, radius=radius, l2=l2)
        self.blocks, self.seed = int(blocks), int(seed)

    def fit(self, x: np.ndarray, z: np.ndarray) -> MedianOfMeansLogistic:
        x = check_features(x)
        z = check_labels(z, n=x.shape[0], name="z")
        if x.shape[0] < 2 * self.blocks:
            raise PrivateRobustAlignError(f"median of means needs n >= 2·blocks = {2 * self.blocks}, got {x.shape[0]}")
        perm = np.random.default_rng(self.seed).permutation(x.shape[0])
        est = np.stack([self.base.fit(x[b], z[b]).theta_ for b in np.array_split(perm, self.blocks)])  # [K, d]
        self.block_thetas_ = est
        self.theta_ = geometric_median(est)
        return self


def geometric_median(points: np.ndarray, *, tol: float = 1e-10, max_iter: int = 500) -> np.ndarray:
    """The point ``[d]`` minimising the sum of Euclidean distances to the rows of ``points [K, d]`` (Weiszfeld)."""
    p = np.asarray(points, dtype=np.float64)
    m = p.mean(0)
    for _ in range(max_iter):
        dist = np.maximum(np.linalg.norm(p - m, axis=1), 1e-12)
        w = 1.0 / dist
        new = (w[:, None] * p).sum(0) / w.sum()
        if np.linalg.norm(new - m) < tol:
            return new
        m = new
    return m
