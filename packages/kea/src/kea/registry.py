"""Registration of kea in the icml25 method registry (kept import-light: no torch here)."""

from __future__ import annotations

from pathlib import Path

from icml25.registry import Method


def _reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    from kea.reproduce import reproduce

    return reproduce(quick=quick, smoke=smoke, out=out, seed=seed)


METHOD = Method(
    name="kea",
    title="Keeping Exploration Alive: Proactively Coordinating Exploration Strategies (KEA)",
    venue="ICML 2025",
    url="https://arxiv.org/abs/2503.18234",
    reproduce=_reproduce,
    cli="kea",
)
