"""Metrics of the KEA paper's claims, computed from a :class:`kea.agent.Trace`.

* ``first_success_episode``: 1-based index of the first episode with positive extrinsic return (None if never).
* ``unique_state_ratio(keys, k)``: distinct states among the first ``k`` visited states, divided by ``k`` — higher
  means fewer repeated samples (KEA Sec. 4). Counted over the environment stream, not the replay storage.
* ``visited_state_ratio(keys, n_states)``: distinct states visited / number of states (the grid task's metric).
* ``entropy_in_high_novelty``: mean entropy (nats) of the *acting* policy over the learning-phase steps whose
  current state has normalised novelty ``z > 1`` (one running sd above the mean).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def first_success_episode(returns: Sequence[float]) -> int | None:
    for i, r in enumerate(returns):
        if r > 0:
            return i + 1
    return None


def unique_state_ratio(keys: Sequence[bytes], k: int | None = None) -> float:
    ks = list(keys if k is None else keys[:k])
    if not ks:
        raise ValueError("unique_state_ratio needs at least one visited state")
    return len(set(ks)) / len(ks)


def visited_state_ratio(keys: Sequence[bytes], n_states: int) -> float:
    if n_states <= 0:
        raise ValueError(f"n_states must be > 0, got {n_states}")
    return len(set(keys)) / n_states


def entropy_in_high_novelty(entropy: Sequence[float], high_novelty: Sequence[bool]) -> float:
    """Mean entropy at high-novelty learning-phase steps (NaN-entropy warm-up steps skipped); NaN if none.

    ``high_novelty[t]`` refers to the state reached at step t, i.e. the state acted in at step t+1.
    """
    ent = np.asarray(entropy, dtype=float)[1:]
    hi = np.asarray(high_novelty, dtype=bool)[:-1]
    m = hi & ~np.isnan(ent)
    return float(ent[m].mean()) if m.any() else math.nan
