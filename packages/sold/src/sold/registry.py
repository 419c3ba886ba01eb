"""Registration of sold in the icml25 method registry (kept import-light: no torch here)."""

from __future__ import annotations

from pathlib import Path

from icml25.registry import Method


def _reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    from sold.reproduce import reproduce

    return reproduce(quick=quick, smoke=smoke, out=out, seed=seed)


METHOD = Method(
    name="sold",
    title="SOLD: Slot Object-Centric Latent Dynamics Models for Relational Manipulation Learning from Pixels",
    venue="ICML 2025",
    url="https://arxiv.org/abs/2410.08822",
    reproduce=_reproduce,
    cli="sold",
)
