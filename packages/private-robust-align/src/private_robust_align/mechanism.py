"""ε-label-LDP randomized response and the debiased labels (Zhou, Wu & Orabona, ICML 2025).

Randomized response keeps each binary label with probability ``e^ε / (1 + e^ε)`` and flips it otherwise::

    z = y        with probability 1 − ρ,     ρ = 1 / (1 + e^ε)  (flip rate; ρ = 0 at ε = ∞)
    z = 1 − y    with probability ρ

so ``P(z | y) / P(z | y') ≤ (1 − ρ) / ρ = e^ε`` (ε-label-LDP). The debiased label

    ŷ = (z − ρ) / (1 − 2ρ) = ((e^ε + 1) z − 1) / (e^ε − 1)

satisfies ``E[ŷ | y] = y`` and takes the two values ``−ρ c(ε)`` and ``(1 − ρ) c(ε)`` with
``c(ε) = 1 / (1 − 2ρ) = (e^ε + 1) / (e^ε − 1)`` (≈ 2/ε for small ε, → 1 as ε → ∞).

Shapes: labels ``[n]`` in {0, 1}; the mechanism draws ``u ~ U(0, 1)^n`` from its own generator and flips where
``u < ρ`` (the uniforms are drawn even at ε = ∞, so the stream position does not depend on ε).
"""

from __future__ import annotations

import math

import numpy as np

from private_robust_align.errors import check_epsilon, check_labels


def flip_rate(epsilon: float) -> float:
    """ρ(ε) = 1 / (1 + e^ε), computed stably (0 at ε = ∞)."""
    e = check_epsilon(epsilon)
    if math.isinf(e):
        return 0.0
    return float(1.0 / (1.0 + math.exp(e))) if e < 700 else 0.0


def privacy_constant(epsilon: float) -> float:
    """c(ε) = (e^ε + 1) / (e^ε − 1) = 1 / (1 − 2ρ) = coth(ε/2); 1 at ε = ∞."""
    e = check_epsilon(epsilon)
    if math.isinf(e) or e > 40:
        return 1.0
    return float(1.0 / math.tanh(e / 2.0))


def channel(epsilon: float) -> np.ndarray:
    """The mechanism's transition matrix ``P[y, z] = P(z | y)`` (2 × 2)."""
    rho = flip_rate(epsilon)
    return np.array([[1 - rho, rho], [rho, 1 - rho]])


def ldp_ratio(epsilon: float) -> float:
    """max over z, y, y' of P(z | y) / P(z | y'): equals e^ε (inf at ε = ∞)."""
    p = channel(epsilon)
    if (p == 0).any():  # ρ = 0: a label is revealed exactly (ε = ∞)
        return math.inf
    return float(np.max(p[:, None, :] / p[None, :, :]))


def randomized_response(y: np.ndarray, *, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Privatize binary labels ``y [n]``: keep each with probability e^ε/(1 + e^ε). Returns ``z [n]`` (int64)."""
    y = check_labels(y, name="y")
    rho = flip_rate(epsilon)
    u = rng.random(y.shape[0])
    return np.where(u < rho, 1 - y, y).astype(np.int64)


def debias_labels(z: np.ndarray, *, epsilon: float) -> np.ndarray:
    """ŷ = (z − ρ) / (1 − 2ρ), float64 ``[n]``; unbiased: ``E[ŷ | y] = y``."""
    z = check_labels(z, name="z")
    rho = flip_rate(epsilon)
    return (z.astype(np.float64) - rho) * privacy_constant(epsilon)
