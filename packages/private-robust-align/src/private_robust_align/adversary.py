"""Strong label-corruption adversaries: each replaces at most ⌊αn⌋ labels (features stay clean).

A strong adversary sees the features, the labels present at its stage (clean ``y`` before privatization, privatized
``z`` after it) and the true parameter θ*. Three adversaries (``adversary=``):

* ``"directional"`` — picks a unit vector ``u ⊥ θ*`` and sets the label of the samples with the largest ``|uᵀx|`` to
  ``1{uᵀx > 0}``: it plants a preference along a direction the true reward does not have, which biases θ̂ along u.
* ``"shrinking"`` — sets the label of the samples with the largest ``|θ*ᵀx|`` to the anti-Bayes label
  ``1{θ*ᵀx < 0}`` (a flip of the confident labels), which shrinks θ̂ towards 0.
* ``"random"`` — flips ⌊αn⌋ labels chosen uniformly at random (a weak, non-adaptive control).

The adaptive adversaries spend their budget only on labels that differ from their target (changing a label to
the value it already has is wasted budget), in every order: after privatization (LTC) they therefore choose among the
samples whose *privatized* label ``z`` differs from the target. Each changed post-privacy label moves the debiased
label ``ŷ`` by ``c(ε)``, each pre-privacy one by 1 in expectation: the root of "LTC is harder than CTL".

All randomness (the direction u, the random flips) comes from the adversary's own generator ``rng``; with
``⌊αn⌋ = 0`` nothing is drawn, so the generator's position is the same as if the adversary had not acted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from private_robust_align.errors import PrivateRobustAlignError, check_alpha, check_features, check_labels

ADVERSARIES = ("directional", "shrinking", "random")


@dataclass(frozen=True)
class Corruption:
    """What the adversary did: the new labels ``[n]`` and the indices it changed (``len(changed) ≤ ⌊αn⌋``)."""

    labels: np.ndarray
    changed: np.ndarray
    budget: int


def budget(n: int, alpha: float) -> int:
    """⌊αn⌋ (with a tiny tolerance so that e.g. 0.07 · 100 counts as 7, not 6)."""
    return int(np.floor(alpha * n + 1e-9))


def orthogonal_direction(theta_star: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random unit vector u with ``uᵀθ* = 0`` (any unit vector if θ* = 0); needs d ≥ 2."""
    t = np.asarray(theta_star, dtype=np.float64)
    if t.shape[0] < 2:
        raise PrivateRobustAlignError("the directional adversary needs d >= 2 (a direction orthogonal to theta*)")
    g = rng.standard_normal(t.shape[0])
    nt = np.linalg.norm(t)
    if nt > 0:
        g -= (g @ t) / nt**2 * t
    return g / np.linalg.norm(g)


def corrupt(x: np.ndarray, labels: np.ndarray, *, alpha: float, adversary: str, rng: np.random.Generator,
            theta_star: np.ndarray | None = None, direction: np.ndarray | None = None) -> Corruption:
    """Replace at most ⌊αn⌋ of ``labels [n]`` (features ``x [n, d]``) as the ``adversary`` chooses.

    ``theta_star [d]`` is required by the adaptive adversaries. ``direction`` (a unit ``u ⊥ θ*``) fixes the
    directional adversary's u; by default it is drawn from ``rng`` (only when the budget is positive).
    """
    x = check_features(x)
    y = check_labels(labels, n=x.shape[0])
    a = check_alpha(alpha)
    if adversary not in ADVERSARIES:
        raise PrivateRobustAlignError(f"adversary must be one of {ADVERSARIES}, got {adversary!r}")
    n = x.shape[0]
    k = budget(n, a)
    out = y.copy()
    if k == 0:  # nothing to change, nothing drawn
        return Corruption(out, np.zeros(0, dtype=np.int64), 0)
    if adversary != "random":
        if theta_star is None:
            raise PrivateRobustAlignError(f"the {adversary} adversary needs theta_star (it is a strong adversary)")
        theta_star = np.asarray(theta_star, dtype=np.float64)
        if theta_star.shape != (x.shape[1],):
            raise PrivateRobustAlignError(f"theta_star must have shape ({x.shape[1]},), got {theta_star.shape}")
    if adversary == "random":
        idx = rng.permutation(n)[:k]
        out[idx] = 1 - out[idx]
        return Corruption(out, np.sort(idx), k)
    if adversary == "directional":
        u = orthogonal_direction(theta_star, rng) if direction is None else np.asarray(direction, dtype=np.float64)
        score = x @ u
        target = (score > 0).astype(np.int64)
    else:  # shrinking
        score = x @ theta_star
        target = (score < 0).astype(np.int64)
    cand = np.flatnonzero(y != target)                       # only labels unlike the target cost budget
    order = np.argsort(-np.abs(score[cand]), kind="stable")  # largest |score| first
    idx = cand[order[:k]]
    out[idx] = target[idx]
    return Corruption(out, np.sort(idx), k)
