"""Side-by-side reproduction of the paper's qualitative claims at CPU scale (``sggm reproduce [--quick|--smoke]``).

The paper has figures, no numbers. Everything but the learned-score check is exact: the output law of the
Euler–Maruyama reverse system is propagated in closed form on Gaussian graph models (:mod:`sggm.gaussian`), so the
seeds only change the random graphs. Experiments:

1. ``steps``: KL vs N (log-log slope) with the exact and the ε-perturbed score, regular vs power-law graphs.
2. ``horizon``: KL vs T at fixed N (U shape); the score-error term isolated with the exact p_T and a very fine N;
   the initialisation term (prior N(0, I) vs the exact p_T). T* is chosen on a validation graph.
3. ``topology``: KL per entry vs n, regular vs power-law at equal n and mean degree; correlation with the max degree.
4. ``normalisation``: normalised vs combinatorial Laplacian (paradigm 1) and feature standardisation (paradigm 2).
5. ``coupling``: the joint model's KL vs the coupling, against the sum of the two conditional paradigms.
6. ``exactness``: exact law vs Monte-Carlo runs of the same sampler; eigenbasis vs dense recursion (speed-up).
7. ``learned``: a learned GDSS-style score vs the exact score (paradigm 1, Monte-Carlo KL).
8. ``standard_sets``: a trained joint-paradigm model (X and A) on community-small, grid and ego-like graphs, scored by
   GDSS's degree / clustering / orbit MMDs, against a structure-only score model (tuned alike) and an Erdős–Rényi
   control (the competence gates).

The experiments live one per module (``exact_law``: 1-5, ``monte_carlo``: 6, ``learned_score``: 7, ``graph_sets``: 8);
their names are re-exported here.
"""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Report
from icml25.experiment import run_experiments

from sggm.config import BUDGETS
from sggm.reproduce.common import FAMILIES, PAPER_NOTE, _fig, _kl, _model, _slope
from sggm.reproduce.exact_law import (
    SPEARMAN_CLAIM,
    coupling,
    horizon,
    normalisation,
    spearman_claim,
    steps,
    topology,
)
from sggm.reproduce.graph_sets import STD_METRICS, STD_MODELS, _standard_sets, standard_sets
from sggm.reproduce.learned_score import _exact_feature_score, _learned, learned
from sggm.reproduce.monte_carlo import _columns, _mc_kl_rel_err, _run_mc, exactness

__all__ = ["EXPERIMENTS", "FAMILIES", "PAPER_NOTE", "SPEARMAN_CLAIM", "STD_METRICS", "STD_MODELS", "coupling",
           "exactness", "horizon", "learned", "normalisation", "reproduce", "spearman_claim", "standard_sets", "steps",
           "topology", "_columns", "_exact_feature_score", "_fig", "_kl", "_learned", "_mc_kl_rel_err", "_model",
           "_run_mc", "_slope", "_standard_sets"]

EXPERIMENTS = [steps, horizon, topology, normalisation, coupling, exactness, learned, standard_sets]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    return run_experiments("sggm", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)
