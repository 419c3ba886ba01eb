"""Registration of focoop in the icml25 method registry (kept import-light: no torch here)."""

from __future__ import annotations

from pathlib import Path

from icml25.registry import Method


def _reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    from focoop.reproduce import reproduce

    return reproduce(quick=quick, smoke=smoke, out=out, seed=seed)


METHOD = Method(
    name="focoop",
    title="FOCoOp: Enhancing OOD Robustness in Federated Prompt Learning for Vision-Language Models",
    venue="ICML 2025",
    url="https://arxiv.org/abs/2506.16218",
    reproduce=_reproduce,
    cli="focoop",
)
