"""Side-by-side reproduction of the paper's claims for kea."""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Report


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    raise NotImplementedError("kea: reproduce is not written yet")
