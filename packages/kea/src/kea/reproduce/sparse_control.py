"""``reproduce(task="continuous")`` of :mod:`kea.reproduce` (``continuous``): SparseMountainCar with continuous SAC
modules, the five agents tuned alike on validation seeds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from icml25.claims import Claim
from icml25.experiment import Section

from kea.config import ContinuousConfig
from kea.reproduce.common import (
    PAIRS,
    PAPER,
    VAL_SEED_OFFSET,
    VARIANT_NAMES,
    _fmt,
    _pool,
    _run,
    competence_gate,
    gate_name,
    solve_episode,
)
from kea.reproduce.lr_tuning import tune_lr


def continuous(cfg: ContinuousConfig, seeds: list[int], out: Path) -> Section:
    """Sparse continuous control (SparseMountainCar, reward 1 only at the flag): SAC, RND-SAC, NovelD-SAC, KEA-RND
    and KEA-NovelD with continuous SAC modules, tuned alike on validation seeds; episodes until a greedy module
    reaches the flag (2 evaluation episodes)."""
    from icml25.tuning import selections_table

    sec = Section("continuous")
    task, n = "sparse-mountaincar", cfg.episode_steps
    val_seeds = [VAL_SEED_OFFSET + i for i in range(cfg.val_seeds)]
    if set(val_seeds) & set(seeds):
        raise ValueError("validation seeds overlap the test seeds")

    def job(v: str, s: int, lr: float, steps: int) -> dict[str, Any]:
        kw = dict(hidden=(cfg.hidden, cfg.hidden), batch_size=cfg.batch_size, learning_starts=cfg.warmup,
                  train_freq=cfg.train_freq, gradient_steps=cfg.gradient_steps, buffer_size=100_000, lr=float(lr))
        return dict(task=task, variant=v, seed=s, size=n, steps=steps, agent_kwargs=kw, eval_every=cfg.eval_every,
                    eval_episodes=2, stop_when_solved=True, num_envs=cfg.num_envs)

    budget_eps = cfg.steps // n
    pool = _pool(cfg.workers)
    try:
        sel = tune_lr(pool, lambda v, lr: [job(v, s, lr, cfg.val_steps) for s in val_seeds],
                      lambda r: solve_episode(r, cfg.val_steps // n), tuple(cfg.lr_grid), cfg.extend)
        lr = {v: float(sel[v].params["lr"]) for v in VARIANT_NAMES}
        futs = [pool.submit(_run, job(v, s, lr[v], cfg.steps)) for v in VARIANT_NAMES for s in seeds]
        results = [f.result() for f in futs]
    finally:
        pool.close()
    cols, rows = selections_table(sel)
    sec.table("SparseMountainCar: learning rate chosen on validation seeds", cols, rows)
    per, rows = {}, []
    for v in VARIANT_NAMES:
        rs = sorted([r for r in results if r["variant"] == v], key=lambda r: r["seed"])
        per[v] = [solve_episode(r, budget_eps) for r in rs]
        sec.add(competence_gate("SparseMountainCar", v, rs, optimum=1.0,
                                controls={"zero action (do nothing: never reaches the flag)": 0.0}))
        rows.append([v, f"{lr[v]:.3g}", _fmt(per[v]), f"{sum(r['solved_episode'] is not None for r in rs)}/{len(rs)}",
                     _fmt([r["first_success_episode"] or budget_eps for r in rs]),
                     _fmt([r["switch_fraction"] for r in rs]), _fmt([r["steps_per_s"] for r in rs])])
    sec.table(f"SparseMountainCar ({cfg.steps} transitions, {cfg.num_envs} envs, {len(seeds)} seeds)",
              ["agent", "lr", f"episodes until greedy success (unsolved = {budget_eps})", "seeds solved",
               "episodes to first success", "switch fraction", "env steps/s"], rows)
    for kea_v, base_v in (*PAIRS, ("KEA-RND", "SAC")):
        sec.add(Claim.compare(
            claim=f"SparseMountainCar: {kea_v} reaches the flag greedily in fewer episodes than {base_v}",
            metric=f"episodes until the declared greedy module reaches the flag in 2 evaluation episodes (unsolved = "
                   f"{budget_eps})", ours=per[kea_v], baseline=per[base_v], baseline_name=base_v,
            paper=PAPER.replace("DeepSea N = 10 … 30", "three sparse DMC tasks"), kind="paper",
            higher_is_better=False, paired=True,
            gates=[gate_name("SparseMountainCar", kea_v), gate_name("SparseMountainCar", base_v)],
            note="paired by seed; lr tuned alike on validation seeds; " + "; ".join(sel[x].note()
                                                                                   for x in (kea_v, base_v))))
    return sec
