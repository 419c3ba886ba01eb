"""Side-by-side reproduction of SafeDiffCon's Burgers claims: a list of experiments.

``safe_control``: one pretrained diffusion model per run (the shared starting checkpoint of every diffusion method,
as in the paper's pipeline); per seed, fresh calibration / held-out / test instances, post-training, InfFT,
sampling and the adjoint baseline; every control is re-simulated with the true solver. ``speed``: the engineering
targets of the issue (batched solver vs a per-trajectory loop, guided vs unguided sampling).
"""


from __future__ import annotations

from pathlib import Path

from icml25.claims import Report
from icml25.experiment import run_experiments

from safediffcon.config import BUDGETS, BUDGETS_NX128
from safediffcon.errors import SafediffconError
from safediffcon.reproduce.safe_control import safe_control
from safediffcon.reproduce.speed import speed

EXPERIMENTS = [safe_control, speed]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int, task: str = "nx64") -> Report:
    """``task="nx64"``: the committed full run (:data:`safediffcon.config.BUDGETS`); ``"nx128"``: the official grid
    (:data:`safediffcon.config.BUDGETS_NX128`), a sub-run."""
    budgets = {"nx64": BUDGETS, "nx128": BUDGETS_NX128}
    if task not in budgets:
        raise SafediffconError(f"--task must be one of {sorted(budgets)}, got {task!r}")
    return run_experiments("safediffcon", EXPERIMENTS, budgets[task], quick=quick, smoke=smoke, out=out, seed=seed)
