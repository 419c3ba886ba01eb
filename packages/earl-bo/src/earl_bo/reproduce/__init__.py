"""Side-by-side reproduction of EARL-BO's claims at CPU scale (Cheon et al., ICML 2025): a list of experiments.

1. ``regret`` (:mod:`earl_bo.reproduce.regret`): multi-task pre-training of one agent per dimension and seed until
   its validation regret plateaus; every method's knob tuned alike on validation functions; EARL-BO (H = 3) against
   Sobol search, the box-centre baseline, analytic LogEI, TuRBO-1 (and botorch's 2-step lookahead where d is small)
   from the same Sobol design per seed. Competence gates first (each method beats Sobol and the box-centre baseline;
   EARL-BO's pre-training plateaued), then the paper claims, each gated by both sides' gates.
2. ``ei_h1`` (:mod:`earl_bo.reproduce.checks`): with H = 1 the expected reward is EI; the trained H = 1 query against
   the EI maximiser, a random query and the untrained agent.
3. ``timing`` (:mod:`earl_bo.reproduce.checks`): seconds per BO iteration as d grows, and the incremental Cholesky
   update against botorch's conditioning (medians).

``reproduce(task="hpo-digits")`` (``earl-bo reproduce --task hpo-digits``) runs ``regret`` alone on the tuning task
(:data:`earl_bo.config.HPO_BUDGETS`), every knob tuned alike on the same task over sklearn's wine data.
"""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Report
from icml25.experiment import run_experiments

from earl_bo.config import BUDGETS, HPO_BUDGETS, TASKS
from earl_bo.errors import EarlBoError
from earl_bo.reproduce.checks import ei_h1, timing
from earl_bo.reproduce.jobs import _init_job, _job, _options, _valid, tune
from earl_bo.reproduce.regret import regret

EXPERIMENTS = [ei_h1, timing, regret]
"""The main run (``earl-bo reproduce``)."""
HPO_EXPERIMENTS = [regret]
"""``earl-bo reproduce --task hpo-digits``: the regret experiment on :data:`earl_bo.config.HPO_BUDGETS`."""

__all__ = ["EXPERIMENTS", "HPO_EXPERIMENTS", "reproduce", "regret", "ei_h1", "timing", "tune", "_job", "_init_job",
           "_options", "_valid"]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int, task: str = "main") -> Report:
    """Run the experiments of ``task`` (``main`` or ``hpo-digits``, :data:`earl_bo.config.TASKS`)."""
    if task not in TASKS:
        raise EarlBoError(f"--task must be one of {', '.join(TASKS)}, got {task!r}")
    if task == "hpo-digits":
        return run_experiments("earl-bo", HPO_EXPERIMENTS, HPO_BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed,
                               title="EARL-BO: hyper-parameter tuning task (HistGradientBoosting on sklearn digits)")
    return run_experiments("earl-bo", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)
