"""Presets of ``pipa train`` (:func:`paper`, :func:`cpu`) and the budgets of ``pipa reproduce``: one frozen
:class:`Budget` per mode in :data:`BUDGETS` (house shape).

The trainer's own settings live in :class:`pipa.trainer.PIPAConfig`; the budgets hold only what ``reproduce``
varies between smoke, quick and full runs (sizes, seeds and the tuning grids).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from icml25.experiment import Budgets


@dataclass(frozen=True)
class Budget:
    prior_steps: int
    n_prompts: int
    k: int
    steps: int
    batch_size: int
    eval_prompts: int
    val_prompts: int
    auc_prompts: int
    seeds: int
    baseline_lrs: tuple[float, ...]
    betas: tuple[float, ...]
    pipa_lrs: tuple[float, ...]
    extend: int = 0
    synthetic_samples: bool = False


@dataclass(frozen=True)
class TrainPreset:
    """The settings of ``pipa train`` a preset fixes (each is the flag of the same name; ``pipa train --preset``)."""

    steps: int = 80
    """Optimizer steps."""
    lr: float = 2e-5
    """Learning rate."""
    batch_size: int = 16
    """Rows per step."""
    max_length: int = 64
    """Longest <s> prompt completion </s>."""
    lora_r: int = 0
    """LoRA rank (0: full fine-tuning)."""


def paper() -> TrainPreset:
    """What the paper note gives of the paper's setting (pipa.md, "Method": "Hyper-parameters of the paper: not
    available in these notes. Sensible defaults: lr 5e-6…1e-4, 1–2 epochs, no β"): lr 5e-6 (the range's end for
    7B models), full fine-tuning, no β (PIPA has none); batch size and lengths stay the CPU preset's.

    Not expressible, or not known: the base models (7B math-instruct models, possibly; give ``--prior DIR``), the
    data (``--data``), "1–2 epochs" (``--steps`` counts optimizer steps: epochs x rows / batch size) and the
    paper's batch size and sequence length (not in the note)."""
    return TrainPreset(lr=5e-6)


def cpu() -> TrainPreset:
    """The CPU scale ``pipa train`` uses by default (the tiny-LM test bed of the note's "Reproduction at CPU scale"):
    80 steps of 16 rows at lr 2e-5, length 64, full fine-tuning."""
    return TrainPreset()


BETAS = (0.03, 0.1, 0.3, 1.0, 3.0)


def _geom(lo: float, hi: float, n: int) -> tuple[float, ...]:
    return tuple(float(f"{x:.3g}") for x in np.geomspace(lo, hi, n))


BUDGETS: Budgets[Budget] = Budgets(
    smoke=Budget(prior_steps=20, n_prompts=12, k=4, steps=2, batch_size=4, eval_prompts=16, val_prompts=8,
                 auc_prompts=8, seeds=1, baseline_lrs=(1e-4,), betas=(1.0,), pipa_lrs=(1e-4,),
                 synthetic_samples=True),
    # one-point grids: quick checks the pipeline, not the tuning (it runs in under a minute)
    quick=Budget(prior_steps=200, n_prompts=80, k=4, steps=6, batch_size=16, eval_prompts=100, val_prompts=50,
                 auc_prompts=30, seeds=3, baseline_lrs=(4e-5,), betas=(0.1,), pipa_lrs=(4e-5,)),
    full=Budget(prior_steps=200, n_prompts=300, k=4, steps=12, batch_size=16, eval_prompts=200, val_prompts=80,
                auc_prompts=50, seeds=5, baseline_lrs=(1e-5, 3e-5), betas=BETAS, pipa_lrs=_geom(5e-6, 1e-4, 10),
                extend=1),
)

def budget(*, quick: bool, smoke: bool) -> Budget:
    """The budget of a mode (``BUDGETS.pick``)."""
    return BUDGETS.pick(quick=quick, smoke=smoke)
