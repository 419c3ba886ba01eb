"""habi: Habitizing Diffusion Planning for Efficient and Effective Decision Making (Habi) (ICML 2025).

Public API (torch is imported lazily, on first use)::

    habi.HabitualPolicy      # act(observation) -> action; from_pretrained(run_dir)
    habi.DiffusionPlanner    # the Diffusion-QL teacher, same act(); from_pretrained(run_dir)
    habi.data.load_offline   # D4RL-layout .hdf5/.npz loader
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_LAZY = {
    "HabitualPolicy": ("habi.policy", "HabitualPolicy"),
    "DiffusionPlanner": ("habi.planner", "DiffusionPlanner"),
    "PlannerConfig": ("habi.planner", "PlannerConfig"),
    "HabiConfig": ("habi.model", "HabiConfig"),
    "HabitizeConfig": ("habi.habitize", "HabitizeConfig"),
    "Synergy": ("habi.model", "Synergy"),
    "train_planner": ("habi.planner", "train_planner"),
    "habitize": ("habi.habitize", "habitize"),
    "generate_goal_directed_behavior": ("habi.teacher", "generate_goal_directed_behavior"),
    "load_offline": ("habi.data", "load_offline"),
}
_SUBMODULES = ("data", "datagen", "diffusion", "envs", "losses", "model", "nets", "planner", "policy", "teacher",
               "habitize", "baselines", "benchmark", "reproduce")

__all__ = [*_LAZY, *_SUBMODULES, "__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from habi.data import load_offline
    from habi.habitize import HabitizeConfig, habitize
    from habi.model import HabiConfig, Synergy
    from habi.planner import DiffusionPlanner, PlannerConfig, train_planner
    from habi.policy import HabitualPolicy
    from habi.teacher import generate_goal_directed_behavior


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        mod, attr = _LAZY[name]
        value = getattr(importlib.import_module(mod), attr)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"habi.{name}")
    raise AttributeError(f"module 'habi' has no attribute {name!r}")
