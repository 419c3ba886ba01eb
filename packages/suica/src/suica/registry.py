"""Registration of suica in the icml25 method registry (kept import-light: no torch here)."""

from __future__ import annotations

from pathlib import Path

from icml25.registry import Method


def _reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    from suica.reproduce import reproduce

    return reproduce(quick=quick, smoke=smoke, out=out, seed=seed)


METHOD = Method(
    name="suica",
    title="SUICA: Learning Super-high Dimensional Sparse Implicit Neural Representations for Spatial Transcriptomics",
    venue="ICML 2025",
    url="https://github.com/Szym29/SUICA",
    reproduce=_reproduce,
    cli="suica",
)
