"""Side-by-side reproduction of LCIA's claims at CPU scale (``lcia reproduce [--quick|--smoke] [--task larger]``).

1. **Continual stream** (:func:`~lcia.reproduce.stream.continual_stream`): the five-task instruction stream of
   :mod:`lcia.data` on the tiny Llama of the icml25 test bed, LoRA r 8 on every linear layer, 100 steps of 16 per
   task with the paper's cosine schedule (3 % warm-up). Competence gates first: the base model beats the majority
   answer on its pre-training tasks, and every task is learned by a fresh adapter alone within the budget
   (just-learned accuracy above ``gate_share`` of what a long run to a plateau reaches). Rows, with the same LoRA
   rank, steps, task order and seeds (comparisons paired by seed), each with its lr (the fixed EMA also its α)
   chosen alike on the validation split over 2 seeds: sequential LoRA, + fixed EMA, + DEMA without grouping, full
   LCIA (DEMA + grouping); references: multitask joint training and one fresh adapter per task (oracle routing, the
   like-for-like reference for LCIA). Paper claims are gated; claims true by construction are ``property``.
2. **Cost** (:func:`~lcia.reproduce.cost.cost`): time per optimizer step with DEMA vs plain LoRA (target ≤ 1.3×) and
   DEMA's extra memory in exact bytes.

Modules: :mod:`~lcia.reproduce.common` (labels, worker state, tuning), :mod:`~lcia.reproduce.jobs` (worker jobs),
:mod:`~lcia.reproduce.stream` (the experiment and its claims), :mod:`~lcia.reproduce.cost`,
:mod:`~lcia.reproduce.figures`.
"""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Report
from icml25.experiment import run_experiments

from lcia.config import BUDGETS
from lcia.reproduce.cost import cost
from lcia.reproduce.stream import continual_stream

EXPERIMENTS = [continual_stream, cost]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int, task: str = "main") -> Report:
    """``task="main"``: every claim on the tiny Llama (the committed full run); ``"larger"``: the same experiments
    on a wider test-bed Llama (:data:`lcia.config.LARGER_BUDGETS`)."""
    from lcia.config import LARGER_BUDGETS, TASKS
    from lcia.errors import LciaError

    if task not in TASKS:
        raise LciaError(f"task must be one of {list(TASKS)}, got {task!r}")
    budgets = BUDGETS if task == "main" else LARGER_BUDGETS
    title = "" if task == "main" else "larger test-bed Llama (hidden 192, 2 layers)"
    return run_experiments("lcia", EXPERIMENTS, budgets, quick=quick, smoke=smoke, out=out, seed=seed, title=title)


__all__ = ["reproduce", "EXPERIMENTS", "continual_stream", "cost"]
