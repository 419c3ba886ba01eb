"""Time per training step (whole trainer step, and inside compute_loss) vs trl's DPO and KTO, paired by seed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from icml25.claims import Claim
from icml25.experiment import Section

from pipa.config import Budget
from pipa.reproduce.common import shared_run


def cost(b: Budget, seeds: list[int], out: Path) -> Section:
    R = shared_run(b, seeds, out)["results"]
    sec = Section("cost")
    opts = ("training steps only (evaluations excluded); gradient checkpointing and bf16 off in every trainer; same "
            "batch size; timed alone under the CPU lock")
    for ours, base in (("PIPA-N (paired)", "DPO"), ("PIPA-M (paired)", "DPO"), ("PIPA-N (unpaired)", "KTO")):
        for key, what in (("seconds_per_step", "whole trainer step (data collation, forward of policy and prior, "
                                               "loss, backward, optimizer)"),
                          ("loss_seconds_per_step", "inside compute_loss only (forward of policy and prior + loss)")):
            o, bb = R[ours][key], R[base][key]
            label = "time per step" if key == "seconds_per_step" else "loss-computation time per step"
            sec.add(Claim.compare(
                claim=f"{ours}: {label} no more than trl's {base} (within 5%)", metric=f"seconds ({what.split(' (')[0]})",
                ours=o, baseline=bb, baseline_name=f"{base} (trl)", higher_is_better=False,
                margin=-0.05 * float(np.mean(bb)), kind="target", paired=True,
                paper="no additional training or computational cost (abstract)", note=f"{what}; {opts}"))
    return sec
