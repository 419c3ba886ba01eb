"""Registration of string-pe in the icml25 method registry (kept import-light: no torch here)."""

from __future__ import annotations

from pathlib import Path

from icml25.registry import Method


def _reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    from string_pe.reproduce import reproduce

    return reproduce(quick=quick, smoke=smoke, out=out, seed=seed)


METHOD = Method(
    name="string-pe",
    title="Learning the RoPEs: Better 2D and 3D Position Encodings with STRING",
    venue="ICML 2025",
    url="https://icml.cc/virtual/2025/poster/44900",
    reproduce=_reproduce,
    cli="string-pe",
)
