"""Side-by-side reproduction of Habi's claims on locally generated data (a list of experiments).

House shape: :mod:`habi.config` holds ``Config`` and ``BUDGETS``; :data:`EXPERIMENTS` are run by
:func:`icml25.experiment.run_experiments`. One module per experiment:

* :mod:`habi.reproduce.returns`: the planner trained to its plateau, its labels, Habi (the paper's KL setting),
  BC and Distill-MSE tuned alike and trained to their plateaus, competence gates, then the paper's return claims;
* :mod:`habi.reproduce.speed`: decision frequency at batch 1 on one thread through the public ``act``;

with :mod:`habi.reproduce.common` (episodes, scores, controls, training jobs) and :mod:`habi.reproduce.teacher`
(the planner's plateau loop and the label diagnostic).

Tasks: ``main`` (Pendulum-v1 medium: returns + speed), ``replay`` (the returns protocol on medium-replay, its own
planner), ``hopper`` (the returns protocol on Hopper-v5 medium, needs the ``mujoco`` extra).
"""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Report
from icml25.experiment import run_experiments

from habi.config import BUDGETS, FULL, HOPPER_BUDGETS, QUICK, REPLAY_BUDGETS, SMOKE, Config
from habi.envs import require_mujoco
from habi.errors import HabiConfigError
from habi.reproduce.common import Trainer, _job, episode_seeds
from habi.reproduce.returns import returns
from habi.reproduce.speed import speed
from habi.reproduce.teacher import fit_planner, label_diagnostic

__all__ = ["BUDGETS", "FULL", "QUICK", "SMOKE", "Config", "EXPERIMENTS", "TASKS", "reproduce", "episode_seeds",
           "Trainer", "fit_planner", "label_diagnostic", "_job"]

EXPERIMENTS = [returns, speed]
TASKS = {"main": (EXPERIMENTS, BUDGETS), "replay": ([returns], REPLAY_BUDGETS), "hopper": ([returns], HOPPER_BUDGETS)}


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int, task: str = "main") -> Report:
    """``task="main"``: every claim on Pendulum-v1 medium; ``"replay"``: the returns protocol on medium-replay;
    ``"hopper"``: the returns protocol on Hopper-v5 medium data, D4RL-normalised (needs the ``mujoco`` extra)."""
    if task not in TASKS:
        raise HabiConfigError(f"task must be one of {tuple(TASKS)}, got {task!r}")
    if task == "hopper":
        require_mujoco("reproduce --task hopper (Hopper-v5)")
    exps, budgets = TASKS[task]
    return run_experiments("habi", exps, budgets, quick=quick, smoke=smoke, out=Path(out), seed=seed,
                           title="Habitizing Diffusion Planning for Efficient and Effective Decision Making (Habi)",
                           progress=not smoke)
