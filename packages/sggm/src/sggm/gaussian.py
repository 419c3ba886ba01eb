"""Exact-score Gaussian graph models for the three paradigms and the exact law of the Euler–Maruyama sampler.

Paradigms (the paper's three generation tasks), with the data law and the exact (partial) scores:

1. ``"features"`` — X given a fixed graph A. Feature columns i.i.d. ``x ~ N(0, Σ_A)``, ``Σ_A = (I + αL)⁻¹`` (L
   combinatorial or normalised). Forward ``X_t = a_t X_0 + √v_t Z`` ⇒ ``Σ_t = a_t² Σ_A + v_t I`` and
   ``∇_X log p_t(X | A) = -Σ_t⁻¹ X``. Shapes: ``X [n, F]``.
2. ``"structure"`` — A given fixed features X. Upper-triangle entries independent,
   ``A_ij ~ N(ρ ⟨x_i, x_j⟩, s²)``; ``∇_{A_ij} log p_t = -(A_ij - a_t ρ⟨x_i, x_j⟩)/(a_t² s² + v_t)``; A symmetric with
   zero diagonal; the score is w.r.t. the upper-triangle entries, mirrored.
3. ``"joint"`` — (vec X, upper A) jointly Gaussian: columns of X as in (1) and
   ``A_ij = c (⟨u, x_i⟩ + ⟨u, x_j⟩) + s η_ij`` with ``u = 1/√F`` and coupling ``c``; X is noised by ``sde_x``
   (VP), A by ``sde_a`` (VE by default); the two partial scores ``∇_X log p_t(X, A)``, ``∇_A log p_t(X, A)`` are
   the blocks of ``-Σ_t⁻¹ y``, ``y = (vec X, upper A)``, coupled through the cross-covariance.

The reverse system (Euler–Maruyama from T down to t_min in N steps of ``h = (T - t_min)/N``, ``t_k = T - k h``)

    Y_{k+1} = Y_k + h [ -f_{t_k}(Y_k) + g_{t_k}² ŝ(Y_k, t_k) ] + √(h g_{t_k}²) ξ_k

is linear in Y for an exact score or an ε-perturbed one (``ŝ = s - ε (Y - a_t μ)``, i.e. ``Σ_t⁻¹ → Σ_t⁻¹ + εI``), so
its law stays Gaussian and is propagated exactly:

    m_{k+1} = M_k m_k + b_k,     Σ̂_{k+1} = M_k Σ̂_k M_kᵀ + h diag(g_{t_k}²).

For paradigm 1 every matrix is a function of Σ_A, so in the eigenbasis of L each mode is a scalar recursion (O(n)
per step): ``v_{k+1,i} = m_{k,i}² v_{k,i} + h g²``, ``m_{k,i} = 1 - h f_k - h g² (1/(a² λ_i + v) + ε)``. For the
conditional paradigms inside the joint model, the conditioning block is carried along clean; the KL of the joint
laws of (generated, condition) then equals the expected KL of the conditional laws (chain rule, the condition's
marginal is exact).

Switches that isolate each term of the bound: ``exact_prior=True`` starts from the exact ``p_T`` (no
initialisation error), ``score_error=0`` (no score error), large ``n_steps`` (no discretisation error).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy import linalg as sla

from sggm.errors import SggmError, check_time_grid
from sggm.graphs import Laplacian, as_adjacency, as_features, from_upper, standardize_features, upper
from sggm.graphs import laplacian as laplacian_matrix
from sggm.kl import gaussian_kl
from sggm.sde import VE, VP, check_sde

Paradigm = Literal["features", "structure", "joint"]
PARADIGMS = ("features", "structure", "joint")


@dataclass
class SamplerLaw:
    """The exact output law of the sampler and its KL to the data law.

    ``kl`` = KL(sampler ‖ data), ``kl_reverse`` = KL(data ‖ sampler), both summed over every generated entry (the
    F i.i.d. feature columns of paradigm 1 included); ``entries`` = how many scalar entries are generated
    (``nF``, ``n(n-1)/2`` or both); ``*_per_entry`` divide by it. ``mean``/``cov`` are the sampler's law of the
    generated vector (one feature column for paradigm 1, in node coordinates), ``data_mean``/``data_cov`` the data's.
    """

    kl: float
    kl_reverse: float
    entries: int
    mean: np.ndarray
    cov: np.ndarray
    data_mean: np.ndarray
    data_cov: np.ndarray
    method: str
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def kl_per_entry(self) -> float:
        return self.kl / self.entries

    @property
    def kl_reverse_per_entry(self) -> float:
        return self.kl_reverse / self.entries


def _time_grid(n_steps: int, T: float, t_min: float) -> tuple[np.ndarray, float]:
    check_time_grid(n_steps=n_steps, T=T, t_min=t_min)
    h = (T - t_min) / n_steps
    return T - h * np.arange(n_steps), h


def propagate_diagonal(*, mean: np.ndarray, var: np.ndarray, sde, n_steps: int, T: float, t_min: float = 1e-3,
                       score_error: float = 0.0, exact_prior: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Exact law of the EM sampler for independent scalar Gaussians ``N(mean_i, var_i)`` (the eigenbasis of
    paradigm 1, or the entries of paradigm 2), all noised by one ``sde``. Returns the sampler's mean and variance
    ``[D]`` at ``t_min``. O(D) per step."""
    ts, h = _time_grid(n_steps, T, t_min)
    mean, var = np.asarray(mean, dtype=np.float64), np.asarray(var, dtype=np.float64)
    if exact_prior:
        aT = float(sde.mean_coef(T))
        m, v = aT * mean, aT**2 * var + float(sde.var(T))
    else:
        m, v = np.zeros_like(mean), np.full_like(var, sde.prior_var(T))
    for t in ts:
        a, vt, f, g2 = float(sde.mean_coef(t)), float(sde.var(t)), float(sde.drift_coef(t)), float(sde.g2(t))
        prec = 1.0 / (a * a * var + vt) + score_error
        mk = 1.0 - h * f - h * g2 * prec
        m = mk * m + h * g2 * prec * a * mean
        v = mk * mk * v + h * g2
    return m, v


def propagate_dense(*, mean: np.ndarray, cov: np.ndarray, groups: list[tuple[np.ndarray, Any]],
                    generated: np.ndarray, n_steps: int, T: float, t_min: float = 1e-3, score_error: float = 0.0,
                    exact_prior: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Exact law of the EM sampler for a dense Gaussian ``N(mean, cov)`` over ``y [D]``.

    ``groups``: ``(indices, sde)`` pairs covering the generated coordinates (each noised by its sde);
    ``generated [D]`` (bool): coordinates the sampler generates; the others are the clean condition, drawn from the
    data marginal and carried along. Returns the joint law ``(m [D], C [D, D])`` of (generated, condition) at
    ``t_min``. O(D³) per step.
    """
    ts, h = _time_grid(n_steps, T, t_min)
    mu, sig = np.asarray(mean, dtype=np.float64), np.asarray(cov, dtype=np.float64)
    d = mu.shape[0]
    gen = np.asarray(generated, dtype=bool)
    cond = ~gen

    def coefs(t: float):
        a, v, f, g2 = np.ones(d), np.zeros(d), np.zeros(d), np.zeros(d)
        for idx, sde in groups:
            a[idx], v[idx] = sde.mean_coef(t), sde.var(t)
            f[idx], g2[idx] = sde.drift_coef(t), sde.g2(t)
        return a, v, f, g2

    if exact_prior:
        a, v, _, _ = coefs(T)
        m, c = a * mu, a[:, None] * sig * a[None, :] + np.diag(v)
    else:
        pv = np.zeros(d)
        for idx, sde in groups:
            pv[idx] = sde.prior_var(T)
        m = np.where(gen, 0.0, mu)
        c = np.zeros((d, d))
        c[np.ix_(cond, cond)] = sig[np.ix_(cond, cond)]
        c[gen, gen] = pv[gen]
    eye = np.eye(d)
    for t in ts:
        a, v, f, g2 = coefs(t)
        sig_t = a[:, None] * sig * a[None, :] + np.diag(v)
        prec = sla.cho_solve(sla.cho_factor(sig_t, lower=True), eye)  # Σ_t⁻¹ of the noised (generated, condition)
        prec_hat = prec + score_error * np.diag(gen.astype(np.float64))  # the ε-perturbation acts on generated rows
        # drift on generated rows: -f y + g² ŝ,  ŝ = -prec_hat (y - a μ)  (rows of the generated coordinates)
        lin = -h * (g2[:, None] * prec_hat)
        lin[np.diag_indices(d)] += -h * f
        lin[cond, :] = 0.0
        mk = eye + lin
        bk = np.where(gen, h * g2 * (prec_hat @ (a * mu)), 0.0)
        m = mk @ m + bk
        c = mk @ c @ mk.T + np.diag(np.where(gen, h * g2, 0.0))
    return m, 0.5 * (c + c.T)


def features_law_from_spectrum(laplacian_eigenvalues, *, alpha: float = 1.0, n_features: int = 50, sde=None,
                                n_steps: int, T: float, t_min: float = 1e-3, score_error: float = 0.0,
                                exact_prior: bool = False) -> SamplerLaw:
    """Paradigm 1 from the Laplacian spectrum alone: the exact law of the sampler in the eigenbasis (O(n) per step,
    no eigenvectors), for graphs too large to diagonalise (n = 10⁴ and beyond, e.g. with
    :func:`sggm.graphs.ring_lattice_spectrum`). Same numbers as ``GaussianGraphModel(paradigm="features",
    ...).sampler_law(method="eigen")``; ``mean``/``cov`` are the per-mode mean and variance ``[n]``."""
    mu = np.asarray(laplacian_eigenvalues, dtype=np.float64).reshape(-1)
    if mu.size < 1 or not np.isfinite(mu).all() or (mu < -1e-9).any():
        raise SggmError("laplacian_eigenvalues must be finite and >= 0 (a Laplacian is positive semi-definite)")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha >= 0:
        raise SggmError(f"alpha must be a number >= 0, got {alpha!r}")
    if isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 1:
        raise SggmError(f"n_features must be an integer >= 1, got {n_features!r}")
    if not (isinstance(score_error, (int, float)) and math.isfinite(score_error) and score_error >= 0):
        raise SggmError(f"score_error must be a finite number >= 0, got {score_error!r}")
    sde = sde if sde is not None else VP(1.0, 1.0)
    check_sde("sde", sde)
    lam = 1.0 / (1.0 + float(alpha) * np.clip(mu, 0.0, None))
    m, v = propagate_diagonal(mean=np.zeros(mu.size), var=lam, sde=sde, n_steps=n_steps, T=T, t_min=t_min,
                              score_error=score_error, exact_prior=exact_prior)
    F = n_features
    return SamplerLaw(F * gaussian_kl(m, v, None, lam), F * gaussian_kl(None, lam, m, v), mu.size * F, m, v,
                      np.zeros(mu.size), lam, "spectrum")


class GaussianGraphModel:
    """A Gaussian graph model with closed-form scores for one of the paper's three paradigms.

    Keyword-only: ``paradigm`` (``"features"``, ``"structure"``, ``"joint"``), ``graph`` (networkx graph or dense
    symmetric ``[n, n]``; the fixed graph of paradigm 1, the graph shaping X's covariance in 2 and 3), ``alpha``
    (α ≥ 0 in ``Σ_A = (I + αL)⁻¹``), ``laplacian`` (``"combinatorial"`` or ``"normalized"``), ``coupling`` (c of the
    joint model), ``n_features`` (F), ``features`` (the fixed ``X [n, F]`` of paradigm 2; default: one draw from
    paradigm 1 with ``seed``), ``rho`` and ``noise_std`` (ρ, s of paradigm 2/3), ``standardize`` (feature
    standardisation of the fixed X of paradigm 2), ``sde_x`` / ``sde_a``.
    """

    def __init__(self, *, paradigm: Paradigm = "features", graph: Any, alpha: float = 1.0,
                 laplacian: Laplacian = "combinatorial", coupling: float = 0.0, n_features: int = 50,
                 features: Any = None, rho: float = 1.0, noise_std: float = 1.0, standardize: bool = False,
                 sde_x: VP | VE | None = None, sde_a: VP | VE | None = None, seed: int = 0) -> None:
        if paradigm not in PARADIGMS:
            raise SggmError(f"paradigm must be one of {PARADIGMS}, got {paradigm!r}")
        for name, v in (("alpha", alpha), ("coupling", coupling), ("rho", rho), ("noise_std", noise_std)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise SggmError(f"{name} must be a finite number, got {v!r}")
        if alpha < 0:
            raise SggmError(f"alpha must be >= 0 (so that (I + αL)⁻¹ is positive-definite), got {alpha}")
        if noise_std <= 0:
            raise SggmError(f"noise_std must be > 0, got {noise_std}")
        if isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 1:
            raise SggmError(f"n_features must be an integer >= 1, got {n_features!r}")
        self.paradigm, self.alpha, self.laplacian_kind = paradigm, float(alpha), laplacian
        self.coupling, self.rho, self.noise_std = float(coupling), float(rho), float(noise_std)
        self.adjacency = as_adjacency(graph, name="graph")
        if (self.adjacency < 0).any():
            raise SggmError("graph must have non-negative edge weights")
        self.n = n = self.adjacency.shape[0]
        self.sde_x = sde_x if sde_x is not None else VP(1.0, 1.0)
        self.sde_a = sde_a if sde_a is not None else (VE(0.2, 10.0) if paradigm == "joint" else VP(1.0, 1.0))
        check_sde("sde_x", self.sde_x)
        check_sde("sde_a", self.sde_a)
        self.L = laplacian_matrix(self.adjacency, laplacian)
        mu_eig, U = np.linalg.eigh(self.L)
        self.laplacian_eigenvalues = np.clip(mu_eig, 0.0, None)
        self.eigenvectors = U
        self.lam = 1.0 / (1.0 + self.alpha * self.laplacian_eigenvalues)  # eigenvalues of Σ_A
        self.sigma_graph = (U * self.lam) @ U.T  # Σ_A = (I + αL)⁻¹
        if paradigm == "features":
            self.n_features = n_features
        elif paradigm == "structure":
            if features is None:
                rng = np.random.default_rng(seed)
                features = (U * np.sqrt(self.lam)) @ U.T @ rng.standard_normal((n, n_features))
            x = as_features(features, n, name="features")
            self.features = standardize_features(x) if standardize else x
            self.n_features = self.features.shape[1]
            self.mean_a = self.rho * upper(self.features @ self.features.T)  # [n(n-1)/2]
        else:
            if features is not None:
                raise SggmError("features is only used by paradigm='structure'")
            self.n_features = F = n_features
            e = n * (n - 1) // 2
            iu, ju = np.triu_indices(n, 1)
            w = np.zeros((e, n * F))  # a = c W vec(X) + s η,  vec(X)[i F + f] = X[i, f]
            for k, (i, j) in enumerate(zip(iu, ju)):
                w[k, i * F:(i + 1) * F] += 1.0 / math.sqrt(F)
                w[k, j * F:(j + 1) * F] += 1.0 / math.sqrt(F)
            sx = np.kron(self.sigma_graph, np.eye(F))
            sxa = self.coupling * sx @ w.T
            saa = self.coupling**2 * w @ sx @ w.T + self.noise_std**2 * np.eye(e)
            self.joint_cov = np.block([[sx, sxa], [sxa.T, saa]])
            self.dim_x, self.dim_a = n * F, e

    # ------------------------------------------------------------------ scores
    def _check(self, X, A):
        X = None if X is None else np.asarray(X, dtype=np.float64)
        A = None if A is None else np.asarray(A, dtype=np.float64)
        if X is not None and X.shape[-2:] != (self.n, self.n_features):
            raise SggmError(f"X must be [..., n={self.n}, F={self.n_features}], got {X.shape}")
        if A is not None and A.shape[-2:] != (self.n, self.n):
            raise SggmError(f"A must be [..., {self.n}, {self.n}], got {A.shape}")
        return X, A

    def score(self, X, A, t: float, *, score_error: float = 0.0) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The exact partial scores ``(∇_X log p_t(X, A), ∇_A log p_t(X, A))`` at time t (``None`` for the
        component that the paradigm keeps fixed); with ``score_error = ε`` the perturbed ``Σ_t⁻¹ + εI``.
        ``X [..., n, F]``, ``A [..., n, n]`` (symmetric; ∇_A is w.r.t. the upper-triangle entries, mirrored)."""
        X, A = self._check(X, A)
        if self.paradigm == "features":
            a, v = float(self.sde_x.mean_coef(t)), float(self.sde_x.var(t))
            U = self.eigenvectors
            prec = 1.0 / (a * a * self.lam + v) + score_error
            return -(U * prec) @ (np.swapaxes(U, 0, 1) @ X), None
        if self.paradigm == "structure":
            a, v = float(self.sde_a.mean_coef(t)), float(self.sde_a.var(t))
            prec = 1.0 / (a * a * self.noise_std**2 + v) + score_error
            return None, from_upper(-prec * (upper(A) - a * self.mean_a), self.n)
        ax, vx = float(self.sde_x.mean_coef(t)), float(self.sde_x.var(t))
        aa, va = float(self.sde_a.mean_coef(t)), float(self.sde_a.var(t))
        acoef = np.concatenate([np.full(self.dim_x, ax), np.full(self.dim_a, aa)])
        vcoef = np.concatenate([np.full(self.dim_x, vx), np.full(self.dim_a, va)])
        sig_t = acoef[:, None] * self.joint_cov * acoef[None, :] + np.diag(vcoef)
        y = np.concatenate([X.reshape(*X.shape[:-2], -1), upper(A)], axis=-1)  # [..., nF + E]
        flat = y.reshape(-1, y.shape[-1])  # [B, nF + E]
        s = (-sla.cho_solve(sla.cho_factor(sig_t, lower=True), flat.T).T - score_error * flat).reshape(y.shape)
        return s[..., :self.dim_x].reshape(X.shape), from_upper(s[..., self.dim_x:], self.n)

    def score_x(self, X, A, t: float, *, score_error: float = 0.0):
        return self.score(X, A, t, score_error=score_error)[0]

    def score_a(self, X, A, t: float, *, score_error: float = 0.0):
        return self.score(X, A, t, score_error=score_error)[1]

    def log_density(self, X, A) -> np.ndarray:
        """``log p_0`` of the data law at ``X [..., n, F]`` / ``A [..., n, n]`` (the generated components only)."""
        X, A = self._check(X, A)
        if self.paradigm == "features":
            y, cov, mu, reps = np.swapaxes(X, -1, -2), self.sigma_graph, np.zeros(self.n), True
        elif self.paradigm == "structure":
            y, cov, mu, reps = upper(A), np.eye(len(self.mean_a)) * self.noise_std**2, self.mean_a, False
        else:
            y = np.concatenate([X.reshape(*X.shape[:-2], -1), upper(A)], axis=-1)
            cov, mu, reps = self.joint_cov, np.zeros(self.joint_cov.shape[0]), False
        c = sla.cho_factor(cov, lower=True)
        dev = y - mu
        quad = np.sum(dev * sla.cho_solve(c, dev.reshape(-1, dev.shape[-1]).T).T.reshape(dev.shape), axis=-1)
        lp = -0.5 * quad - np.log(np.diag(c[0])).sum() - 0.5 * len(mu) * math.log(2 * math.pi)
        return lp.sum(axis=-1) if reps else lp

    def early_stopping_kl(self, t_min: float = 1e-3) -> float:
        """``KL(p_{t_min} ‖ p_0)`` per entry (paradigms 1-2): the floor that the exact-score sampler reaches as
        N → ∞ and T → ∞, since it stops at ``t_min`` instead of 0."""
        if self.paradigm == "features":
            a, v = float(self.sde_x.mean_coef(t_min)), float(self.sde_x.var(t_min))
            return gaussian_kl(None, a * a * self.lam + v, None, self.lam) / self.n
        if self.paradigm == "structure":
            a, v = float(self.sde_a.mean_coef(t_min)), float(self.sde_a.var(t_min))
            var = np.full(len(self.mean_a), self.noise_std**2)
            return gaussian_kl(a * self.mean_a, a * a * var + v, self.mean_a, var) / len(self.mean_a)
        raise SggmError("early_stopping_kl is implemented for paradigms 'features' and 'structure'")

    # ------------------------------------------------------------------ data and the sampler's law
    def sample_data(self, size: int, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """``size`` draws ``(X [size, n, F], A [size, n, n])`` from the data law (fixed components repeated)."""
        rng = np.random.default_rng(seed)
        n, F = self.n, self.n_features
        if self.paradigm == "features":
            z = rng.standard_normal((size, n, F))
            X = (self.eigenvectors * np.sqrt(self.lam)) @ z
            return X, np.broadcast_to(self.adjacency, (size, n, n)).copy()
        if self.paradigm == "structure":
            a = self.mean_a + self.noise_std * rng.standard_normal((size, len(self.mean_a)))
            return np.broadcast_to(self.features, (size, n, F)).copy(), from_upper(a, n)
        y = rng.multivariate_normal(np.zeros(self.joint_cov.shape[0]), self.joint_cov, size=size, method="cholesky")
        return y[:, :self.dim_x].reshape(size, n, F), from_upper(y[:, self.dim_x:], n)

    def sampler_law(self, *, n_steps: int, T: float, t_min: float = 1e-3, score_error: float = 0.0,
                    exact_prior: bool = False, method: Literal["auto", "eigen", "dense"] = "auto",
                    generate: Literal["both", "X", "A"] = "both") -> SamplerLaw:
        """The exact law of the N-step Euler–Maruyama reverse sampler (exact or ε-perturbed score) and its KL to
        the data law. ``method="eigen"`` (paradigms 1–2: independent scalar modes, O(D) per step) or ``"dense"``
        (O(D³) per step); ``generate`` (joint model only): ``"X"`` = paradigm 1 inside the joint model (A is the
        clean condition), ``"A"`` = paradigm 2 (X is the condition)."""
        check_time_grid(n_steps=n_steps, T=T, t_min=t_min)
        if method not in ("auto", "eigen", "dense"):
            raise SggmError(f"method must be 'auto', 'eigen' or 'dense', got {method!r}")
        if not (isinstance(score_error, (int, float)) and math.isfinite(score_error) and score_error >= 0):
            raise SggmError(f"score_error must be a finite number >= 0, got {score_error!r}")
        kw = dict(n_steps=n_steps, T=T, t_min=t_min, score_error=score_error, exact_prior=exact_prior)
        if self.paradigm != "joint" and generate != "both":
            raise SggmError("generate applies to paradigm='joint' only")
        if self.paradigm == "features":
            F, U = self.n_features, self.eigenvectors
            if method in ("auto", "eigen"):
                m, v = propagate_diagonal(mean=np.zeros(self.n), var=self.lam, sde=self.sde_x, **kw)
                kl = F * gaussian_kl(m, v, None, self.lam)
                klr = F * gaussian_kl(None, self.lam, m, v)
                return SamplerLaw(kl, klr, self.n * F, U @ m, (U * v) @ U.T, np.zeros(self.n), self.sigma_graph,
                                  "eigen")
            idx = np.arange(self.n)
            m, c = propagate_dense(mean=np.zeros(self.n), cov=self.sigma_graph, groups=[(idx, self.sde_x)],
                                   generated=np.ones(self.n, bool), **kw)
            return SamplerLaw(F * gaussian_kl(m, c, None, self.sigma_graph),
                              F * gaussian_kl(None, self.sigma_graph, m, c), self.n * F, m, c, np.zeros(self.n),
                              self.sigma_graph, "dense")
        if self.paradigm == "structure":
            e = len(self.mean_a)
            var = np.full(e, self.noise_std**2)
            if method in ("auto", "eigen"):
                m, v = propagate_diagonal(mean=self.mean_a, var=var, sde=self.sde_a, **kw)
                return SamplerLaw(gaussian_kl(m, v, self.mean_a, var), gaussian_kl(self.mean_a, var, m, v), e,
                                  m, np.diag(v), self.mean_a, np.diag(var), "eigen")
            m, c = propagate_dense(mean=self.mean_a, cov=np.diag(var), groups=[(np.arange(e), self.sde_a)],
                                   generated=np.ones(e, bool), **kw)
            return SamplerLaw(gaussian_kl(m, c, self.mean_a, np.diag(var)),
                              gaussian_kl(self.mean_a, np.diag(var), m, c), e, m, c, self.mean_a, np.diag(var),
                              "dense")
        if method == "eigen":
            raise SggmError("method='eigen' needs paradigm 'features' or 'structure'; the joint model is dense")
        if generate not in ("both", "X", "A"):
            raise SggmError(f"generate must be 'both', 'X' or 'A', got {generate!r}")
        dx, da = self.dim_x, self.dim_a
        ix, ia = np.arange(dx), np.arange(dx, dx + da)
        gen = np.zeros(dx + da, bool)
        groups = []
        if generate in ("both", "X"):
            gen[ix] = True
            groups.append((ix, self.sde_x))
        if generate in ("both", "A"):
            gen[ia] = True
            groups.append((ia, self.sde_a))
        mu = np.zeros(dx + da)
        m, c = propagate_dense(mean=mu, cov=self.joint_cov, groups=groups, generated=gen, **kw)
        return SamplerLaw(gaussian_kl(m, c, mu, self.joint_cov), gaussian_kl(mu, self.joint_cov, m, c),
                          int(gen.sum()), m, c, mu, self.joint_cov, "dense", {"generate": generate})
