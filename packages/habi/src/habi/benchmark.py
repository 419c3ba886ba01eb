"""Decision-frequency benchmark: single-state (batch 1) decisions per second on one CPU thread, after warm-up.

Every policy is timed end to end through its public ``act(observation) -> action`` (numpy in, numpy out, state
normalisation included) with ``time.perf_counter``. Policies are timed in interleaved rounds (A, B, C, A, B, C, ...)
so that load from other processes on a shared machine hits all of them alike; the reported rate is
``decisions / total time`` over all rounds, and the ratio of two rates is computed per round (median reported).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from habi.errors import HabiConfigError


def decision_frequency(policies: Mapping[str, Callable[[np.ndarray], np.ndarray]], observations: np.ndarray, *,
                       decisions: Mapping[str, int] | int = 1000, warmup: int = 50, rounds: int = 5,
                       threads: int = 1) -> dict[str, dict[str, float | list[float]]]:
    """Time ``act`` at batch 1 for each policy.

    Args:
        policies: name -> ``act(observation (obs_dim,)) -> action (act_dim,)``.
        observations: ``(M, obs_dim)`` raw observations cycled through.
        decisions: decisions per policy (split over the rounds); an int or a per-name mapping.
        warmup: untimed decisions per policy before timing.
        rounds: interleaved timing rounds.
        threads: ``torch.set_num_threads`` and numpy's BLAS thread limit during the benchmark (restored
            afterwards).

    Returns:
        name -> ``{"hz": float, "latency_us": float (median per-round mean latency), "hz_rounds": [...]}``.
    """
    if rounds < 1 or warmup < 0:
        raise HabiConfigError(f"rounds must be >= 1 and warmup >= 0, got {rounds}, {warmup}")
    obs = np.asarray(observations, dtype=np.float32)
    if obs.ndim != 2 or len(obs) == 0:
        raise HabiConfigError(f"observations must be a non-empty (M, obs_dim) array, got shape {obs.shape}")
    prev = torch.get_num_threads()
    torch.set_num_threads(threads)
    limits = threadpool_limits(threads)  # numpy's BLAS too (the compiled batch-1 paths run in numpy)
    try:
        for fn in policies.values():
            for i in range(warmup):
                fn(obs[i % len(obs)])
        times = {k: [] for k in policies}
        counts = {k: (decisions if isinstance(decisions, int) else decisions[k]) for k in policies}
        for _ in range(rounds):
            for name, fn in policies.items():
                n = max(1, counts[name] // rounds)
                t0 = time.perf_counter()
                for i in range(n):
                    fn(obs[i % len(obs)])
                times[name].append((n, time.perf_counter() - t0))
    finally:
        torch.set_num_threads(prev)
        limits.restore_original_limits()
    out: dict[str, dict[str, float | list[float]]] = {}
    for name, ts in times.items():
        n_tot, t_tot = sum(n for n, _ in ts), sum(t for _, t in ts)
        out[name] = {"hz": n_tot / t_tot, "latency_us": float(np.median([1e6 * t / n for n, t in ts])),
                     "hz_rounds": [n / t for n, t in ts]}
    return out


def speedup(results: Mapping[str, Mapping[str, float | list[float]]], fast: str, slow: str) -> float:
    """Median over rounds of ``hz(fast) / hz(slow)`` (rounds were interleaved, so they share the load)."""
    f, s = results[fast]["hz_rounds"], results[slow]["hz_rounds"]
    return float(np.median(np.asarray(f) / np.asarray(s)))


def batched_throughput(act_batch: Callable[[np.ndarray], np.ndarray], observations: np.ndarray, *,
                       batch: int = 50, calls: int = 20, threads: int = 1) -> float:
    """Decisions per second when ``batch`` states are decided in one call (the official evaluation's regime)."""
    obs = np.asarray(observations, dtype=np.float32)
    idx = np.arange(batch) % len(obs)
    prev = torch.get_num_threads()
    torch.set_num_threads(threads)
    limits = threadpool_limits(threads)
    try:
        act_batch(obs[idx])
        t0 = time.perf_counter()
        for _ in range(calls):
            act_batch(obs[idx])
        return batch * calls / (time.perf_counter() - t0)
    finally:
        torch.set_num_threads(prev)
        limits.restore_original_limits()
