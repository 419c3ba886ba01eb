"""Side-by-side reproduction on the synthetic relational database: a list of experiments (RelGNN, ICML 2025).

One generated database (:func:`relgnn.synthetic.make_database`, sized by :mod:`relgnn.config`) and, per task, one
set of temporal sub-graphs of every training row sampled once (:func:`relgnn.train.presample`) that every model,
grid point and seed trains on (:mod:`relgnn.reproduce.common`). Then:

1. **Gates** (:mod:`~relgnn.reproduce.gates`): every GNN trained until its validation metric plateaued and beats the
   no-relation floor (GBDT on the entity's own columns, trained on the same rows; popularity for recommendation)
   and the trivial control; the floor beats the trivial control (majority class / training median / random
   ranking).
2. **Comparison** (:mod:`~relgnn.reproduce.comparison`): RelGNN vs GraphSAGE (tuned alike) on the three
   bridge-dependent tasks and on the self-FK control; RelGNN vs the floor; each paper claim lists its gates and is
   ``untested`` where one does not hold.
3. **Ablation** (:mod:`~relgnn.reproduce.ablation`): attention vs mean over fact rows on the selective-relevance task.
4. **Performance** (:mod:`~relgnn.reproduce.performance`): time per epoch vs GraphSAGE; sampler seeds per second.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

from icml25.experiment import run_experiments

from relgnn.config import BUDGETS
from relgnn.reproduce.ablation import ablation
from relgnn.reproduce.common import (  # noqa: F401 (the names the tests and users import from relgnn.reproduce)
    FLOOR,
    NAMES,
    STEPS,
    floor_grid,
    gnn_grid,
    run_all,
    trivial_control,
    tune_in_passes,
    valid_floor_point,
    valid_point,
)
from relgnn.reproduce.comparison import comparison
from relgnn.reproduce.gates import gates
from relgnn.reproduce.performance import performance

EXPERIMENTS = [gates, comparison, ablation, performance]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    report = run_experiments("relgnn", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)
    cfg = BUDGETS.pick(quick=quick, smoke=smoke)
    report.notes.insert(0, f"budget: {asdict(cfg)}")
    return report
