"""Engineering targets: RelGNN's time per epoch vs GraphSAGE's at equal depth, width and fan-out, and the temporal
sampler's seed sub-graphs per second (measured alone, in the main process, before any fit starts)."""

from __future__ import annotations

from itertools import product
from pathlib import Path

import numpy as np
from icml25.claims import Claim
from icml25.experiment import Section

from relgnn.config import Config
from relgnn.reproduce.common import run_all

SAMPLER_TARGET = 1000.0
"""Target: the sampler produces at least this many seed sub-graphs per second (fan-out 128, 64; one thread)."""


def performance(cfg: Config, seeds: list[int], out: Path) -> Section:
    info = run_all(cfg, seeds)
    s = Section("performance")
    res = info["res"]
    rows = []
    for L in cfg.depth_grid:
        ratios = []
        for task in cfg.tasks:
            for lr, C in product(cfg.lr_grid, cfg.channels_grid):
                a, b = res.get((task, "relgnn", lr, L, C, seeds[0])), res.get((task, "sage", lr, L, C, seeds[0]))
                if a and b:
                    ratios.append(a["epoch_cpu"] / b["epoch_cpu"])
                    rows.append([task, L, C, f"{lr:g}", f"{a['epoch_cpu']:.2f}", f"{b['epoch_cpu']:.2f}",
                                 f"{ratios[-1]:.2f}"])
        if ratios:
            s.add(Claim.threshold(
                claim=f"RelGNN's training time per epoch stays within 2x of GraphSAGE's at {L} layer(s) "
                      f"(equal width and fan-out, same sampled batches)",
                metric="CPU-seconds per epoch, RelGNN / GraphSAGE", ours=ratios, threshold=2.0,
                paper="issue target: time per epoch within 2x of GraphSAGE at equal depth and fan-out",
                kind="target", higher_is_better=False,
                note="one value per (task, lr, channels) grid point on the first seed (mean over the epochs each "
                     "fit ran); one torch thread per worker, two workers"))
    s.table("time per epoch (first seed, sampled batches, excluding sampling)",
            ["task", "layers", "channels", "lr", "RelGNN CPU s/epoch", "GraphSAGE CPU s/epoch", "ratio"], rows)
    rates = {t: v["seeds_per_s"] for t, v in info["tasks"].items()}
    slowest = min(rates, key=lambda t: np.median(rates[t]))
    s.add(Claim.threshold(
        claim=f"The temporal sampler builds at least {SAMPLER_TARGET:g} seed sub-graphs per second on every task "
              f"(fan-out {list(cfg.num_neighbors)}, one thread; the slowest task's repeats)",
        metric="training seeds sampled per second", ours=rates[slowest], threshold=SAMPLER_TARGET,
        paper="issue target: report the sampler's seeds/s", kind="target", higher_is_better=True,
        note=f"slowest task {slowest}; {cfg.sampler_repeats} repeats of the first {cfg.sampler_seeds} training "
             f"seeds per task, in the main process before any fit (alone under the CPU lock); medians: "
             + ", ".join(f"{t} {np.median(r):.0f}/s" for t, r in rates.items())))
    s.table("sampler speed (seeds/s, repeats)", ["task", "median", "min", "max"],
            [[t, f"{np.median(r):.0f}", f"{min(r):.0f}", f"{max(r):.0f}"] for t, r in rates.items()])
    return s
