"""Side-by-side reproduction of LIFT's claims on the offline tiny LM (CPU scale), as a list of experiments.

Source ("pre-training") task: 2-digit addition; the tiny Llama of ``icml25.testbeds.lm`` is trained on it once and
cached. Target task (small-data reasoning SFT): 2-digit subtraction (the full ``lift reproduce``) or 2-digit x
1-digit multiplication (``--quick``, ``--smoke`` and the ``lift reproduce --task mul`` sub-run), held-out operands for
testing.

Modules: :mod:`~lift.reproduce.runs` (the fine-tuning jobs, workers, alike tuning), :mod:`~lift.reproduce.gates`
(competence gates, retention helpers) and one module per experiment.

Experiments (:data:`EXPERIMENTS`, run by :func:`icml25.experiment.run_experiments` on
:data:`lift.config.TASK_BUDGETS`; ``cfg.experiments`` names the ones a task runs):

* :func:`compare` -- every method of ``cfg.methods`` tuned alike (the same number of grid points: lr x LoRA alpha,
  lr x mask interval, or a wider lr grid; validation split, bracketed), then run on every seed: target exact match,
  source retention, retention at matched target accuracy (along each method's lr curve), exact counts, time per
  step.
* :func:`rank_sweep` -- LIFT's filter rank r_f in ``cfg.sweep_ranks`` (0 = full rank = magnitude) at fixed k.
* :func:`memory` -- weights / gradients / optimizer state and the allocation-trace peak in-process, and the peak
  RSS in fresh processes on random-weight models (hidden 512 and a >= 50 M-parameter one), Full FT vs LoRA vs LIFT
  (sparse gradients) vs LIFT with dense gradients (the official code's path).
"""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Report
from icml25.experiment import run_experiments

from lift.reproduce.compare import compare
from lift.reproduce.gates import (
    gate_name,
    matched_retention,
    method_gates,
    retention_at,
    retention_gate,
    val_curves,
)
from lift.reproduce.peak_memory import memory
from lift.reproduce.rank_sweep import rank_sweep
from lift.reproduce.runs import (
    _CACHE,
    LR_CENTRES,
    PAPER,
    is_validation_prompt,
    lr_grid,
    run_many,
    run_methods,
    target_splits,
    time_mask,
    tuning_grid,
)

__all__ = ["EXPERIMENTS", "LR_CENTRES", "PAPER", "compare", "gate_name", "is_validation_prompt", "lr_grid",
           "matched_retention", "memory", "method_gates", "rank_sweep", "reproduce", "retention_at", "retention_gate",
           "run_many", "run_methods", "target_splits", "time_mask", "tuning_grid", "val_curves"]

EXPERIMENTS = [compare, rank_sweep, memory]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int, task: str = "main") -> Report:
    """Run the experiment list of ``task`` (:data:`lift.config.TASK_BUDGETS`; ``main`` = :data:`BUDGETS`) on the
    picked budget."""
    from lift.config import TASK_BUDGETS
    from lift.errors import LiftConfigError

    if task not in TASK_BUDGETS:
        raise LiftConfigError(f"task must be one of {', '.join(TASK_BUDGETS)}; got {task!r}")
    budgets = TASK_BUDGETS[task]
    cfg = budgets.pick(quick=quick, smoke=smoke)
    experiments = [e for e in EXPERIMENTS if e.__name__ in cfg.experiments]
    try:
        rep = run_experiments("lift", experiments, budgets, quick=quick, smoke=smoke, out=Path(out), seed=seed,
                              progress=not smoke)
    finally:
        _CACHE.clear()
    rep.notes.append(f"Task {task!r}. Sizes: {cfg}.")
    return rep
