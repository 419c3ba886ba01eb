"""Side-by-side reproduction at CPU scale (``private-robust-align reproduce [--quick|--smoke]``): a list of experiments.

Every experiment draws one dataset per seed (linear Bradley–Terry, ‖θ*‖ = B = 2, features uniform in the unit ball,
d = ``cfg.dim``) and runs the estimator and its baselines on the *same* data, the same mechanism uniforms and the same
adversary (coupled streams, :mod:`private_robust_align.orders`), so comparisons are paired by seed.

1. ``tuning``: the ridge λ = κ/n of every estimator with a λ (ours = debiased + ‖θ‖ ≤ B; the naive MLE on z; the debiased
   estimator without the constraint) chosen alike on one grid by the debiased log-loss of a privatized validation
   split (an unbiased estimate of the clean log-loss, the only criterion a private learner can compute). The
   sklearn oracle on clean labels has no knob (``penalty=None``).
2. ``separation``: CTL vs CLC(α/2, α/2) vs LTC under the directional, shrinking and random adversaries for every
   (ε, α); the corruption-induced shift ``‖θ̂(α) − θ̂(0)‖`` (coupled, so the sampling noise cancels), its LTC/CTL
   ratio against c(ε) = (e^ε + 1)/(e^ε − 1) and CLC's place between the two orders.
3. ``rates``: error slopes in n (α = 0, ε = 1, d = dim and 10), in ε (ε ≤ 0.5) and in α (both orders), the naive
   MLE's plateau, the oracle, and the unconstrained estimator at small n and ε.
4. ``policy``: greedy and pessimistic policies on a 200-context, 8-action bandit (α = 0, CTL, CLC, LTC, naive);
   SubOpt against π*.
5. ``speed``: fits per second and time relative to scikit-learn's LogisticRegression at the same n and d.
6. ``dpo``: trl DPO ``sigmoid`` vs ``robust`` vs conservative (cDPO) on RR-swapped pairs with a fresh tiny LM
   (:mod:`private_robust_align.dpo`).

One module per experiment family (``exp_tuning``, ``exp_separation``, ``exp_rates``, ``exp_policy``, ``exp_speed``,
``exp_dpo``); the shared constants and helpers are in ``common``.
"""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Report
from icml25.experiment import run_experiments

from private_robust_align.config import BUDGETS
from private_robust_align.reproduce.common import _between, _gaps, _interval
from private_robust_align.reproduce.exp_dpo import dpo
from private_robust_align.reproduce.exp_policy import policy
from private_robust_align.reproduce.exp_rates import rates
from private_robust_align.reproduce.exp_separation import separation
from private_robust_align.reproduce.exp_speed import speed
from private_robust_align.reproduce.exp_tuning import tuning

EXPERIMENTS = [tuning, separation, rates, policy, speed, dpo]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    return run_experiments("private-robust-align", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)


__all__ = ["EXPERIMENTS", "_between", "_gaps", "_interval", "dpo", "policy", "rates", "reproduce", "separation",
           "speed", "tuning"]
