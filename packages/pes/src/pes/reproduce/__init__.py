"""Side-by-side reproduction of the PES paper's claims at CPU scale: a list of experiments ``(cfg, seeds, out) ->
Section``, one module each.

1. :mod:`~pes.reproduce.lqr` ``lqr_comparison``: on the released LQR generator's shape (d_S = 1, d_A = 2, T = 20,
   γ = 0.99), fixed-σ GPOMDP / PGPE at σ ∈ {1, 0.1}, PES (10 phases × 50 iterations, y = 1), its ablations (Adam reset
   per phase; the earlier release's reset + warm start from the best θ; ζ ∝ σ²), fully dynamic PES (500 × 1,
   y = 0.5), SL-PG (exp and hyper, ν updated every iteration), each action- (AB) and parameter-based (PB), with equal
   samples and the same seeds. Every method's Adam step is tuned alike on validation seeds (disjoint from the test
   seeds), scored by the exact final deterministic gap ``J_D(K*) − J_D(θ_T)``; the rates N(ε) and their log-log
   exponents are read off the same exact curves.
2. :mod:`~pes.reproduce.clipped` ``clipped_comparison``: the same comparison on a bounded-reward task with saturated
   actions (:class:`pes.clipped.ClippedRegulator`), where σ moves the optimal stochastic policy, so a fixed σ leaves a
   deterministic gap; competence gates first.
3. :mod:`~pes.reproduce.properties` ``deployment_gap`` (``|J_D − J_P|``, ``|J_D − J_A|`` at the optimum against
   ``σ√d``, exact) and ``variance_vs_horizon`` (single-trajectory GPOMDP vs PGPE variance as T grows).
4. :mod:`~pes.reproduce.timing` ``timing``: time per iteration of PES and SL-PG relative to fixed σ, and the
   vectorised LQR against the same LQR stepped through ``gymnasium.vector.SyncVectorEnv``.
5. :mod:`~pes.reproduce.swimmer` ``swimmer``: MuJoCo Swimmer-v5 (T = 200), every method on ``swimmer_seeds`` seeds;
   without MuJoCo its claims are ``untested`` (a failing availability gate says what it would take).
"""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Report
from icml25.experiment import run_experiments

from pes.config import BUDGETS
from pes.reproduce.clipped import clipped_comparison
from pes.reproduce.lqr import lqr_comparison
from pes.reproduce.properties import deployment_gap, variance_vs_horizon
from pes.reproduce.swimmer import swimmer
from pes.reproduce.timing import timing

EXPERIMENTS = [lqr_comparison, clipped_comparison, deployment_gap, variance_vs_horizon, timing, swimmer]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    return run_experiments("pes", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)
