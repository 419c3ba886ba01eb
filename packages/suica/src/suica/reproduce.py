"""Side-by-side reproduction of the paper's claims for suica."""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Report


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    raise NotImplementedError("suica: reproduce is not written yet")
