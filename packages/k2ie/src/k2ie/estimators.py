"""K²IE and the two baselines of the paper, all with ``fit(points, window) -> self``, ``predict(x) -> (n,)``,
``integral(region)`` and ``integral_squared(region)``.

**K²IE** (Kim, Iwata & Fujino, ICML 2025). Least squares with an RKHS penalty on a window ``T``::

    min_f  ∫_T f(x)² dx − 2 Σ_n f(x_n) + a⁻¹ ‖f‖²_{H_k}.

With the *equivalent kernel* ``h``, the solution of the Fredholm equation of the second kind
``h(x, y) + a ∫_T k(x, t) h(t, y) dt = a k(x, y)``, the minimiser is ``λ̂(x) = Σ_n h(x, x_n)``: every dual
coefficient equals 1, nothing is optimised. With random Fourier features ``k ≈ φᵀφ``::

    h(x, y) = φ(x)ᵀ (Φ_T + I/a)⁻¹ φ(y),   Φ_T = ∫_T φφᵀ,
    λ̂(x) = φ(x)ᵀ w,  w = (Φ_T + I/a)⁻¹ Σ_n φ(x_n) = L⁻ᵀ v,  v = Σ_n ψ(x_n),  ψ = L⁻¹φ,  LLᵀ = Φ_T + I/a,

so ``∫_R λ̂ = wᵀ∫_R φ`` and ``∫_R λ̂² = wᵀ Φ_R w`` are closed form over any union of boxes ``R``.

**Edge-corrected KIE** (Diggle 1985): ``λ̂(x) = Σ_n k_b(x, x_n) / ∫_T k_b(x, t) dt``.

**Flaxman et al. (2017)** RKHS estimator ("FIE", permanental process): ``λ = f²``,
``f = Σ_n α_n h(x_n, ·)`` with the same ``h``, ``α`` minimising ``αᵀHα − 2 Σ_n log|(Hα)_n|``, ``H_nm = h(x_n, x_m)``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
from scipy import linalg, optimize

from k2ie.errors import K2ieError
from k2ie.features import (
    RandomFourierFeatures,
    base_kernel,
    cached_gram,
    check_b,
    check_kernel,
    kernel_box_integral,
)
from k2ie.quadrature import nodes_1d, window_nodes
from k2ie.window import Window, as_points, as_window


def _check_a(a: float) -> float:
    if isinstance(a, bool) or not isinstance(a, (int, float, np.floating)) or not np.isfinite(a) or a <= 0:
        raise K2ieError(f"a must be a positive finite number (the regularisation weight γ), got {a!r}")
    return float(a)


def _check_features(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2 or n % 2:
        raise K2ieError(f"n_features must be an even integer >= 2 (cos/sin pairs), got {n!r}")
    return int(n)


class _Estimator:
    """Shared plumbing: parameters as dataclass fields, ``clone``, fitted-state checks, region handling."""

    selection_score = "ls"  # hold-out score used by k2ie.select: "ls" (least squares) or "loglik"

    def get_params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.init}  # type: ignore[arg-type]

    def clone(self, **params: Any):
        """A new, unfitted estimator with some parameters changed."""
        unknown = set(params) - set(self.get_params())
        if unknown:
            raise K2ieError(f"{type(self).__name__} has no parameter(s) {sorted(unknown)}; "
                            f"allowed: {sorted(self.get_params())}")
        return replace(self, **params)  # type: ignore[type-var]

    def _require_fit(self) -> None:
        if getattr(self, "window_", None) is None:
            raise K2ieError(f"{type(self).__name__} is not fitted: call fit(points, window) first")

    def _x(self, x: np.ndarray) -> np.ndarray:
        self._require_fit()
        return as_points(x, self.window_.d, name="x")

    def _region(self, region: Window | np.ndarray | None) -> Window:
        self._require_fit()
        reg = self.window_ if region is None else as_window(region)
        if reg.d != self.window_.d:
            raise K2ieError(f"region has d={reg.d} but the estimator was fitted in d={self.window_.d}")
        return reg

    def _fit_inputs(self, points, window) -> tuple[np.ndarray, Window]:
        win = as_window(window)
        return win.check_points(points), win


@dataclass(eq=False)
class K2IE(_Estimator):
    """K²IE with random Fourier features (see the module docstring for the equations).

    Args:
        kernel: base kernel ``gaussian`` | ``laplace`` | ``cauchy``.
        a: regularisation weight γ (> 0); larger ``a`` means less smoothing, ``a → 0`` gives ``λ̂ → a Σ k``.
        b: inverse length scale, a number or one per dimension (> 0).
        n_features: ``M`` random features (even; ``M/2`` frequencies).
        qmc: scrambled Halton frequencies instead of i.i.d. draws.
        seed: seed of the frequencies.
        lscv_factor: multiply the in-sample LSCV cross term by ``N/(N−1)`` as the released code does (default
            False: the unbiased criterion).

    Fitted attributes: ``w_ (M,)``, ``v_ = Σ_n ψ(x_n) (M,)``, ``chol_`` (lower ``L``), ``points_ (N, d)``,
    ``features_``, ``window_``, ``fit_seconds_``.
    """

    kernel: str = "gaussian"
    a: float = 1.0
    b: float | np.ndarray = 1.0
    n_features: int = 500
    qmc: bool = True
    seed: int = 0
    lscv_factor: bool = False
    window_: Window | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        check_kernel(self.kernel)
        self.a = _check_a(self.a)
        check_b(self.b)
        self.n_features = _check_features(self.n_features)

    def fit(self, points: np.ndarray, window: Window | np.ndarray) -> K2IE:
        """Fit on points ``(N, d)`` observed on ``window``; empty points give ``λ̂ ≡ 0``."""
        t0 = time.perf_counter()
        x, win = self._fit_inputs(points, window)
        self.features_ = RandomFourierFeatures(kernel=self.kernel, b=self.b, d=win.d, n_features=self.n_features,
                                               qmc=self.qmc, seed=self.seed)
        gram = self.gram_ = cached_gram(self.features_, win)
        self._factor(gram)
        self.points_, self.window_ = x, win
        phi = self.features_(x)  # (N, M)
        self.psi_points_ = linalg.solve_triangular(self.chol_, phi.T, lower=True).T  # (N, M): ψ(x_n)
        self.v_ = self.psi_points_.sum(axis=0)
        self.w_ = linalg.solve_triangular(self.chol_, self.v_, lower=True, trans="T")
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _factor(self, gram: np.ndarray) -> None:
        a_mat = gram + np.eye(gram.shape[0]) / self.a
        try:
            self.chol_ = linalg.cholesky(a_mat, lower=True)
        except linalg.LinAlgError as exc:  # pragma: no cover - Φ_T + I/a is positive definite
            raise K2ieError(f"Φ_T + I/a is not positive definite (a={self.a:g} too large?)") from exc

    def psi(self, x: np.ndarray) -> np.ndarray:
        """``ψ(x) = L⁻¹φ(x)``: ``(n, d)`` -> ``(n, M)``; ``h(x, y) = ψ(x)ᵀψ(y)``."""
        x = self._x(x)
        return linalg.solve_triangular(self.chol_, self.features_(x).T, lower=True).T

    def equivalent_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``h(x_i, y_j)``: ``(n, m)``."""
        return self.psi(x) @ self.psi(y).T

    def predict(self, x: np.ndarray, *, clip_negative: bool = False) -> np.ndarray:
        """``λ̂(x) = Σ_n h(x, x_n) = φ(x)ᵀw``: ``(n, d)`` -> ``(n,)``; raw (may be negative) unless
        ``clip_negative`` (for plots and log-likelihoods)."""
        x = self._x(x)
        lam = self.features_(x) @ self.w_
        return np.maximum(lam, 0.0) if clip_negative else lam

    def integral(self, region: Window | np.ndarray | None = None) -> float:
        """``∫_R λ̂ = wᵀ ∫_R φ`` (closed form; ``R`` defaults to the window)."""
        return float(self.w_ @ self.features_.integral(self._region(region)))

    def integral_squared(self, region: Window | np.ndarray | None = None) -> float:
        """``∫_R λ̂² = wᵀ Φ_R w`` (closed form)."""
        gram = self.gram_ if region is None else self.features_.gram_integral(self._region(region))
        return float(self.w_ @ gram @ self.w_)

    def lscv(self) -> float:
        """In-sample least-squares cross-validation (lower is better)::

            LSCV = ∫_T λ̂² − 2 c Σ_n λ̂_{−n}(x_n),  Σ_n λ̂_{−n}(x_n) = Σ_{n≠m} h(x_n, x_m) = ‖v‖² − Σ_n ‖ψ(x_n)‖²,

        ``c = 1`` (unbiased for a Poisson process) or ``N/(N−1)`` with ``lscv_factor=True`` (released code).
        """
        self._require_fit()
        n = len(self.points_)
        if n < 2:
            raise K2ieError(f"LSCV needs at least 2 points, got N={n}")
        cross = float(self.v_ @ self.v_ - np.sum(self.psi_points_ ** 2))
        c = n / (n - 1) if self.lscv_factor else 1.0
        return self.integral_squared() - 2.0 * c * cross


@dataclass(eq=False)
class NystromK2IE(_Estimator):
    """Exact-kernel K²IE: the Fredholm equation solved by Nyström's method (for cross-checks, mainly 1-D).

    With quadrature nodes ``t_j`` and weights ``q_j`` on ``T``, ``g(t) = Σ_n h(t, x_n)`` solves
    ``(I + a K Q) g = a Σ_n k(t, x_n)`` (``K_ij = k(t_i, t_j)``, ``Q = diag(q)``), and
    ``λ̂(x) = a Σ_n k(x, x_n) − a Σ_j q_j k(x, t_j) g_j``.
    """

    kernel: str = "gaussian"
    a: float = 1.0
    b: float | np.ndarray = 1.0
    per_unit: float = 4.0
    order: int = 8
    window_: Window | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        check_kernel(self.kernel)
        self.a = _check_a(self.a)
        check_b(self.b)

    def fit(self, points: np.ndarray, window: Window | np.ndarray) -> NystromK2IE:
        x, win = self._fit_inputs(points, window)
        self.b_ = check_b(self.b, win.d)
        per_unit = max(self.per_unit, float(self.b_.max()))  # resolve the kernel's length scale
        t, q = window_nodes(win, per_unit=per_unit, order=self.order)
        kt = base_kernel(self.kernel, t, t, self.b_)
        rhs = self.a * base_kernel(self.kernel, t, x, self.b_).sum(axis=1) if len(x) else np.zeros(len(t))
        sq = np.sqrt(q)
        sym = np.eye(len(t)) + self.a * (sq[:, None] * kt * sq[None, :])  # Q^½(I + aKQ)Q^-½, symmetric PD
        g = linalg.solve(sym, sq * rhs, assume_a="pos") / sq
        self.nodes_, self.weights_, self.g_ = t, q, g
        self.points_, self.window_ = x, win
        return self

    def predict(self, x: np.ndarray, *, clip_negative: bool = False) -> np.ndarray:
        x = self._x(x)
        direct = base_kernel(self.kernel, x, self.points_, self.b_).sum(axis=1) if len(self.points_) else 0.0
        lam = self.a * direct - self.a * base_kernel(self.kernel, x, self.nodes_, self.b_) @ (self.weights_ * self.g_)
        lam = np.broadcast_to(lam, (len(x),)).astype(np.float64)
        return np.maximum(lam, 0.0) if clip_negative else lam

    def integral(self, region: Window | np.ndarray | None = None) -> float:
        t, q = window_nodes(self._region(region), per_unit=max(self.per_unit, float(self.b_.max())), order=8)
        return float(q @ self.predict(t))

    def integral_squared(self, region: Window | np.ndarray | None = None) -> float:
        t, q = window_nodes(self._region(region), per_unit=max(self.per_unit, float(self.b_.max())), order=8)
        return float(q @ self.predict(t) ** 2)


@dataclass(eq=False)
class KIE(_Estimator):
    """Classical kernel intensity estimator with Diggle's edge correction::

        λ̂(x) = Σ_n k_b(x, x_n) / ∫_T k_b(x, t) dt,

    with exact erf / exp / atan integrals in the denominator (:func:`k2ie.features.kernel_box_integral`). The
    integrals of ``λ̂`` have no closed form and use composite Gauss–Legendre quadrature (``per_unit`` panels per
    unit length, ``order`` nodes each; narrow kernels need a larger ``per_unit``). Selected by hold-out log-likelihood.
    """

    kernel: str = "gaussian"
    b: float | np.ndarray = 1.0
    per_unit: float = 4.0
    order: int = 6
    window_: Window | None = field(default=None, init=False, repr=False)
    selection_score = "loglik"

    def __post_init__(self) -> None:
        check_kernel(self.kernel)
        check_b(self.b)

    def fit(self, points: np.ndarray, window: Window | np.ndarray) -> KIE:
        t0 = time.perf_counter()
        x, win = self._fit_inputs(points, window)
        self.b_ = check_b(self.b, win.d)
        self.points_, self.window_ = x, win
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def edge_correction(self, x: np.ndarray) -> np.ndarray:
        """``∫_T k_b(x, t) dt``: ``(n,)``."""
        return kernel_box_integral(self.kernel, self._x(x), self.window_, self.b_)

    def predict(self, x: np.ndarray, *, clip_negative: bool = False) -> np.ndarray:
        x = self._x(x)
        if not len(self.points_):
            return np.zeros(len(x))
        num = base_kernel(self.kernel, x, self.points_, self.b_).sum(axis=1)
        return num / kernel_box_integral(self.kernel, x, self.window_, self.b_)

    def _box_terms(self, region: Window) -> list[tuple[list[np.ndarray], list[np.ndarray], np.ndarray]]:
        """Per box: 1-D nodes and weights per axis and the edge correction at the tensor nodes (cached)."""
        key = (self.kernel, self.b_.tobytes(), region.boxes.tobytes(), self.window_.boxes.tobytes(),
               self.per_unit, self.order)
        hit = _KIE_CACHE.get(key)
        if hit is not None:
            return hit
        out = []
        for box in region.boxes:
            axes = [nodes_1d(lo, hi, max(2, int(np.ceil(self.per_unit * (hi - lo)))), self.order) for lo, hi in box]
            grids = np.meshgrid(*[ax[0] for ax in axes], indexing="ij")
            flat = np.stack([g.ravel() for g in grids], axis=-1)  # (n_1·…·n_d, d)
            denom = kernel_box_integral(self.kernel, flat, self.window_, self.b_).reshape(grids[0].shape)
            out.append(([ax[0] for ax in axes], [ax[1] for ax in axes], denom))
        if len(_KIE_CACHE) >= 64:
            _KIE_CACHE.pop(next(iter(_KIE_CACHE)))
        _KIE_CACHE[key] = out
        return out

    def _tensor_integral(self, region: Window, power: int) -> float:
        """``∫_R λ̂^power`` by tensor Gauss–Legendre; the product kernel makes the numerator on a tensor grid
        ``Σ_n Π_i K_i[j_i, n]`` (one einsum per box)."""
        if not len(self.points_):
            return 0.0
        total = 0.0
        letters = "ijklmnopqrs"[: self.window_.d]
        spec = ",".join(f"{c}z" for c in letters) + "->" + letters
        for nodes, weights, denom in self._box_terms(region):
            factors = [_kernel_1d(self.kernel, (nodes[i][:, None] - self.points_[None, :, i]) * self.b_[i])
                       for i in range(self.window_.d)]  # each (n_i, N)
            lam = np.einsum(spec, *factors) / denom
            wgt = weights[0]
            for wi in weights[1:]:
                wgt = np.multiply.outer(wgt, wi)
            total += float(np.sum(wgt * lam ** power))
        return total

    def integral(self, region: Window | np.ndarray | None = None) -> float:
        """``∫_R λ̂`` by tensor Gauss–Legendre (``per_unit`` panels per unit length, ``order`` nodes each)."""
        return self._tensor_integral(self._region(region), 1)

    def integral_squared(self, region: Window | np.ndarray | None = None) -> float:
        return self._tensor_integral(self._region(region), 2)


_KIE_CACHE: dict[tuple, list] = {}


def _kernel_1d(kernel: str, z: np.ndarray) -> np.ndarray:
    if kernel == "gaussian":
        return np.exp(-z * z)
    if kernel == "laplace":
        return np.exp(-np.abs(z))
    return 1.0 / (1.0 + z * z)


@dataclass(eq=False)
class FlaxmanRKHS(_Estimator):
    """Flaxman, Teh & Sejdinovic (2017) RKHS intensity estimator ``λ = f²`` with the same equivalent kernel.

    ``f(x) = Σ_n α_n h(x_n, x) = ψ(x)ᵀ Ψᵀα`` (``Ψ (N, M)`` rows ``ψ(x_n)``), ``α`` minimising::

        J(α) = αᵀHα − 2 Σ_n log|(Hα)_n|,   ∇J = 2H(α − 1/(Hα)),   H = ΨΨᵀ,

    from ``α₀ = (N/|T|)^{−1/2}·1``, by L-BFGS (default, run to convergence) or Adam (``optimizer="adam"``, the
    released code's choice: ``lr``, ``max_steps``, stop when the relative change of J < ``tol`` after 100 steps).
    ``∫_R λ̂ = cᵀΦ_R c`` with ``f = φᵀc``, ``c = L⁻ᵀΨᵀα``, is closed form; ``∫_R λ̂²`` uses quadrature.

    Fitted: ``alpha_ (N,)``, ``c_ (M,)``, ``n_iter_``, ``converged_``, ``fit_seconds_``.
    """

    kernel: str = "gaussian"
    a: float = 1.0
    b: float | np.ndarray = 1.0
    n_features: int = 500
    qmc: bool = True
    seed: int = 0
    optimizer: str = "lbfgs"
    lr: float = 1e-2
    max_steps: int = 1000
    tol: float = 1e-7
    window_: Window | None = field(default=None, init=False, repr=False)
    selection_score = "loglik"

    def __post_init__(self) -> None:
        check_kernel(self.kernel)
        self.a = _check_a(self.a)
        check_b(self.b)
        self.n_features = _check_features(self.n_features)
        if self.optimizer not in ("lbfgs", "adam"):
            raise K2ieError(f"optimizer must be 'lbfgs' or 'adam', got {self.optimizer!r}")
        if not (np.isfinite(self.lr) and self.lr > 0):
            raise K2ieError(f"lr must be a positive number, got {self.lr!r}")
        if isinstance(self.max_steps, bool) or not isinstance(self.max_steps, (int, np.integer)) or self.max_steps < 1:
            raise K2ieError(f"max_steps must be a positive integer, got {self.max_steps!r}")

    def fit(self, points: np.ndarray, window: Window | np.ndarray) -> FlaxmanRKHS:
        t0 = time.perf_counter()
        x, win = self._fit_inputs(points, window)
        self.features_ = RandomFourierFeatures(kernel=self.kernel, b=self.b, d=win.d, n_features=self.n_features,
                                               qmc=self.qmc, seed=self.seed)
        gram = self.gram_ = cached_gram(self.features_, win)
        chol = linalg.cholesky(gram + np.eye(gram.shape[0]) / self.a, lower=True)
        self.chol_, self.points_, self.window_ = chol, x, win
        psi = linalg.solve_triangular(chol, self.features_(x).T, lower=True).T  # (N, M)
        self.psi_points_ = psi
        n = len(x)
        if n == 0:
            self.alpha_ = np.zeros(0)
            self.n_iter_, self.converged_ = 0, True
        else:
            alpha0 = np.full(n, (n / win.volume) ** -0.5)
            if self.optimizer == "lbfgs":
                self.alpha_, self.n_iter_, self.converged_ = self._lbfgs(psi, alpha0)
            else:
                self.alpha_, self.n_iter_, self.converged_ = self._adam(psi, alpha0)
        beta = psi.T @ self.alpha_ if n else np.zeros(self.n_features)
        self.c_ = linalg.solve_triangular(chol, beta, lower=True, trans="T")
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    @staticmethod
    def objective(alpha: np.ndarray, psi: np.ndarray) -> tuple[float, np.ndarray]:
        """``J(α)`` and ``∇J = 2H(α − 1/(Hα))`` in ``O(NM)`` (``H = ΨΨᵀ`` never formed)."""
        beta = psi.T @ alpha  # (M,)
        y = psi @ beta  # Hα, (N,)
        ay = np.abs(y)
        with np.errstate(divide="ignore"):
            j = float(beta @ beta - 2.0 * np.sum(np.log(ay)))
        inv = 1.0 / np.where(ay > 1e-300, y, 1e-300)
        grad = 2.0 * (y - psi @ (psi.T @ inv))
        return (j if np.isfinite(j) else np.inf), grad

    def _lbfgs(self, psi, alpha0):
        res = optimize.minimize(self.objective, alpha0, args=(psi,), jac=True, method="L-BFGS-B",
                                options={"maxiter": self.max_steps, "ftol": 1e-11, "gtol": 1e-7})
        return res.x, int(res.nit), bool(res.success)

    def _adam(self, psi, alpha0):
        alpha = alpha0.copy()
        m = np.zeros_like(alpha)
        s = np.zeros_like(alpha)
        b1, b2, eps = 0.9, 0.999, 1e-8
        j_old, _ = self.objective(alpha, psi)
        for step in range(1, self.max_steps + 1):
            _, g = self.objective(alpha, psi)
            m = b1 * m + (1 - b1) * g
            s = b2 * s + (1 - b2) * g * g
            alpha = alpha - self.lr * (m / (1 - b1 ** step)) / (np.sqrt(s / (1 - b2 ** step)) + eps)
            j_new, _ = self.objective(alpha, psi)
            if step > 100 and abs(j_new - j_old) < self.tol * abs(j_old):
                return alpha, step, True
            j_old = j_new
        return alpha, self.max_steps, False

    def latent(self, x: np.ndarray) -> np.ndarray:
        """``f(x) = φ(x)ᵀc``: ``(n,)``."""
        return self.features_(self._x(x)) @ self.c_

    def predict(self, x: np.ndarray, *, clip_negative: bool = False) -> np.ndarray:
        return self.latent(x) ** 2

    def integral(self, region: Window | np.ndarray | None = None) -> float:
        """``∫_R f² = cᵀΦ_R c`` (closed form)."""
        gram = self.gram_ if region is None else self.features_.gram_integral(self._region(region))
        return float(self.c_ @ gram @ self.c_)

    def integral_squared(self, region: Window | np.ndarray | None = None) -> float:
        reg = self._region(region)
        t, q = window_nodes(reg, per_unit=4.0 * max(1.0, float(np.max(self.features_.b))), order=6)
        return float(q @ self.predict(t) ** 2)

    def gradient_at_fit(self) -> np.ndarray:
        """``∇J`` at the fitted ``α`` (zero at the optimum)."""
        return self.objective(self.alpha_, self.psi_points_)[1]
