"""``reproduce(task="ablation")`` of :mod:`kea.reproduce` (``ablation``): KEA-RND vs RND-SAC on more seeds of the main
run's DeepSea instance, and KEA-RND's gate and switch options (``OPTION_ROWS``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from icml25.claims import Claim
from icml25.experiment import Section

from kea.config import Config
from kea.reproduce.common import (
    PAPER,
    TEST_MAPPING_SEED,
    _fmt,
    _pool,
    _run,
    competence_gate,
    deepsea_controls,
    ds_job,
    gate_name,
    solve_episode,
)

OPTION_ROWS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("KEA-RND, standard_update='never' (released: the gate never opens)", "KEA-RND", {"standard_update": "never"}),
    ("KEA-RND, σ = 0.5 (switch more often)", "KEA-RND", {"switch_threshold": 0.5}),
)
"""The ablation's option rows: (label, variant, extra ``KEA`` keyword arguments)."""


def ablation(cfg: Config, seeds: list[int], out: Path) -> Section:
    """KEA-RND vs RND-SAC on more seeds of the main run's DeepSea instance (a replication of the main claim with
    new seeds), and KEA-RND's options on the first ``cfg.option_seeds`` of them. Fixed lr for every row
    (``cfg.ablation_lr``); same regime, budget and warm-up as the main run."""
    sec = Section("ablation")
    n, budget = cfg.sizes[0], cfg.episodes
    opt_seeds = seeds[:cfg.option_seeds]
    rows_spec = [("RND-SAC", "RND-SAC", {}, seeds), ("KEA-RND (paper default)", "KEA-RND", {}, seeds)]
    rows_spec += [(label, v, opts, opt_seeds) for label, v, opts in OPTION_ROWS]
    jobs = [(label, ds_job(cfg, v, s, cfg.ablation_lr, size=n, episodes=budget, mapping_seed=TEST_MAPPING_SEED,
                           options=opts))
            for label, v, opts, ss in rows_spec for s in ss]
    order = sorted(range(len(jobs)), key=lambda i: -(2 if jobs[i][1]["variant"].startswith("KEA") else 1))
    pool = _pool(cfg.workers)
    try:
        futs = {i: pool.submit(_run, jobs[i][1]) for i in order}
        results = [(jobs[i][0], futs[i].result()) for i in range(len(jobs))]
    finally:
        pool.close()
    per: dict[str, dict[str, list]] = {}
    rows = []
    for label, _v, _o, ss in rows_spec:
        rs = sorted([r for lab, r in results if lab == label], key=lambda r: r["seed"])
        per[label] = {"solve": [solve_episode(r, budget) for r in rs],
                      "solved": [r["solved_episode"] is not None for r in rs], "runs": rs}
        gates = [r["gate_open_step"] is not None for r in rs] if "KEA" in label else []
        rows.append([label, f"{ss[0]}–{ss[-1]}", _fmt(per[label]["solve"]),
                     f"{sum(per[label]['solved'])}/{len(rs)}",
                     _fmt([r["first_success_episode"] or budget for r in rs]),
                     _fmt([r["switch_fraction"] for r in rs]),
                     f"{sum(gates)}/{len(gates)}" if gates else "–", _fmt([r["steps_per_s"] for r in rs])])
    sec.table(f"DeepSea N={n} ablation (bsuite instance, {budget} episodes, lr {cfg.ablation_lr:g} for every row)",
              ["agent", "seeds", f"episodes to solve (greedy ≥ 0.99; unsolved = {budget})", "seeds solved",
               "episodes to first success", "switch fraction", "gate opened", "env steps/s"], rows)
    a, b = "KEA-RND (paper default)", "RND-SAC"
    task = f"DeepSea N={n}, seeds {seeds[0]}–{seeds[-1]}"
    for label, v in ((a, "KEA-RND"), (b, "RND-SAC")):
        sec.add(competence_gate(task, v, per[label]["runs"], optimum=0.99, controls=deepsea_controls(n)))
    sec.add(Claim.compare(
        claim=f"DeepSea N={n}, seeds {seeds[0]}–{seeds[-1]}: KEA-RND solves the task in fewer episodes than RND-SAC",
        metric=f"episodes until the declared greedy module returns ≥ 0.99 (unsolved = budget {budget})",
        ours=per[a]["solve"], baseline=per[b]["solve"], baseline_name="RND-SAC", paper=PAPER, kind="paper",
        higher_is_better=False, paired=True, gates=[gate_name(task, "KEA-RND"), gate_name(task, "RND-SAC")],
        note=f"replication of the main run's claim on {len(seeds)} new seeds (main run: seeds 0–4), paired by seed; "
             f"{sum(per[a]['solved'])}/{len(seeds)} vs {sum(per[b]['solved'])}/{len(seeds)} seeds solved; lr "
             f"{cfg.ablation_lr:g} for both (not tuned in this task)"))
    sec.notes += [
        f"Ablation: the same regime as the main run ({cfg.num_envs} envs, PER, {cfg.gradient_steps} gradient steps "
        f"every {cfg.train_freq} transitions, {cfg.warmup_episodes} random warm-up episodes, β_e = N, β_i = 0.3, "
        f"α = 0.1) with lr {cfg.ablation_lr:g} for every row. Option rows run on seeds {opt_seeds} and are "
        "descriptive (no verdict): with 5 seeds only large effects would be visible.",
    ]
    return sec
