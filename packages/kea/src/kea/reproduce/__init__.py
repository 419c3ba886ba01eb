"""Side-by-side reproduction of the KEA paper's claims at CPU scale, as a list of experiments (Yang et al., ICML 2025).

Five agents from one implementation (:mod:`kea.variants`): plain SAC, RND-SAC, NovelD-SAC, KEA-RND and KEA-NovelD,
all with the released DeepSea regime: 4 parallel environments (gymnasium ``SyncVectorEnv``), prioritised replay
(α 0.6, β 0.4 → 1), 8 gradient steps every 16 transitions, β_e = N, β_i = 0.3, α = 0.1, 200 random warm-up episodes.

1. :func:`deepsea` — **tuned alike on a validation split**: every agent gets the same learning-rate grid and the
   same budget (:func:`icml25.tuning.tune_alike`), scored by the mean number of episodes until the declared greedy module
   solves a *validation* DeepSea instance (another action mapping, smaller N, seeds disjoint from the test seeds).
   **Test runs** on bsuite's instance (mapping 42) for each N of the budget, ≥ 5 seeds. Claims: episodes to solve
   (greedy return ≥ 0.99; unsolved = the budget) and distinct states visited by a fixed episode (the paper's
   visited-state metric), KEA vs its own novelty baseline, paired by seed; survival and coverage curves (PNG).
2. :func:`cost` — env-steps/s of RND-SAC over KEA-RND (both modules training) per DeepSea N and on GridNav, each
   its own target claim (≤ 2×).

``reproduce(task="deepsea-large")`` runs experiment 1 with :data:`kea.config.LARGE` (N = 14, 20);
``reproduce(task="continuous")`` runs :func:`continuous` (SparseMountainCar, continuous SAC modules);
``reproduce(task="ablation")`` runs :func:`ablation` (KEA-RND vs RND-SAC on 10 more seeds, KEA-RND's gate and σ
options). Jobs are fanned out over two forked worker processes with one torch thread each.

The experiments live one per module (``exploration``: :func:`deepsea`, ``throughput``: :func:`cost`,
``sparse_control``: :func:`continuous`, ``replication``: :func:`ablation` and ``OPTION_ROWS``), the learning-rate
tuning in ``lr_tuning`` (:func:`tune_lr`, :func:`tune`) and the shared helpers in ``common``; their names are
re-exported here.
"""

from __future__ import annotations

import os
from pathlib import Path

from icml25.claims import Claim, Report, fmt_seeds
from icml25.experiment import Section, run_experiments
from icml25.parallel import ForkPool

from kea.config import ABLATION, BUDGETS, CONTINUOUS, LARGE, Config, ContinuousConfig
from kea.reproduce.common import (
    PAIRS,
    PAPER,
    TASKS,
    TEST_MAPPING_SEED,
    VAL_MAPPING_SEED,
    VAL_SEED_OFFSET,
    VARIANT_NAMES,
    _curve,
    _fmt,
    _pool,
    _run,
    agent_kwargs,
    competence_gate,
    coverage_at,
    deepsea_controls,
    ds_job,
    gate_name,
    solve_episode,
    validation_split,
)
from kea.reproduce.exploration import deepsea
from kea.reproduce.lr_tuning import tune, tune_lr
from kea.reproduce.replication import OPTION_ROWS, ablation
from kea.reproduce.sparse_control import continuous
from kea.reproduce.throughput import cost

__all__ = ["ABLATION", "BUDGETS", "CONTINUOUS", "EXPERIMENTS", "LARGE", "OPTION_ROWS", "PAIRS", "PAPER", "TASKS",
           "TEST_MAPPING_SEED", "VAL_MAPPING_SEED", "VAL_SEED_OFFSET", "VARIANT_NAMES", "Claim", "Config",
           "ContinuousConfig", "ForkPool", "Report", "Section", "ablation", "agent_kwargs", "competence_gate",
           "continuous", "cost", "coverage_at", "deepsea", "deepsea_controls", "ds_job", "fmt_seeds", "gate_name",
           "reproduce", "run_experiments", "solve_episode", "tune", "tune_lr", "validation_split", "_curve", "_fmt",
           "_pool", "_run"]

EXPERIMENTS = [deepsea, cost]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int, task: str = "main") -> Report:
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if task == "deepsea-large":
        return run_experiments("kea", [deepsea], LARGE, quick=quick, smoke=smoke, out=out, seed=seed)
    if task == "continuous":
        return run_experiments("kea", [continuous], CONTINUOUS, quick=quick, smoke=smoke, out=out, seed=seed)
    if task == "ablation":
        return run_experiments("kea", [ablation], ABLATION, quick=quick, smoke=smoke, out=out, seed=seed)
    return run_experiments("kea", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)
