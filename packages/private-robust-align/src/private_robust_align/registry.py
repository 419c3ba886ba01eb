"""Registration of private-robust-align in the icml25 method registry (kept import-light: no torch here)."""

from __future__ import annotations

from pathlib import Path

from icml25.registry import Method


def _reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    from private_robust_align.reproduce import reproduce

    return reproduce(quick=quick, smoke=smoke, out=out, seed=seed)


METHOD = Method(
    name="private-robust-align",
    title="A Unified Theoretical Analysis of Private and Robust Offline Alignment: from RLHF to DPO",
    venue="ICML 2025",
    url="https://arxiv.org/abs/2505.15694",
    reproduce=_reproduce,
    cli="private-robust-align",
)
