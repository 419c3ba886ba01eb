"""The slot reward model's attention on the target disc, behind the decomposition, reward and attention gates."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from icml25.claims import Claim
from icml25.experiment import Section

from sold.config import Config
from sold.reproduce.common import ARI_GATE_NAME, PAPER_ATTN
from sold.reproduce.results import _results, _selection

REWARD_GATE = ("Gate: the slot reward head has learned the reward (test MSE of its mean prediction below predicting "
               "the training episodes' mean reward)")
ATTN_GATE = "Gate: the slot reward model's attention on the target disc's slot is above chance (1/K)"


def reward_attention(cfg: Config, seeds: list[int], out: Path) -> Section:
    """The slot reward model's output-token attention on the target disc's slot vs the other discs' slots, behind
    three gates: SAVi decomposes the scene, the reward head predicts the reward, the attention is above chance."""
    sec = Section("reward attention")
    res = _results(cfg, seeds)
    lr = _selection(cfg, seeds)["slots"].params["lr"]
    w = [r["wm"][("slots", lr)] for r in res]
    sec.add(Claim.gate(
        claim=REWARD_GATE, metric="MSE of the TwoHot mean reward prediction (test episodes, steps 1–12)",
        ours=[x["reward_mse"] for x in w], controls={"training-mean reward": [x["reward_mse_mean"] for x in w]},
        higher_is_better=False, paired=True,
        note="trained jointly with the dynamics (the world model's plateau is gated in the open-loop section); "
             f"reward: −distance of the odd-coloured disc to the goal (task {cfg.env.task!r})"))
    sec.table("Reward head (test MSE of the mean prediction; holistic beside it)",
              ["seed", "slots", "holistic", "training-mean reward"],
              [[r["seed"], r["wm"][("slots", lr)]["reward_mse"],
                r["wm"][("holistic", _selection(cfg, seeds)["holistic"].params["lr"])]["reward_mse"],
                r["wm"][("slots", lr)]["reward_mse_mean"]] for r in res])
    tgt = [x.get("attn_target", float("nan")) for x in w]
    oth = [x.get("attn_other", float("nan")) for x in w]
    ok = [i for i in range(len(res)) if np.isfinite(tgt[i]) and np.isfinite(oth[i])]
    sec.table("Reward-model attention share per seed", ["seed", "target disc", "other discs (mean)"],
              [[r["seed"], t, o] for r, t, o in zip(res, tgt, oth)])
    if not ok:
        sec.notes.append("reward attention: no frame where the target disc has a slot of its own (decomposition "
                         "failed), so no read-out")
        return sec
    chance = 1.0 / cfg.ae.num_slots
    sec.add(Claim.gate(
        claim=ATTN_GATE, metric="share of the last layer's output-token attention on the target disc's slot",
        ours=[tgt[i] for i in ok], controls={f"chance 1/{cfg.ae.num_slots}": chance}, higher_is_better=True,
        note=f"{len(ok)}/{len(res)} seeds have a read-out"))
    sec.add(Claim.compare(
        claim="The slot reward model attends more to the target disc's slot than to the other discs' slots",
        metric="share of the last layer's output-token attention (mean over heads) on a disc's slot, same step",
        ours=[tgt[i] for i in ok], baseline=[oth[i] for i in ok], baseline_name="mean over the non-target discs",
        paper=PAPER_ATTN, kind="paper", paired=True, gates=[ARI_GATE_NAME, REWARD_GATE, ATTN_GATE],
        note=f"task {cfg.env.task!r}; chance = 1/{cfg.ae.num_slots}; "
             f"frames where the target shares its slot are skipped; {len(ok)}/{len(res)} seeds have a read-out"))
    return sec
