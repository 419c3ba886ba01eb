"""Registration of attn-consensus in the icml25 method registry (kept import-light: no torch here)."""

from __future__ import annotations

from pathlib import Path

from icml25.registry import Method


def _reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    from attn_consensus.reproduce import reproduce

    return reproduce(quick=quick, smoke=smoke, out=out, seed=seed)


METHOD = Method(
    name="attn-consensus",
    title="Consensus Is All You Get: The Role of Attention in Transformers",
    venue="ICML 2025",
    url="https://arxiv.org/abs/2412.02682",
    reproduce=_reproduce,
    cli="attn-consensus",
)
