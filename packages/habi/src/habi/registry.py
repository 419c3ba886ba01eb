"""Registration of habi in the icml25 method registry (kept import-light: no torch here)."""

from __future__ import annotations

from pathlib import Path

from icml25.registry import Method


def _reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    from habi.reproduce import reproduce

    return reproduce(quick=quick, smoke=smoke, out=out, seed=seed)


METHOD = Method(
    name="habi",
    title="Habitizing Diffusion Planning for Efficient and Effective Decision Making (Habi)",
    venue="ICML 2025",
    url="https://arxiv.org/abs/2502.06401",
    reproduce=_reproduce,
    cli="habi",
)
