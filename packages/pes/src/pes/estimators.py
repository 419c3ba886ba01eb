"""Likelihood-ratio gradient estimators for linear (hyper)policies (numpy, float64).

Action-based (AB), Gaussian policy ``π_θ(a|s) = N(Ks, σ² I_{d_A})``, ``K = θ.reshape(d_A, d_S)``:

* score ``∇_θ log π(a|s) = vec((a − Ks) sᵀ) / σ²``, shape ``[N, T, d_Θ]``;
* **GPOMDP**: ``ĝ = (1/N) Σ_i Σ_t γ^t r_{i,t} Σ_{t' ≤ t} ∇_θ log π(a_{i,t'}|s_{i,t'})``;
* **REINFORCE**: ``ĝ = (1/N) Σ_i (Σ_t γ^t r_{i,t}) (Σ_t ∇_θ log π(a_{i,t}|s_{i,t}))`` (same mean, more variance);
* σ-score per step ``∂_σ log π = (‖a − Ks‖² − d_A σ²)/σ³``, accumulated GPOMDP-style for SL-PG.

Parameter-based (PB), hyperpolicy ``ν_θ = N(θ, σ² I_{d_Θ})``, one trajectory per draw θ_i:

* **PGPE**: ``ĝ = (1/N) Σ_i R(τ_i) (θ_i − θ)/σ²``;
* σ-score ``∂_σ log ν(θ_i) = (‖θ_i − θ‖² − d_Θ σ²)/σ³``.

No baseline by default, as in the released code. ``baseline=True`` subtracts a leave-one-out mean (of the returns
for PGPE/REINFORCE, of the per-step discounted rewards for GPOMDP), which keeps the estimators unbiased.
"""

from __future__ import annotations

import numpy as np

from pes.envs import Rollouts
from pes.errors import PesError

ESTIMATORS = ("gpomdp", "reinforce")


def _loo(x: np.ndarray) -> np.ndarray:
    """Leave-one-out mean over axis 0 (``x`` itself when ``N = 1``: no baseline possible)."""
    n = x.shape[0]
    if n < 2:
        return np.zeros_like(x)
    return (x.sum(axis=0, keepdims=True) - x) / (n - 1)


def _check_sigma(sigma: float) -> float:
    if not (np.isfinite(sigma) and sigma > 0):
        raise PesError(f"sigma must be a positive finite number for a stochastic gradient, got {sigma!r}")
    return float(sigma)


def action_scores(states: np.ndarray, actions: np.ndarray, means: np.ndarray, sigma: float) -> np.ndarray:
    """``∇_θ log π(a|s) = vec((a − μ) sᵀ)/σ²`` for ``states [N, T, d_S]``, ``actions, means [N, T, d_A]``
    -> ``[N, T, d_A · d_S]`` (row-major, matching ``θ.reshape(d_A, d_S)``)."""
    sigma = _check_sigma(sigma)
    outer = np.einsum("nta,nts->ntas", actions - means, states) / sigma ** 2   # [N, T, d_A, d_S]
    return outer.reshape(*outer.shape[:2], -1)                                 # [N, T, d_A*d_S]


def action_sigma_scores(actions: np.ndarray, means: np.ndarray, sigma: float) -> np.ndarray:
    """``∂_σ log π = (‖a − μ‖² − d_A σ²)/σ³`` per step, ``[N, T]``."""
    sigma = _check_sigma(sigma)
    d = actions.shape[-1]
    return (((actions - means) ** 2).sum(-1) - d * sigma ** 2) / sigma ** 3


def gpomdp(rewards: np.ndarray, scores: np.ndarray, gamma: float, *, baseline: bool = False) -> np.ndarray:
    """GPOMDP: ``(1/N) Σ_i Σ_t γ^t r_{i,t} Σ_{t'≤t} score_{i,t'}``; ``rewards [N, T]``, ``scores [N, T, d]`` ->
    ``[d]``."""
    rewards, scores = np.asarray(rewards, dtype=np.float64), np.asarray(scores, dtype=np.float64)
    if rewards.ndim != 2 or scores.ndim != 3 or scores.shape[:2] != rewards.shape:
        raise PesError(f"gpomdp needs rewards [N, T] and scores [N, T, d], got {rewards.shape} and {scores.shape}")
    disc = rewards * gamma ** np.arange(rewards.shape[1])[None, :]            # [N, T]
    if baseline:
        disc = disc - _loo(disc)
    cum = np.cumsum(scores, axis=1)                                          # [N, T, d]
    return np.einsum("nt,ntd->d", disc, cum) / rewards.shape[0]


def reinforce(rewards: np.ndarray, scores: np.ndarray, gamma: float, *, baseline: bool = False) -> np.ndarray:
    """REINFORCE: ``(1/N) Σ_i R(τ_i) Σ_t score_{i,t}`` with ``R(τ) = Σ_t γ^t r_t``; -> ``[d]``."""
    rewards, scores = np.asarray(rewards, dtype=np.float64), np.asarray(scores, dtype=np.float64)
    if rewards.ndim != 2 or scores.ndim != 3 or scores.shape[:2] != rewards.shape:
        raise PesError(f"reinforce needs rewards [N, T] and scores [N, T, d], got {rewards.shape} and "
                       f"{scores.shape}")
    ret = rewards @ (gamma ** np.arange(rewards.shape[1]))                    # [N]
    if baseline:
        ret = ret - _loo(ret)
    return np.einsum("n,nd->d", ret, scores.sum(axis=1)) / rewards.shape[0]


def pgpe(returns: np.ndarray, thetas: np.ndarray, theta: np.ndarray, sigma: float, *,
         baseline: bool = False) -> np.ndarray:
    """PGPE: ``(1/N) Σ_i R_i (θ_i − θ)/σ²``; ``returns [N]``, ``thetas [N, d]``, ``theta [d]`` -> ``[d]``."""
    sigma = _check_sigma(sigma)
    returns, thetas = np.asarray(returns, dtype=np.float64), np.asarray(thetas, dtype=np.float64)
    theta = np.asarray(theta, dtype=np.float64)
    if returns.ndim != 1 or thetas.shape != (returns.shape[0], theta.shape[-1]):
        raise PesError(f"pgpe needs returns [N], thetas [N, d] and theta [d], got {returns.shape}, "
                       f"{thetas.shape}, {theta.shape}")
    r = returns - _loo(returns) if baseline else returns
    return np.einsum("n,nd->d", r, thetas - theta[None]) / (returns.shape[0] * sigma ** 2)


def parameter_sigma_scores(thetas: np.ndarray, theta: np.ndarray, sigma: float) -> np.ndarray:
    """``∂_σ log ν(θ_i) = (‖θ_i − θ‖² − d σ²)/σ³``, ``[N]`` (θ must be the mean the θ_i were drawn from)."""
    sigma = _check_sigma(sigma)
    d = thetas.shape[-1]
    return (((thetas - theta[None]) ** 2).sum(-1) - d * sigma ** 2) / sigma ** 3


def estimate(ro: Rollouts, theta: np.ndarray, sigma: float, *, exploration: str, gamma: float,
             estimator: str = "gpomdp", baseline: bool = False, sigma_grad: bool = False,
             sigma_score_theta: np.ndarray | None = None) -> tuple[np.ndarray, float | None]:
    """The θ-gradient ``[d_Θ]`` (and ``∂J/∂σ`` when ``sigma_grad``) from a batch of rollouts.

    ``sigma_score_theta`` (PB only) is the mean the σ-score is computed against; default θ itself (correct). The
    released code passes the already-updated mean (an option of :class:`pes.SLPG`)."""
    if estimator not in ESTIMATORS:
        raise PesError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    if exploration == "action":
        sc = action_scores(ro.states, ro.actions, ro.means, sigma)
        fn = gpomdp if estimator == "gpomdp" else reinforce
        g = fn(ro.rewards, sc, gamma, baseline=baseline)
        gs = None
        if sigma_grad:
            ss = action_sigma_scores(ro.actions, ro.means, sigma)[..., None]
            gs = float(fn(ro.rewards, ss, gamma, baseline=baseline)[0])
        return g, gs
    if exploration == "parameter":
        R = ro.returns(gamma)
        g = pgpe(R, ro.thetas, theta, sigma, baseline=baseline)
        gs = None
        if sigma_grad:
            ref = theta if sigma_score_theta is None else sigma_score_theta
            ss = parameter_sigma_scores(ro.thetas, ref, sigma)
            r = R - _loo(R) if baseline else R
            gs = float(np.mean(r * ss))
        return g, gs
    raise PesError(f"exploration must be 'action' or 'parameter', got {exploration!r}")
