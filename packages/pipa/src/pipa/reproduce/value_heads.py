"""The value head g and the posterior p(c=1|x,y) of every PIPA run as correctness predictors, each against DPO's
implicit reward β·(log π − log p⁰) (Step-DPO's per-step implicit reward for the step-level runs) on the same
held-out samples of p⁰ and seeds."""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Claim
from icml25.experiment import Section

from pipa.config import Budget
from pipa.reproduce.common import PIPA_RUNS, gate_name, shared_run


def value_heads(b: Budget, seeds: list[int], out: Path) -> Section:
    res = shared_run(b, seeds, out)
    R = res["results"]
    sec = Section("value heads")
    for name in PIPA_RUNS:
        step = "step" in name
        base = "Step-DPO" if step else "DPO"
        where = ("per step: g read at the end of the prefix before step k, the posterior and the implicit reward on "
                 "step k" if step else "per completion: g read at the last prompt token")
        for score, key, paper in (
                ("value head g", "g_auc", "token-level credit assignment from the value head (introduction)"),
                ("posterior p(c=1|x,y)", "posterior_auc", "PIPA estimates p(c=1|x,y) by MLE (method)")):
            sec.add(Claim.compare(
                claim=f"{name}: {score} predicts correctness better than {base}'s implicit reward",
                metric=f"ROC-AUC on {res['n_auc']} held-out p⁰ samples ({'steps' if step else 'answers'})",
                ours=R[name][key], baseline=R[base]["reward_auc"], baseline_name=f"{base} β·(log π − log p⁰)",
                paper=paper, kind="paper", paired=True, gates=[gate_name(name), gate_name(base)],
                note=f"{where}; same seeds (paired t-test)"))
    return sec
