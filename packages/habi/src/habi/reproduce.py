"""Side-by-side reproduction of the paper's claims for habi."""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Report


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    raise NotImplementedError("habi: reproduce is not written yet")
