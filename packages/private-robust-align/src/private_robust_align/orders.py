"""The three orders of privacy and corruption, on coupled random streams.

* ``CTL`` (corrupt, then privatize):  y → corrupt(α) → RR(ε) → z
* ``LTC`` (privatize, then corrupt):  y → RR(ε) → corrupt(α) → z
* ``CLC`` (corrupt, privatize, corrupt): y → corrupt(α₁) → RR(ε) → corrupt(α₂) → z

``seed`` is split (``numpy.random.SeedSequence(seed).spawn(2)``) into one generator for the mechanism and one for the
adversary. The mechanism draws its ``n`` uniforms at the same stream position in every order and the adversary
draws nothing when its budget is 0, so the orders are *coupled*: at α = 0 all three return identical ``z``;
``CLC(α₁, 0) ≡ CTL(α₁)`` and ``CLC(0, α₂) ≡ LTC(α₂)`` exactly, for the same seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from private_robust_align.adversary import corrupt, orthogonal_direction
from private_robust_align.errors import PrivateRobustAlignError, check_alpha, check_features, check_labels
from private_robust_align.mechanism import check_epsilon, randomized_response

ORDERS = ("CTL", "LTC", "CLC")


@dataclass(frozen=True)
class Privatized:
    """The released labels ``z [n]`` and what happened on the way (indices changed before/after RR)."""

    z: np.ndarray
    order: str
    epsilon: float
    alpha: tuple[float, float]
    changed_before: np.ndarray
    changed_after: np.ndarray

    @property
    def changed(self) -> int:
        """Labels the adversary changed (both stages)."""
        return int(self.changed_before.size + self.changed_after.size)


def streams(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    """(mechanism generator, adversary generator): separate streams from one seed."""
    mech, adv = np.random.SeedSequence(int(seed)).spawn(2)
    return np.random.default_rng(mech), np.random.default_rng(adv)


def split_alpha(order: str, alpha: float | Sequence[float]) -> tuple[float, float]:
    """(α before RR, α after RR) for ``order``; CLC takes a pair ``(α₁, α₂)`` with ``α₁ + α₂ ≤ 0.5``."""
    if order not in ORDERS:
        raise PrivateRobustAlignError(f"order must be one of {ORDERS}, got {order!r}")
    if order == "CLC":
        if isinstance(alpha, (int, float, np.floating)):
            raise PrivateRobustAlignError("order 'CLC' needs alpha as a pair (alpha1, alpha2)")
        pair = tuple(alpha)
        if len(pair) != 2:
            raise PrivateRobustAlignError(f"order 'CLC' needs alpha as a pair (alpha1, alpha2), got {alpha!r}")
        a1, a2 = check_alpha(pair[0], "alpha1"), check_alpha(pair[1], "alpha2")
        if a1 + a2 > 0.5:
            raise PrivateRobustAlignError(f"alpha1 + alpha2 must be <= 0.5, got {a1} + {a2} = {a1 + a2}")
        return a1, a2
    if not isinstance(alpha, (int, float, np.floating)) or isinstance(alpha, bool):
        raise PrivateRobustAlignError(f"order {order!r} needs alpha as one number in [0, 0.5), got {alpha!r}")
    a = check_alpha(alpha)
    return (a, 0.0) if order == "CTL" else (0.0, a)


def privatize_and_corrupt(x: np.ndarray, y: np.ndarray, *, order: str = "CTL", epsilon: float,
                          alpha: float | Sequence[float], seed: int, adversary: str = "directional",
                          theta_star: np.ndarray | None = None) -> Privatized:
    """Release labels ``z [n]`` from clean labels ``y [n]`` (features ``x [n, d]``) in the given ``order``.

    ``alpha`` is one fraction for CTL/LTC and a pair ``(α₁, α₂)`` for CLC; ``epsilon`` may be ``inf`` (no privacy).
    The directional adversary's u is drawn once per call from the adversary stream (before any corruption, only
    when some budget is positive), so it is the same u in CTL, LTC and CLC for one seed.
    """
    x = check_features(x)
    y = check_labels(y, n=x.shape[0], name="y")
    eps = check_epsilon(epsilon)
    a1, a2 = split_alpha(order, alpha)
    rng_mech, rng_adv = streams(seed)
    u = None
    if adversary == "directional" and (a1 > 0 or a2 > 0) and theta_star is not None:
        u = orthogonal_direction(np.asarray(theta_star, dtype=np.float64), rng_adv)
    first = corrupt(x, y, alpha=a1, adversary=adversary, rng=rng_adv, theta_star=theta_star, direction=u)
    z = randomized_response(first.labels, epsilon=eps, rng=rng_mech)
    second = corrupt(x, z, alpha=a2, adversary=adversary, rng=rng_adv, theta_star=theta_star, direction=u)
    return Privatized(z=second.labels, order=order, epsilon=eps, alpha=(a1, a2), changed_before=first.changed,
                      changed_after=second.changed)
