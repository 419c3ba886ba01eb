"""The main comparison of ``earl-bo reproduce``: competence gates first, then EARL-BO against every baseline.

1. Pre-training: one agent per dimension and seed (test seeds and validation seeds) is pre-trained on GP-sampled
   tasks until its validation regret plateaus (:func:`earl_bo.pretrain.pretrain_until_plateau`); its validation
   curve is the gate's plateau evidence.
2. Tuning: every method with a free knob picks it on validation functions (:func:`earl_bo.reproduce.jobs.tune`).
3. Test runs: every method from the same Sobol design per seed, the same number of queries.
4. Claims: one ``gate`` per method and benchmark ("it beats the trivial controls: Sobol search and the box-centre
   baseline", paired by seed; EARL-BO's also needs every pre-training curve to have plateaued); then the ``paper``
   claims "EARL-BO reaches a lower final regret than <baseline>", each gated by EARL-BO's gate and the baseline's.
   The mean distance of each method's first queries from the box centre is reported.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from icml25.claims import Claim
from icml25.experiment import Section
from icml25.train import Curve

from earl_bo.config import Config
from earl_bo.reproduce.jobs import (
    ABLATION_METHODS,
    FIRST,
    LABELS,
    NOTES,
    PAPER,
    _init_job,
    _n_init,
    _options,
    _parse,
    _pool_map,
    _run_jobs,
    _se,
    _shift,
    pretrain_agents,
    tune,
)

CONTROLS = ("sobol", "centre")
"""The trivial controls of every gate: random (Sobol) search and the box centre followed by a random local search."""


def gate_name(label: str, method: str) -> str:
    return f"{label}: {LABELS[method]} has learned the task (beats Sobol search and the box-centre baseline)"


def _cases(cfg: Config) -> list[tuple[str, str, float, list[str]]]:
    """``(label, bench, shift, methods)`` of every comparison."""
    cases = []
    benches = cfg.benchmarks + tuple(b for b in cfg.ablation if b not in cfg.benchmarks)
    for bench in benches:
        _, d = _parse(bench)
        methods = list(cfg.methods) if bench in cfg.benchmarks else ["earl-bo", *CONTROLS, "logei"]
        if bench in cfg.ablation:
            methods += [m for m in ABLATION_METHODS if not (m == "msl" and d > 5)]
        elif bench in cfg.lookahead and d <= 5:
            methods.append("msl")
        for c in CONTROLS:  # every gate needs both controls
            if c not in methods:
                methods.append(c)
        sh = _shift(bench, cfg.shift)
        cases.append((bench + (" (shifted)" if sh else ""), bench, sh, methods))
    for bench in cfg.unshifted:
        cases.append((bench + " (unshifted)", bench, 0.0, list(dict.fromkeys([*cfg.unshifted_methods, *CONTROLS]))))
    return cases


def pretraining_section(cfg: Config, states: dict, sec: Section, out: Path) -> dict[int, list[Curve]]:
    """Tables and a figure of the pre-training curves; returns the test seeds' curves per dimension."""
    from icml25.plots import learning_curves

    rows, by_d = [], {}
    for (d, s), r in sorted(states.items()):
        c = Curve.from_dict(r["curve"])
        rows.append([d, s, c.values[0], c.best, c.best_step, c.steps[-1], c.stopped_by, r["sobol"], r["seconds"]])
        by_d.setdefault(d, []).append((s, c))
    sec.table("Multi-task pre-training on GP-sampled functions (validation: normalised simple regret of the mean "
              f"policy after {cfg.pretrain.val_queries} queries on {cfg.pretrain.val_tasks} held-out GP-sampled "
              "functions, lower is better; Sobol search on the same functions for comparison)",
              ["d", "seed", "untrained", "best", "at round", "rounds run", "stopped by", "Sobol search", "seconds"],
              rows)
    for d, sc in by_d.items():
        n = max(len(c.values) for _, c in sc)
        arr = np.array([c.values + [c.values[-1]] * (n - len(c.values)) for _, c in sc])
        name = f"pretraining_d{d}.png"
        learning_curves({"EARL-BO agent": arr}, out / name, xlabel=f"evaluation (every {cfg.pretrain.eval_every} rounds)",
                        ylabel="validation regret (normalised)", title=f"d = {d}: multi-task pre-training")
        sec.figures.append(name)
    return {d: [c for _, c in sc] for d, sc in by_d.items()}


def regret(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Pre-training, tuning on validation functions, then final simple regret and best-so-far curves of every method,
    gates against the trivial controls and the paper claims (paired by seed)."""
    from icml25.plots import learning_curves

    sec = Section("regret")
    cases = _cases(cfg)
    used = sorted({m for *_, ms in cases for m in ms}, key=list(LABELS).index)
    vals = [(b, cfg.val_seed + i) for b in cfg.val_functions for i in range(cfg.val_instances)]
    ds = sorted({_parse(b)[1] for _, b, _, _ in cases})
    keys = [(d, s) for d in ds for s in seeds]
    if cfg.tune and "earl-bo" in used:
        keys += [(_parse(b)[1], s) for b, s in vals]
    states = pretrain_agents(cfg, keys) if any(m.startswith("earl-bo") for m in used) else {}
    test_states = {k: v for k, v in states.items() if k[1] in seeds}
    curves_by_d = pretraining_section(cfg, test_states, sec, out) if test_states else {}
    chosen = tune(cfg, used, sec, states)

    expensive = [(b, sh) for _, b, sh, _ in cases if b.startswith("hpo")]  # evaluate the initial design once
    init_jobs = [(b, s, _n_init(cfg, _parse(b)[1]), sh) for b, sh in expensive for s in seeds]
    caches = dict(zip([(j[0], j[3], j[1]) for j in init_jobs], _pool_map(_init_job, init_jobs, cfg.workers)))
    jobs, where = [], []
    for ci, (_, bench, sh, methods) in enumerate(cases):
        d = _parse(bench)[1]
        for m in methods:
            for s in seeds:
                st = states.get((d, s), {}).get("state") if m.startswith("earl-bo") else None
                jobs.append((bench, m, s, _n_init(cfg, d), cfg.budget, _options(m, cfg, chosen, st), sh,
                             caches.get((bench, sh, s))))
                where.append((ci, m))
    res = _run_jobs(jobs, cfg.workers)
    by: dict[tuple, list[dict]] = {}
    for w, r in zip(where, res):
        by.setdefault(w, []).append(r)
    tuned_note = {m: ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in p.items())
                  for m, p in chosen.items()}
    rows, dist_rows = [], []
    for ci, (label, bench, _sh, methods) in enumerate(cases):
        d = _parse(bench)[1]
        final = {m: [float(r["regret"][-1]) for r in by[(ci, m)]] for m in methods}
        secs = {m: float(np.mean([np.mean(r["seconds"]) for r in by[(ci, m)]])) for m in methods}
        dist = {m: [float(r["centre_distance"]) for r in by[(ci, m)]] for m in methods}
        for m in methods:
            key = "earl-bo" if m.startswith("earl-bo") else m
            rows.append([label, LABELS[m], float(np.mean(final[m])), _se(final[m]), secs[m],
                         tuned_note.get(key, "none")])
            dist_rows.append([label, LABELS[m], float(np.mean(dist[m])), float(np.std(dist[m]))])
        what = "error (1 - CV accuracy)" if bench.startswith("hpo") else "simple regret"
        if bench.startswith("hpo"):
            metric = f"1 - 3-fold CV accuracy of the best configuration after {cfg.budget} queries (lower is better)"
        else:
            metric = f"simple regret after {cfg.budget} queries (lower is better)"
        controls = {LABELS[c]: final[c] for c in CONTROLS}
        gates = {}
        for m in methods:
            if m in CONTROLS:
                continue
            curves = curves_by_d.get(d) if m.startswith("earl-bo") else None
            extra = (f"mean distance of the first {FIRST} queries from the box centre (unit cube): "
                     f"{np.mean(dist[m]):.3f} (Sobol {np.mean(dist['sobol']):.3f}, box centre "
                     f"{np.mean(dist['centre']):.3f})")
            if m.startswith("earl-bo"):
                extra = "pre-training curves of the same seeds (validation regret on GP-sampled functions); " + extra
            gates[m] = sec.add(Claim.gate(
                claim=gate_name(label, m), metric=metric, ours=final[m], controls=controls, curves=curves,
                higher_is_better=False, paired=True, note=extra)).claim
        for m in methods:
            if m == "earl-bo" or m in CONTROLS:
                continue
            setting = (f"settings chosen on validation: EARL-BO {tuned_note.get('earl-bo', '-')}; "
                       f"{LABELS[m]} {tuned_note.get('earl-bo' if m.startswith('earl-bo') else m, 'none (no knob)')}"
                       if cfg.tune else "untuned (each grid's middle)")
            sec.add(Claim.compare(
                claim=f"{label}: EARL-BO (H=3) reaches a lower final {what} than {LABELS[m]}",
                metric=metric, ours=final["earl-bo"],
                baseline=final[m], baseline_name=LABELS[m], higher_is_better=False, paired=True, kind="paper",
                paper=PAPER, note="; ".join(x for x in (NOTES.get(m, ""), setting) if x),
                gates=[gates["earl-bo"], gates[m]]))
        curves = {LABELS[m]: np.array([r["regret"] for r in by[(ci, m)]]) for m in methods}
        name = f"regret_{bench}{'-unshifted' if label.endswith('(unshifted)') else ''}.png"
        learning_curves(curves, out / name, xlabel="queries after the initial design", ylabel=what,
                        title=f"{label}: best-so-far {what} (mean ± sd over {len(seeds)} seeds)")
        sec.figures.append(name)
    sec.table("Final simple regret (mean, s.e. over seeds) and seconds per query",
              ["benchmark", "method", "final regret", "s.e.", "s / query", "setting (chosen on validation)"], rows)
    sec.table(f"Mean distance of the first {FIRST} queries from the box centre (unit cube; mean and sd over seeds)",
              ["benchmark", "method", "distance", "sd"], dist_rows)
    return sec
