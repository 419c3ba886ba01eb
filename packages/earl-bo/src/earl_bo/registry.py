"""Registration of earl-bo in the icml25 method registry (kept import-light: no torch here)."""

from __future__ import annotations

from pathlib import Path

from icml25.registry import Method


def _reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    from earl_bo.reproduce import reproduce

    return reproduce(quick=quick, smoke=smoke, out=out, seed=seed)


METHOD = Method(
    name="earl-bo",
    title="EARL-BO: Reinforcement Learning for Multi-Step Lookahead, High-Dimensional Bayesian Optimization",
    venue="ICML 2025",
    url="https://arxiv.org/abs/2411.00171",
    reproduce=_reproduce,
    cli="earl-bo",
)
