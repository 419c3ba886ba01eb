"""Side-by-side reproduction of Ghadiri et al. (ICML 2025) at CPU scale: a list of experiments.

1. ``block_fixed_point`` — one ALS block: lifted Richardson converges to the direct masked solve; how far the
   released loss-decrease stop rule and our block-convergence rule stop from it (the audit in the README).
2. ``rate_vs_p`` — the contraction ρ of the error map against 1 − p, and inner updates against 1/p, on two block
   sizes (J = Khatri–Rao rows per factor row); the updates are also predicted from ρ(M).
3. ``speed_accuracy`` — CP completion of a random rank-R tensor at every p: direct (vectorised), the official-style
   per-entry loop, EM-ALS (ours and tensorly"s ``parafac(mask=)``), lifted ± acceleration, leverage-sampled lifted,
   and the released stop rule; same tensor, Ω and N(0, 0.1²) start per seed. The lifted ε is chosen on a separate
   validation instance (its own tensor, Ω and start) as the fastest ε of the grid whose held-out RRE is within
   ``accuracy_margin`` of the direct solver"s; direct, the loop and EM-ALS have no knob.
4. ``every_eps`` — lifted at every ε of the paper"s grid, ± acceleration, under both stop rules (one p).
5. ``more_tensors`` — random Tucker (4,4,4), a Gaussian tensor, digits 8×8×1797 and a blob video: direct, EM-ALS
   (both), lifted + acceleration with ε chosen on validation.
6. ``kronecker_black_box`` — the same driver with a Tucker-core (Kronecker) and a tensor-train core regression as
   the black box reaches the masked least-squares solution of the explicit design.
"""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Report
from icml25.experiment import run_experiments

from richardson_tc.config import BUDGETS
from richardson_tc.reproduce.black_box import _tt_block, kronecker_black_box, tt_completion
from richardson_tc.reproduce.common import (
    LABELS,
    LOGS,
    VAL_SEED,
    VARIANTS,
    _block,
    _dist,
    _eps_down,
    _eps_up,
    _lam_up,
    _problem,
    _select_eps,
    _validation_view,
    matched_error_gate,
    mean_predictor_rre,
    select_extending,
)
from richardson_tc.reproduce.fixed_point import _updates_to_solution, block_fixed_point, rate_vs_p
from richardson_tc.reproduce.speed import (
    EPS_ROWS,
    _figures,
    _memory_table,
    every_eps,
    large_tensor,
    speed_accuracy,
)
from richardson_tc.reproduce.tensors import (
    DATA_VARIANTS,
    RIDGE_VARIANTS,
    _data_problem,
    _edge_summary,
    more_tensors,
    ridge,
    sampling,
)

EXPERIMENTS = [block_fixed_point, rate_vs_p, speed_accuracy, large_tensor, every_eps, more_tensors, ridge, sampling,
               kronecker_black_box, tt_completion]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    return run_experiments("richardson-tc", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)


__all__ = [
    "DATA_VARIANTS",
    "EPS_ROWS",
    "EXPERIMENTS",
    "LABELS",
    "LOGS",
    "RIDGE_VARIANTS",
    "VAL_SEED",
    "VARIANTS",
    "_block",
    "_data_problem",
    "_dist",
    "_edge_summary",
    "_eps_down",
    "_eps_up",
    "_figures",
    "_lam_up",
    "_memory_table",
    "_problem",
    "_select_eps",
    "_tt_block",
    "_updates_to_solution",
    "_validation_view",
    "block_fixed_point",
    "every_eps",
    "kronecker_black_box",
    "large_tensor",
    "matched_error_gate",
    "mean_predictor_rre",
    "more_tensors",
    "rate_vs_p",
    "reproduce",
    "ridge",
    "sampling",
    "select_extending",
    "speed_accuracy",
    "tt_completion",
]
