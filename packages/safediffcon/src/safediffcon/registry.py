"""Registration of safediffcon in the icml25 method registry (kept import-light: no torch here)."""

from __future__ import annotations

from pathlib import Path

from icml25.registry import Method


def _reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    from safediffcon.reproduce import reproduce

    return reproduce(quick=quick, smoke=smoke, out=out, seed=seed)


METHOD = Method(
    name="safediffcon",
    title="From Uncertain to Safe: Conformal Adaptation of Diffusion Models for Safe PDE Control",
    venue="ICML 2025",
    url="https://arxiv.org/abs/2502.02205",
    reproduce=_reproduce,
    cli="safediffcon",
)
