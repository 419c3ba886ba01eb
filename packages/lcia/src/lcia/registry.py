"""Registration of lcia in the icml25 method registry (kept import-light: no torch here)."""

from __future__ import annotations

from pathlib import Path

from icml25.registry import Method


def _reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    from lcia.reproduce import reproduce

    return reproduce(quick=quick, smoke=smoke, out=out, seed=seed)


METHOD = Method(
    name="lcia",
    title="Large Continual Instruction Assistant",
    venue="ICML 2025",
    url="https://arxiv.org/abs/2410.10868",
    reproduce=_reproduce,
    cli="lcia",
)
