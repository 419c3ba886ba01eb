"""Side-by-side reproduction of FOCoOp's claims on the tiny-CLIP federated OOD benchmark (issues 19, 62).

Every method — zero-shot CLIP, PromptFL, PromptFolio, FedOTP, FedPGP, FOCoOp and its three ablations (−DRO, −OT,
−OOD prompts) — runs on the same clients, splits, rounds and seeds, on three splits: Dirichlet α = 0.1 (label skew),
pathological (each client holds 2 of the 8 classes) and domain shift (each client sees its own corruption of the
shapes; CACC on a held-out corruption). Image features are encoded once.

Fairness:

* **Tuned alike.** The SGD learning rate of every trained method is chosen by :func:`icml25.tuning.tune_alike` on
  the same grid, with the same training budget (rounds, local epochs, shots), on a separate tuning federation of the
  same split (its own seed), by the mean over clients of the accuracy on each client's **validation** split (the rest
  of its share of the training pool; never the test split, never OOD data). Then the step of the feature-space
  adversary of every method with a DRO (FOCoOp, −OT, −OOD prompts) is chosen the same way, at its chosen lr, from
  :data:`ADV_GRID` (which holds the official step 1.0). The chosen values then run on every test seed; the
  adversary's perturbation norm ‖δ‖ (text features have norm 1) is reported for every trial and test run.
* **One pre-declared scoring rule.** Every OOD claim scores every method the same way: MSP over the C ID columns of
  the softmax over the C ID columns plus K negative-word columns — FOCoOp's learned OOD prompts for FOCoOp and its
  ablations with OOD prompts, the same K negative words as zero-shot NegLabel columns for every method without OOD
  prompts (:data:`DECLARED`). The other scorings (own MSP, own energy, NegLabel's summed score) are reported in the
  tables only, never chosen on test.
* **Gates.** Each trained method must beat zero-shot CLIP (and chance) on ID accuracy, per split, before a claim
  that uses it is scored; the OOD claims of a split are scored only where FOCoOp's detector differs from zero-shot
  CLIP with the same negative words (two-sided paired test on FPR95). A claim whose gate is not met is ``untested``.
* **Multiplicity.** Each claim is made on the three splits; its verdict uses a Bonferroni-corrected level 0.05/3
  (stated in the claim's test and note).

Claims are computed from the per-seed numbers with :meth:`icml25.claims.Claim.compare` (paired by seed: every method
sees the same split and seed).

Modules: :mod:`~focoop.reproduce.common` (methods, scorings, splits, grids, :class:`Budget` / :data:`BUDGETS` and the
shared state), :mod:`~focoop.reproduce.tune` (the ``tuning`` section), :mod:`~focoop.reproduce.runs` (the test runs and
the Flower/engine check), :mod:`~focoop.reproduce.tables` (result tables), :mod:`~focoop.reproduce.comparison` (the
``results`` section: gates, per-split claims, Bonferroni) and :mod:`~focoop.reproduce.plots` (the ``figures`` section).
"""

from __future__ import annotations

# the names reproduce.py imported stay importable from focoop.reproduce (time, np, Claim, ...)
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from icml25.claims import Claim, Report, mean_sd
from icml25.experiment import Budgets, Section, run_experiments

from focoop.reproduce.common import (
    _STATE,
    ADV_GRID,
    ALPHA,
    BASELINES,
    BUDGETS,
    DECLARED,
    DRO_METHODS,
    FOCOOP_SCORING,
    LABELS,
    LR_GRID,
    METHODS,
    MULTI_SCORED,
    PAPER,
    SCORINGS,
    SPLITS,
    TRAINED,
    TUNE_SEED_OFFSET,
    Budget,
    _Bench,
    _delta_stats,
    _row_label,
    _state,
)
from focoop.reproduce.comparison import _bonferroni, _gates, _id_gate, _ood_gate, _split_claims, results
from focoop.reproduce.plots import figures
from focoop.reproduce.runs import _test_runs
from focoop.reproduce.tables import _result_tables
from focoop.reproduce.tune import tuning

__all__ = ["ADV_GRID", "ALPHA", "BASELINES", "BUDGETS", "DECLARED", "DRO_METHODS", "EXPERIMENTS", "FOCOOP_SCORING",
           "LABELS", "LR_GRID", "METHODS", "MULTI_SCORED", "PAPER", "SCORINGS", "SPLITS", "TRAINED", "TUNE_SEED_OFFSET",
           "Budget", "figures", "reproduce", "results", "tuning"]

EXPERIMENTS = [tuning, results, figures]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    import torch

    torch.set_num_threads(1)  # tiny ops: one thread avoids OpenMP spin on shared cores
    try:
        return run_experiments("focoop", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=Path(out), seed=seed)
    finally:
        _STATE.clear()
