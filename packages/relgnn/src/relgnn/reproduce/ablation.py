"""The attention ablation: RelGNN with a mean over fact rows instead of attention (``gnn="relgnn-mean"``) at
RelGNN's chosen knobs on every seed; the paper note's claim "the attention ablation loses part of the gain on the
selective-relevance task" (user-churn: only premium-item purchases carry the signal)."""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Claim
from icml25.experiment import Section

from relgnn.config import Config
from relgnn.reproduce.common import run_all, tests_of
from relgnn.reproduce.gates import gate_names

PAPER_ATTN = ("paper, ablation: the attention in the composite route matters where only some fact rows are "
              "relevant (the note's selective-relevance design; the paper's ablation numbers not transcribed)")


def ablation(cfg: Config, seeds: list[int], out: Path) -> Section:
    info = run_all(cfg, seeds)
    s = Section("attention ablation")
    for task in info["ablation_tasks"]:
        t = info["tasks"][task]
        s.add(Claim.compare(
            claim=f"Attention over fact rows beats a mean over them in RelGNN's composite routes ({task}; the "
                  f"ablation at RelGNN's chosen knobs)",
            metric=f"test {t['metric']}", ours=tests_of(info, task, "relgnn"),
            baseline=tests_of(info, task, "relgnn-mean"), baseline_name="RelGNN, mean instead of attention",
            paper=PAPER_ATTN, kind="paper", higher_is_better=t["hib"], paired=True,
            gates=gate_names(info, task, ("relgnn", "relgnn-mean")),
            note="only ~12 % of the bridge rows (premium items) carry the churn signal; same seeds, same sub-graphs"))
    return s
