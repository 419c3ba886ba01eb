"""Registration of relgnn in the icml25 method registry (kept import-light: no torch here)."""

from __future__ import annotations

from pathlib import Path

from icml25.registry import Method


def _reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    from relgnn.reproduce import reproduce

    return reproduce(quick=quick, smoke=smoke, out=out, seed=seed)


METHOD = Method(
    name="relgnn",
    title="RelGNN: Composite Message Passing for Relational Deep Learning",
    venue="ICML 2025",
    url="https://github.com/snap-stanford/RelGNN",
    reproduce=_reproduce,
    cli="relgnn",
)
