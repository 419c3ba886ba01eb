"""Registration of pes in the icml25 method registry (kept import-light: no torch here)."""

from __future__ import annotations

from pathlib import Path

from icml25.registry import Method


def _reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    from pes.reproduce import reproduce

    return reproduce(quick=quick, smoke=smoke, out=out, seed=seed)


METHOD = Method(
    name="pes",
    title="Convergence Analysis of Policy Gradient Methods with Dynamic Stochasticity",
    venue="ICML 2025",
    url="https://openreview.net/forum?id=XEYoTQv00G",
    reproduce=_reproduce,
    cli="pes",
)
