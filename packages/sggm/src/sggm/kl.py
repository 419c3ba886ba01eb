"""Closed-form Gaussian KL divergence (both directions, dense or diagonal covariances) and Monte-Carlo estimates.

    KL(N(m0, S0) ‖ N(m1, S1)) = ½ [ tr(S1⁻¹ S0) + (m1 - m0)ᵀ S1⁻¹ (m1 - m0) - D + ln det S1 - ln det S0 ]

computed with Cholesky factors (float64). The divergence is dimension-extensive: divide by the number of entries to
compare graphs of different size ("per entry").
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg as sla

from sggm.errors import SggmError


def _chol(cov: np.ndarray, name: str) -> np.ndarray:
    if not np.isfinite(cov).all():
        raise SggmError(f"{name} contains NaN or inf")
    if not np.allclose(cov, cov.T, rtol=1e-8, atol=1e-10 * max(1.0, float(np.abs(cov).max()))):
        raise SggmError(f"{name} must be symmetric")
    try:
        return sla.cholesky(0.5 * (cov + cov.T), lower=True)
    except (np.linalg.LinAlgError, sla.LinAlgError):
        raise SggmError(f"{name} is not positive-definite (Cholesky failed)") from None


def gaussian_kl(mean0, cov0, mean1, cov1) -> float:
    """``KL(N(mean0, cov0) ‖ N(mean1, cov1))``; covariances ``[D, D]`` or their diagonals ``[D]``; means ``[D]`` or
    ``None`` (zero). Raises :class:`~sggm.errors.SggmError` for a covariance that is not positive-definite."""
    cov0, cov1 = np.asarray(cov0, dtype=np.float64), np.asarray(cov1, dtype=np.float64)
    d = cov0.shape[0]
    if cov0.ndim not in (1, 2) or cov1.ndim not in (1, 2) or cov1.shape[0] != d:
        raise SggmError(f"covariances must be [D, D] or [D] with the same D, got {cov0.shape} and {cov1.shape}")
    m0 = np.zeros(d) if mean0 is None else np.asarray(mean0, dtype=np.float64).reshape(-1)
    m1 = np.zeros(d) if mean1 is None else np.asarray(mean1, dtype=np.float64).reshape(-1)
    if m0.shape != (d,) or m1.shape != (d,):
        raise SggmError(f"means must have D = {d} entries, got {m0.shape} and {m1.shape}")
    if not (np.isfinite(m0).all() and np.isfinite(m1).all()):
        raise SggmError("means contain NaN or inf")
    dm = m1 - m0
    if cov0.ndim == 1 and cov1.ndim == 1:
        if not (np.isfinite(cov0).all() and np.isfinite(cov1).all()):
            raise SggmError("variances contain NaN or inf")
        if (cov0 <= 0).any() or (cov1 <= 0).any():
            raise SggmError("covariance is not positive-definite (a variance is <= 0)")
        return float(0.5 * np.sum(cov0 / cov1 + dm**2 / cov1 - 1.0 + np.log(cov1) - np.log(cov0)))
    c0 = _chol(np.diag(cov0) if cov0.ndim == 1 else cov0, "cov0")
    c1 = _chol(np.diag(cov1) if cov1.ndim == 1 else cov1, "cov1")
    w = sla.solve_triangular(c1, c0, lower=True)  # L1⁻¹ L0: tr(S1⁻¹ S0) = ‖L1⁻¹ L0‖_F²
    z = sla.solve_triangular(c1, dm, lower=True)
    logdet1, logdet0 = 2 * np.log(np.diag(c1)).sum(), 2 * np.log(np.diag(c0)).sum()
    return float(0.5 * (np.sum(w**2) + np.sum(z**2) - d + logdet1 - logdet0))


def empirical_gaussian(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sample mean ``[D]`` and covariance ``[D, D]`` (ddof = 1) of ``samples [M, D]``."""
    s = np.asarray(samples, dtype=np.float64)
    if s.ndim != 2 or s.shape[0] < 2:
        raise SggmError(f"samples must be [M >= 2, D], got shape {s.shape}")
    return s.mean(axis=0), np.cov(s, rowvar=False).reshape(s.shape[1], s.shape[1])


def monte_carlo_kl(samples: np.ndarray, mean, cov, *, direction: str = "sampler||data") -> float:
    """KL between the Gaussian fitted to ``samples [M, D]`` and ``N(mean, cov)`` (plug-in estimate)."""
    m, c = empirical_gaussian(samples)
    if direction == "sampler||data":
        return gaussian_kl(m, c, mean, cov)
    if direction == "data||sampler":
        return gaussian_kl(mean, cov, m, c)
    raise SggmError(f"direction must be 'sampler||data' or 'data||sampler', got {direction!r}")


def chains_for_tolerance(chains, rms_error, tolerance: float) -> float:
    """Chains M at which a plug-in Monte-Carlo estimate's RMS relative error reaches ``tolerance``.

    From errors measured at a ladder of chain counts ``chains [K]`` (``rms_error [K]``, K >= 2): least-squares fit,
    in relative residuals, of ``rms² = b²/M² + c²/M`` with ``b², c² >= 0`` (a plug-in KL's bias falls like 1/M, its
    standard deviation like 1/√M), solved for ``b²/M² + c²/M = tolerance²``. Beyond the ladder it extrapolates.
    """
    from scipy.optimize import nnls

    m = np.asarray(chains, dtype=np.float64).reshape(-1)
    r = np.asarray(rms_error, dtype=np.float64).reshape(-1)
    if m.shape != r.shape or m.size < 2:
        raise SggmError(f"chains and rms_error need the same length >= 2, got {m.shape} and {r.shape}")
    if not (np.isfinite(m).all() and np.isfinite(r).all()) or (m <= 0).any() or (r <= 0).any():
        raise SggmError("chains and rms_error must be finite and > 0")
    if not (math.isfinite(tolerance) and tolerance > 0):
        raise SggmError(f"tolerance must be > 0, got {tolerance}")
    design = np.stack([1.0 / m**2, 1.0 / m], axis=1) / (r**2)[:, None]  # [K, 2], rows scaled: relative residuals
    (b2, c2), _ = nnls(design, np.ones_like(m))
    tol2 = tolerance**2
    if b2 <= 0 and c2 <= 0:
        raise SggmError("the errors do not fall with the number of chains: no fit")
    x = 2.0 * tol2 / (c2 + math.sqrt(c2**2 + 4.0 * b2 * tol2))  # x = 1/M, the positive root (no cancellation)
    return 1.0 / x
