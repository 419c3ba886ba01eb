"""Registration of richardson-tc in the icml25 method registry (kept import-light: no torch here)."""

from __future__ import annotations

from pathlib import Path

from icml25.registry import Method


def _reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    from richardson_tc.reproduce import reproduce

    return reproduce(quick=quick, smoke=smoke, out=out, seed=seed)


METHOD = Method(
    name="richardson-tc",
    title="Fast Tensor Completion via Approximate Richardson Iteration",
    venue="ICML 2025",
    url="https://arxiv.org/abs/2502.09534",
    reproduce=_reproduce,
    cli="richardson-tc",
)
