"""Registration of select-augment in the icml25 method registry (kept import-light: no torch here)."""

from __future__ import annotations

from pathlib import Path

from icml25.registry import Method


def _reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    from select_augment.reproduce import reproduce

    return reproduce(quick=quick, smoke=smoke, out=out, seed=seed)


METHOD = Method(
    name="select-augment",
    title="When Dynamic Data Selection Meets Data Augmentation: Achieving Enhanced Training Acceleration",
    venue="ICML 2025",
    url="https://arxiv.org/abs/2505.03809",
    reproduce=_reproduce,
    cli="select-augment",
)
