"""habi: Habitizing Diffusion Planning for Efficient and Effective Decision Making (Habi) (ICML 2025).

Public API (torch is imported lazily, on first use)::

    habi.HabitualPolicy      # act(observation) -> action; from_pretrained(run_dir)
    habi.DiffusionPlanner    # the Diffusion-QL teacher, same act(); from_pretrained(run_dir)
    habi.data.load_offline   # D4RL-layout .hdf5/.npz loader
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "HabitualPolicy": "habi.policy",
    "DiffusionPlanner": "habi.planner",
    "PlannerConfig": "habi.planner",
    "HabiConfig": "habi.model",
    "HabitizeConfig": "habi.habitize",
    "Synergy": "habi.model",
    "train_planner": "habi.planner",
    "habitize": "habi.habitize",
    "generate_goal_directed_behavior": "habi.teacher",
    "load_offline": "habi.data",
}, submodules=("baselines", "benchmark", "data", "datagen", "diffusion", "envs", "losses", "model", "nets",
               "planner", "policy", "reproduce", "teacher"))

if TYPE_CHECKING:  # pragma: no cover
    from habi.data import load_offline  # noqa: F401
    from habi.habitize import HabitizeConfig, habitize  # noqa: F401
    from habi.model import HabiConfig, Synergy  # noqa: F401
    from habi.planner import DiffusionPlanner, PlannerConfig, train_planner  # noqa: F401
    from habi.policy import HabitualPolicy  # noqa: F401
    from habi.teacher import generate_goal_directed_behavior  # noqa: F401
