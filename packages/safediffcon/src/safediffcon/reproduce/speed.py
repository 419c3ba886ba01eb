"""Engineering targets of the issue: batched solver vs a per-trajectory loop, guided vs unguided sampling."""

from __future__ import annotations

import time
from pathlib import Path

import torch
from icml25.claims import Claim
from icml25.experiment import Section

from safediffcon.config import Config
from safediffcon.reproduce.common import _pretrained, _splits


def speed(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Timing ratios (one process, three repeats): batched solver vs a loop, guided vs unguided sampling."""
    from safediffcon.burgers import initial_state, random_force, simulate, simulate_loop

    sec = Section("speed")
    g = torch.Generator().manual_seed(seeds[0])
    n = cfg.speed_trajectories
    u0, f = initial_state(n, cfg.nx, amp=cfg.eval_amp, generator=g), random_force(n, cfg.nx, generator=g)
    solver, sampling = [], []
    train, pre, _ = _pretrained(cfg, seeds[0])
    test = _splits(cfg, seeds[0])["test"]
    for _ in range(3):
        t0 = time.perf_counter()
        simulate(u0, f, nu=cfg.nu, dt=cfg.dt)
        t1 = time.perf_counter()
        simulate_loop(u0, f, nu=cfg.nu, dt=cfg.dt)
        t2 = time.perf_counter()
        solver.append((t2 - t1) / (t1 - t0))
        t0 = time.perf_counter()
        pre.control(test.u0, test.u_target, guidance=False)
        t1 = time.perf_counter()
        pre.control(test.u0, test.u_target, guidance=True, Q=0.0)
        t2 = time.perf_counter()
        sampling.append((t2 - t1) / (t1 - t0))
    sec.add(Claim.threshold(claim=f"The batched solver is at least 20x faster than a per-trajectory loop ({n} "
                                  "trajectories)", metric="loop time / batched time", ours=solver, threshold=20.0,
                            kind="target", paper="issue target (not a paper claim)"))
    sec.add(Claim.threshold(claim="Guided sampling costs at most 3x unguided sampling", metric="guided / unguided time",
                            ours=sampling, threshold=3.0, higher_is_better=False, kind="target",
                            paper="issue target (not a paper claim)"))
    sec.table("Timing ratios (3 repeats in one process)", ["repeat", "solver loop / batched", "guided / unguided"],
              [[k, a, b] for k, (a, b) in enumerate(zip(solver, sampling))])
    return sec
