"""The reverse system of dependent SDEs, discretised by Euler–Maruyama, for any pair of partial score functions.

    X_{k+1} = X_k + h [ -f_{1,t_k}(X_k) + g_{1,t_k}² s_X(X_k, A_k, t_k) ] + √(h g_{1,t_k}²) ξ¹_k
    A_{k+1} = A_k + h [ -f_{2,t_k}(A_k) + g_{2,t_k}² s_A(X_k, A_k, t_k) ] + √(h g_{2,t_k}²) ξ²_k

from ``t_0 = T`` down to ``t_N = t_min`` in N steps of ``h = (T - t_min)/N``. The two chains are coupled through the
partial scores, both evaluated at the current ``(X_k, A_k)``; ``ξ²`` is symmetric with a zero diagonal (the noise of
the continuous adjacency is symmetrised, one independent normal per upper-triangle entry). A component whose score
is ``None`` is kept fixed (paradigm 1: ``score_a=None``; paradigm 2: ``score_x=None``).

Shapes: ``X [B, n, F]``, ``A [B, n, n]`` (a leading batch dimension is added when missing and removed again).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sggm.errors import SggmError, check_time_grid
from sggm.sde import VE, VP, check_sde

Score = Callable[[np.ndarray, np.ndarray, float], np.ndarray]


def symmetric_noise(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Standard normal on each upper-triangle entry, mirrored, zero diagonal: ``[..., n, n]``."""
    z = np.triu(rng.standard_normal(shape), 1)
    return z + np.swapaxes(z, -1, -2)


def sample(score_x: Score | None, score_a: Score | None, X_T, A_T, *, n_steps: int, T: float,
           t_min: float = 1e-3, sde_x: VP | VE | None = None, sde_a: VP | VE | None = None, seed: int = 0,
           return_path: bool = False, flags=None):
    """Run the reverse system from ``(X_T, A_T)``; returns ``(X, A)`` at ``t_min`` (and the list of states with
    ``return_path=True``). ``sde_x``/``sde_a`` default to ``VP(1, 1)``. ``flags [B, n]`` (0/1, optional): GDSS's
    node flags; the start, every step's noise and every state are masked to the existing nodes (padded rows and
    columns stay 0), and the score functions must be built with the same flags
    (:meth:`sggm.ScoreNetwork.numpy_scores`)."""
    check_time_grid(n_steps=n_steps, T=T, t_min=t_min)
    sde_x = sde_x if sde_x is not None else VP(1.0, 1.0)
    sde_a = sde_a if sde_a is not None else VP(1.0, 1.0)
    check_sde("sde_x", sde_x)
    check_sde("sde_a", sde_a)
    X = np.array(X_T, dtype=np.float64)
    A = np.array(A_T, dtype=np.float64)
    squeeze = X.ndim == 2
    if squeeze:
        X, A = X[None], A[None] if A.ndim == 2 else A
    if X.ndim != 3:
        raise SggmError(f"X_T must be [n, F] or [B, n, F], got shape {np.shape(X_T)}")
    if A.ndim == 2:
        A = np.broadcast_to(A, (X.shape[0],) + A.shape).copy()
    if A.ndim != 3 or A.shape[-1] != A.shape[-2]:
        raise SggmError(f"A_T must be square: [n, n] or [B, n, n], got shape {np.shape(A_T)}")
    if A.shape[0] != X.shape[0]:
        raise SggmError(f"X_T and A_T batch sizes differ: {X.shape[0]} and {A.shape[0]}")
    if X.shape[1] != A.shape[-1]:
        raise SggmError(f"X_T has {X.shape[1]} rows but A_T has n = {A.shape[-1]} nodes")
    if not (np.isfinite(X).all() and np.isfinite(A).all()):
        raise SggmError("X_T and A_T must be finite (found NaN or inf)")
    if not np.allclose(A, np.swapaxes(A, -1, -2), atol=1e-10):
        raise SggmError("A_T must be symmetric")
    if score_x is None and score_a is None:
        raise SggmError("at least one of score_x and score_a must be given")
    mx = ma = None
    if flags is not None:
        f = np.asarray(flags, dtype=np.float64)
        if f.ndim == 1:
            f = np.broadcast_to(f, X.shape[:2])
        if f.shape != X.shape[:2] or not np.isin(f, (0.0, 1.0)).all():
            raise SggmError(f"flags must be 0/1 of shape [B, n] = {X.shape[:2]}, got shape {f.shape}")
        mx, ma = f[:, :, None], f[:, :, None] * f[:, None, :]
        X, A = X * mx, A * ma
    rng = np.random.default_rng(seed)
    h = (T - t_min) / n_steps
    path = [(X.copy(), A.copy())] if return_path else None
    for k in range(n_steps):
        t = T - k * h
        sx = score_x(X, A, t) if score_x is not None else None
        sa = score_a(X, A, t) if score_a is not None else None
        if sx is not None:
            g2 = float(sde_x.g2(t))
            X = X + h * (-float(sde_x.drift_coef(t)) * X + g2 * np.asarray(sx)) \
                + np.sqrt(h * g2) * rng.standard_normal(X.shape)
            if mx is not None:
                X = X * mx
        if sa is not None:
            g2 = float(sde_a.g2(t))
            A = A + h * (-float(sde_a.drift_coef(t)) * A + g2 * np.asarray(sa)) \
                + np.sqrt(h * g2) * symmetric_noise(rng, A.shape)
            if ma is not None:
                A = A * ma
        if return_path:
            path.append((X.copy(), A.copy()))
    if squeeze:
        X, A = X[0], A[0]
    return ((X, A), path) if return_path else (X, A)


def noise_graph(X0, A0, t: float, *, sde_x: VP | VE, sde_a: VP | VE, seed: int = 0):
    """Forward noising of the factorised system at time t: ``X_t = a_t X_0 + √v_t Z_X``,
    ``A_t = a_t A_0 + √v_t Z_A`` with independent ``Z_X`` and symmetric ``Z_A`` (zero diagonal).
    Returns ``(X_t, A_t, Z_X, Z_A)``; shapes as given (``[..., n, F]``, ``[..., n, n]``)."""
    rng = np.random.default_rng(seed)
    X0, A0 = np.asarray(X0, dtype=np.float64), np.asarray(A0, dtype=np.float64)
    zx = rng.standard_normal(X0.shape)
    za = symmetric_noise(rng, A0.shape)
    xt = float(sde_x.mean_coef(t)) * X0 + np.sqrt(float(sde_x.var(t))) * zx
    at = float(sde_a.mean_coef(t)) * A0 + np.sqrt(float(sde_a.var(t))) * za
    return xt, at, zx, za
