"""RLHF and DPO reductions on a synthetic contextual bandit.

A bandit has ``S`` contexts and ``K`` actions with features ``φ [S, K, d]`` and true reward ``r*(s, a) = ⟨θ*, φ(s,
a)⟩``. Offline data: a context uniformly at random, two distinct actions ``a⁰, a¹`` uniformly at random (the
behaviour policy), ``x = φ(s, a¹) − φ(s, a⁰)`` and ``y ~ Bern(σ(θ*ᵀx))``.

* RLHF: the greedy policy ``π̂(s) = argmax_a ⟨θ̂, φ(s, a)⟩`` and the pessimistic one
  ``argmax_a ⟨θ̂, φ(s, a)⟩ − Γ ‖φ(s, a) − φ̄(s)‖_{(Σ + λI)⁻¹}`` (``φ̄(s)`` the mean feature of the context,
  ``Σ = (1/n) Σ xᵢxᵢᵀ``); ``SubOpt(π̂) = E_s[r*(s, π*(s)) − r*(s, π̂(s))]``.
* DPO: the log-linear class ``π_θ(a | s) ∝ π_ref(a | s) exp(⟨θ, φ(s, a)⟩ / β)``. Since
  ``β log π_θ(a|s)/π_ref(a|s) = ⟨θ, φ(s, a)⟩ − β log Z_θ(s)``, the DPO loss on a pair is
  ``−log σ(θᵀ(φ(s, a_w) − φ(s, a_l)))``: exactly the logistic loss with ``x = φ(s, a¹) − φ(s, a⁰)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, log_softmax

from private_robust_align.data import make_theta_star, sample_features
from private_robust_align.errors import PrivateRobustAlignError


@dataclass(frozen=True)
class Bandit:
    """``features [S, K, d]`` and ``theta_star [d]``; ``rewards [S, K]`` = features · θ*."""

    features: np.ndarray
    theta_star: np.ndarray

    @property
    def rewards(self) -> np.ndarray:
        return self.features @ self.theta_star

    @property
    def dim(self) -> int:
        return self.features.shape[2]


def make_bandit(*, n_contexts: int = 200, n_actions: int = 8, dim: int = 5, norm: float = 2.0,
                seed: int) -> Bandit:
    """A random bandit: φ uniform in the ball of radius 1/2 (so ‖x‖ ≤ 1), ‖θ*‖ = ``norm``."""
    if n_contexts < 1 or n_actions < 2 or dim < 1:
        raise PrivateRobustAlignError(f"need n_contexts >= 1, n_actions >= 2, dim >= 1; got {n_contexts}, "
                                      f"{n_actions}, {dim}")
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 29]))
    theta = make_theta_star(dim, norm=norm, rng=rng)
    phi = sample_features(n_contexts * n_actions, dim, design="ball", scale=0.5, rng=rng)
    return Bandit(features=phi.reshape(n_contexts, n_actions, dim), theta_star=theta)  # [S*K, d] -> [S, K, d]


def bandit_preferences(bandit: Bandit, n: int, *, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n offline comparisons: ``x [n, d]``, clean labels ``y [n]`` and the ``(s, a⁰, a¹)`` indices ``[n, 3]``."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 31]))
    S, K, _ = bandit.features.shape
    s = rng.integers(0, S, n)
    a0 = rng.integers(0, K, n)
    a1 = (a0 + rng.integers(1, K, n)) % K  # a uniformly random other action
    x = bandit.features[s, a1] - bandit.features[s, a0]
    y = (rng.random(n) < expit(x @ bandit.theta_star)).astype(np.int64)
    return x, y, np.stack([s, a0, a1], axis=1)


def greedy_policy(theta: np.ndarray, bandit: Bandit) -> np.ndarray:
    """``π̂(s) = argmax_a ⟨θ, φ(s, a)⟩`` for every context, shape ``[S]``."""
    return np.argmax(bandit.features @ np.asarray(theta, dtype=np.float64), axis=1)


def pessimistic_policy(theta: np.ndarray, bandit: Bandit, *, x: np.ndarray, gamma: float = 1.0,
                       l2: float = 1e-3) -> np.ndarray:
    """``argmax_a ⟨θ, φ(s,a)⟩ − Γ ‖φ(s,a) − φ̄(s)‖_{(Σ+λI)⁻¹}`` with ``Σ = xᵀx / n`` from the offline data."""
    if gamma < 0 or l2 <= 0:
        raise PrivateRobustAlignError(f"gamma must be >= 0 and l2 > 0, got {gamma}, {l2}")
    d = bandit.dim
    cov_inv = np.linalg.inv(x.T @ x / x.shape[0] + l2 * np.eye(d))
    centred = bandit.features - bandit.features.mean(axis=1, keepdims=True)  # [S, K, d]
    width = np.sqrt(np.einsum("skd,de,ske->sk", centred, cov_inv, centred))
    return np.argmax(bandit.features @ np.asarray(theta, dtype=np.float64) - gamma * width, axis=1)


def suboptimality(theta: np.ndarray, bandit: Bandit, *, policy: np.ndarray | None = None) -> float:
    """``SubOpt = E_s[r*(s, π*(s)) − r*(s, π̂(s))]`` of the greedy policy from ``theta`` (or the given actions)."""
    theta = np.asarray(theta, dtype=np.float64)
    if theta.shape != (bandit.dim,):
        raise PrivateRobustAlignError(f"theta must have shape ({bandit.dim},), got {theta.shape}")
    act = greedy_policy(theta, bandit) if policy is None else np.asarray(policy)
    r = bandit.rewards
    return float(np.mean(r.max(axis=1) - r[np.arange(r.shape[0]), act]))


def loglinear_logprobs(theta: np.ndarray, bandit: Bandit, *, beta: float, ref_logits: np.ndarray) -> np.ndarray:
    """``log π_θ(a | s)`` for ``π_θ ∝ π_ref exp(⟨θ, φ⟩ / β)``, shape ``[S, K]`` (``ref_logits [S, K]``)."""
    if not beta > 0:
        raise PrivateRobustAlignError(f"beta must be > 0, got {beta}")
    log_ref = log_softmax(ref_logits, axis=1)
    return log_softmax(log_ref + bandit.features @ theta / beta, axis=1)


def dpo_loss_loglinear(theta: np.ndarray, bandit: Bandit, pairs: np.ndarray, z: np.ndarray, *, beta: float,
                       ref_logits: np.ndarray) -> np.ndarray:
    """Per-pair DPO loss of the log-linear policy: ``−log σ(β[log π_θ/π_ref(a_w) − log π_θ/π_ref(a_l)])``.

    ``pairs [n, 3]`` are ``(s, a⁰, a¹)``, ``z [n]`` says whether a¹ won. Equals ``log(1 + e^m) − z m`` with
    ``m = θᵀ(φ(s, a¹) − φ(s, a⁰))``.
    """
    logp = loglinear_logprobs(theta, bandit, beta=beta, ref_logits=ref_logits)
    log_ref = log_softmax(ref_logits, axis=1)
    s, a0, a1 = pairs[:, 0], pairs[:, 1], pairs[:, 2]
    r1 = beta * (logp[s, a1] - log_ref[s, a1])
    r0 = beta * (logp[s, a0] - log_ref[s, a0])
    sign = 2.0 * np.asarray(z, dtype=np.float64) - 1.0  # winner minus loser
    return np.logaddexp(0.0, -sign * (r1 - r0))
