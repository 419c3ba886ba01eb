"""Side-by-side reproduction of PIPA's claims on the tiny-LM test bed, every method tuned alike and trained to a
plateau over all of its data.

One prior p⁰ (tiny Llama trained on noisy scratchpad additions, stopped early so its samples mix right and wrong
answers). Per seed: K completions per prompt sampled from p⁰, labelled by answer and by step; then every method
starts from a fresh copy of p⁰ with the same batch size, data and seed, in the paper's four data settings:

=================  ============================  =========================================================
data setting       baselines (trl)               ours (PIPA-M, PIPA-N)
=================  ============================  =========================================================
paired             DPO, IPO                      each pair = (x, y_w, c=1) + (x, y_l, c=0) (the default)
unpaired           KTO                           unpaired answer-level loss
step-paired        Step-DPO                      Step-DPO's pairs (prompt = x + right prefix), as above
step-unpaired      Step-KTO                      step-level loss over every labelled step
=================  ============================  =========================================================

Every method trains over **all** of its rows, at least one epoch, until its own objective plateaus on validation
rows (:mod:`pipa.plateau`; best validation checkpoint kept); its gate says it then beats the prior p⁰ on that
objective on test rows. Tuned alike (:func:`icml25.tuning.tune_alike`, one grid size for all): each trl baseline on
``lr × β``, each PIPA variant on an ``lr`` list of as many points; chosen by greedy accuracy on *validation* prompts
with the first seed's data; in the full run every setting is tuned, the step-level ones included
(``Budget.tune_step_levels``; without it the step-level methods reuse their answer-level counterpart's choice).
Then the chosen settings run on every seed, scored on the disjoint *test* prompts.

Sections (one module each): :mod:`~pipa.reproduce.accuracy` (gates, accuracy), :mod:`~pipa.reproduce.value_heads`
(AUC of g and of the posterior vs DPO's implicit reward), :mod:`~pipa.reproduce.cost` (time per step); all read
the one shared run of :mod:`~pipa.reproduce.common`.
"""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Report
from icml25.experiment import run_experiments

from pipa.config import BUDGETS, Budget, budget  # noqa: F401  (re-exported)
from pipa.reproduce.accuracy import accuracy, gates
from pipa.reproduce.common import _RUNS, METHODS, REUSE, SETTINGS, gate_name, grids, rows_key, run  # noqa: F401
from pipa.reproduce.cost import cost
from pipa.reproduce.value_heads import value_heads

EXPERIMENTS = [gates, accuracy, value_heads, cost]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    import shutil

    try:
        return run_experiments("pipa", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=Path(out), seed=seed)
    finally:
        _RUNS.clear()
        shutil.rmtree(Path(out) / "_tmp", ignore_errors=True)
