"""Side-by-side reproduction of SOLD's claims at CPU scale: a list of experiments (Mosbach et al., ICML 2025).

Per seed (its own environment episodes, autoencoders and world models; small jobs on two forked workers with one
torch thread each):

1. **Data**: random-action episodes of ``ColorReach2D`` (task "push": 3 pushable discs, so objects move when the
   gripper hits them), disjoint reset seeds for the training, validation and test splits.
2. **Stage A**: SAVi and the holistic autoencoder pre-trained with the same steps, batch and data, each at its own
   learning rate (``ae.lr``, ``ae.holistic_lr``: the defaults are the choices of ``reproduce --task ae-lr``, which
   tunes both alike on grids of the same size by validation reconstruction MSE); the decomposition gate is the
   foreground ARI of SAVi's masks against the true object masks on the test episodes.
3. **Stage B**: the slot world model (OCVP dynamics + slot-aggregation reward head) and the holistic one (GRU dynamics
   + MLP reward head), each trained until its validation open-loop MSE plateaus (same budget and batch; best
   weights kept); the dynamics learning rate of each is tuned alike on the validation episodes of the first
   ``wm_tune_seeds`` seeds (grids of the same size, :func:`icml25.tuning.tune_alike`).
4. **Gates, then claims**: each world model must have plateaued and beat copying the last frame and the mean frame
   at each scored horizon block (horizon 1; horizons 6–10: disjoint, no finding counted twice) before the two are
   compared there; the reward attention claim needs SAVi's decomposition, a reward head better than the mean reward
   and attention above chance; engineering targets (environment steps per model update; SOLD's update time vs the
   holistic agent's).
5. ``reproduce --rl`` adds the behaviour-learning comparison: SOLD vs the holistic agent (same imagination code),
   each gated on beating a random policy's return, with a random policy and a scripted oracle beside them.

Modules: :mod:`~sold.reproduce.common` (references, gates, episodes, builders), :mod:`~sold.reproduce.jobs` (stage A
and B jobs), :mod:`~sold.reproduce.results` (the job schedule and the learning-rate choice), one module per experiment
(:mod:`~sold.reproduce.decomposition`, :mod:`~sold.reproduce.open_loop`, :mod:`~sold.reproduce.reward_attention`,
:mod:`~sold.reproduce.speed`, :mod:`~sold.reproduce.rl`, :mod:`~sold.reproduce.ae_lr`) and
:mod:`~sold.reproduce.figures`.
"""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Report
from icml25.experiment import run_experiments

from sold.config import BUDGETS, RL_LONG_BUDGETS, SAVI_LONG_BUDGETS
from sold.reproduce.ae_lr import autoencoder_lr
from sold.reproduce.common import (
    _DATA,
    ARI_GATE,
    ARI_GATE_NAME,
    PAPER_ATTN,
    PAPER_RL,
    PAPER_WM,
    SPLIT_OFFSETS,
    _build_ae,
    _data,
    _env,
    _fmt,
)
from sold.reproduce.decomposition import decomposition
from sold.reproduce.figures import _plot_decomposition, _plot_rollout
from sold.reproduce.jobs import _target_attention, _world_model, ae_job, controls, wm_job
from sold.reproduce.open_loop import KIND_NAMES, horizon_blocks, open_loop, wm_gate_name
from sold.reproduce.results import _CACHE, _SELECTED, _WANT_RL, _pool, _results, _select, _selection
from sold.reproduce.reward_attention import ATTN_GATE, REWARD_GATE, reward_attention
from sold.reproduce.rl import RL_KINDS, _sac_policy, behaviour, rl_job
from sold.reproduce.speed import SPEED_WIDTHS, _timing_agent, count_update, speed, speed_job, speed_width

__all__ = [
    "ARI_GATE", "ARI_GATE_NAME", "ATTN_GATE", "EXPERIMENTS", "KIND_NAMES", "PAPER_ATTN", "PAPER_RL", "PAPER_WM",
    "REWARD_GATE", "RL_KINDS", "SPEED_WIDTHS", "SPLIT_OFFSETS", "TASKS", "TASK_BUDGETS", "ae_job", "autoencoder_lr",
    "behaviour", "controls", "count_update", "decomposition", "horizon_blocks", "open_loop", "reproduce",
    "reward_attention", "rl_job", "speed", "speed_job", "speed_width", "wm_gate_name", "wm_job",
    "_CACHE", "_DATA", "_SELECTED", "_WANT_RL", "_build_ae", "_data", "_env", "_fmt", "_plot_decomposition",
    "_plot_rollout", "_pool", "_results", "_sac_policy", "_select", "_selection", "_target_attention",
    "_timing_agent", "_world_model",
]

EXPERIMENTS = [decomposition, open_loop, reward_attention, speed]

TASKS = {"main": None, "ae-lr": [autoencoder_lr], "rl-long": EXPERIMENTS + [behaviour],
         "speed-width": [speed_width], "savi-long": EXPERIMENTS}
TASK_BUDGETS = {"rl-long": RL_LONG_BUDGETS, "savi-long": SAVI_LONG_BUDGETS}
"""Tasks that run on their own budgets (the others use :data:`sold.config.BUDGETS`)."""


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int, rl: bool = False, task: str = "main") -> Report:
    """The experiment list on the picked budget; ``rl=True`` adds behaviour learning (:func:`behaviour`);
    ``task="ae-lr"`` runs the autoencoder learning-rate tuning (:func:`autoencoder_lr`) instead; ``task="rl-long"``
    the main run with behaviour learning on :data:`sold.config.RL_LONG_BUDGETS` (20 000 env steps, 3 seeds);
    ``task="savi-long"`` the main run with 8000 pre-training steps (:data:`sold.config.SAVI_LONG_BUDGETS`);
    ``task="speed-width"`` the update cost as SOLD's transformers shrink (:func:`speed_width`)."""
    from sold.errors import SoldError

    if task not in TASKS:
        raise SoldError(f"task must be one of {sorted(TASKS)}, got {task!r}")
    exps = TASKS[task] or (EXPERIMENTS + ([behaviour] if rl else []))
    _WANT_RL[0] = rl or task == "rl-long"
    budgets = TASK_BUDGETS.get(task, BUDGETS)
    try:
        return run_experiments("sold", exps, budgets, quick=quick, smoke=smoke, out=out, seed=seed)
    finally:
        _CACHE.clear()
        _SELECTED.clear()
        _WANT_RL[0] = False
