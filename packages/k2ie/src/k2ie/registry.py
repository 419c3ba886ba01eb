"""Registration of k2ie in the icml25 method registry (kept import-light: no torch here)."""

from __future__ import annotations

from pathlib import Path

from icml25.registry import Method


def _reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    from k2ie.reproduce import reproduce

    return reproduce(quick=quick, smoke=smoke, out=out, seed=seed)


METHOD = Method(
    name="k2ie",
    title="K²IE: Kernel Method-based Kernel Intensity Estimators for Inhomogeneous Poisson Processes",
    venue="ICML 2025",
    url="https://arxiv.org/abs/2505.24704",
    reproduce=_reproduce,
    cli="k2ie",
)
