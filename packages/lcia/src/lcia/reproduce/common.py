"""Shared pieces of lcia's reproduce runs: row labels, paper references, the state forked workers share, and the
tuning of every row alike on the validation split."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
from icml25.experiment import Section

from lcia.config import Config

#: rows of the stream table; the fixed EMA's label is completed with the alpha tuning chose (:func:`labels`)
BASE_LABEL = {"sequential": "sequential LoRA", "fixed_ema": "+ fixed EMA", "dema": "+ DEMA (no grouping)",
              "lcia": "LCIA (DEMA + grouping)", "joint": "joint multitask (reference)",
              "oracle": "one adapter per task (oracle routing)"}
PAPER_HEADLINE = "LLaVA-7B on CoIN: forgetting 5.42 (LoRA baseline) -> 1.93 (LCIA), paper abstract"
PAPER_ABLATION = "Table 6 ablation rows LoRA / stable EMA / dynamic EMA / + grouping (numbers not in our notes)"
#: continual rows (one adapter trained task after task, or LCIA's groups) and the rows whose lr is tuned
CONTINUAL_ROWS = ("sequential", "fixed_ema", "dema", "lcia")
#: rows whose hyper-parameters are tuned alike: the continual rows and the one-adapter-per-task reference (LCIA's
#: like-for-like baseline, whose lr is also the competence gates' lr: a fresh adapter learning one task alone)
TUNED = (*CONTINUAL_ROWS, "oracle")
DEMA_ROWS = ("dema", "lcia")

#: what the forked workers share (set in the parent before the pool forks): the base model, tokenizer, configs
JOB: dict = {}


def labels(cfgs: dict[str, Config]) -> dict[str, str]:
    """Row labels, the fixed EMA named by its alpha (β = 1 − α) as tuning chose it."""
    out = dict(BASE_LABEL)
    a = cfgs["fixed_ema"].fixed_alpha
    out["fixed_ema"] = f"+ fixed EMA alpha {a:g} (beta {1 - a:g})"
    return out


def tune_names(cfg: Config) -> tuple[str, ...]:
    """Tasks of the tuning stream: ``tune_on``, else the leading ``tune_tasks`` (0: all)."""
    if cfg.tune_on:
        return tuple(cfg.tune_on)
    return tuple(cfg.tasks[:cfg.tune_tasks] if cfg.tune_tasks else cfg.tasks)


def _tune_one(item: tuple[str, tuple[tuple[str, float], ...], int]) -> float:
    """Validation final-stage Avg of row ``m`` at ``params`` on tuning seed index ``k`` (a worker job)."""
    from lcia.continual import run_stream
    from lcia.data import default_stream

    m, params, k = item
    p = dict(params)
    cfg = JOB["cfg"]
    seed = JOB["tune_seed"] + k
    c = replace(cfg, lr=float(p["lr"]), fixed_alpha=float(p.get("alpha", cfg.fixed_alpha)))
    tasks = default_stream(cfg.n_train, seed=seed, n_eval=cfg.n_eval, tasks=tune_names(cfg))
    r = run_stream(JOB["base"], JOB["tok"], tasks, c, method=m, seed=seed, split="val", final_only=True)
    if m == "oracle":  # a fresh adapter per task, each scored right after its own training
        return float(np.mean(r["final"]))
    return float(np.mean(r["acc"][-1]))


def _key(p: dict) -> tuple[tuple[str, float], ...]:
    return tuple(sorted((k, float(v)) for k, v in p.items()))


def tune(cfg: Config, base, tok, seed: int) -> tuple[dict[str, Config], Section, dict[str, str]]:
    """Choose each row's hyper-parameters on the validation split, alike (``icml25.tuning.tune_alike``: grids of the
    same size, same budget, same tuning stream and seeds): the lr of sequential LoRA, DEMA and LCIA from ``lr_grid``;
    the fixed EMA's lr and α from ``fixed_lr_grid`` × ``alpha_grid``. Score: the final-stage Avg on the validation
    split of the tuning stream, averaged over ``tune_seeds`` data/init seeds the test runs never use (the oracle
    reference, a fresh adapter per task: the mean of its per-task validation accuracies). Every grid point and seed
    is a job of ``cfg.workers`` forked workers; an edge extension's seeds run in workers too. The joint reference
    reuses sequential LoRA's choice."""
    from icml25.parallel import fork_map
    from icml25.tuning import selections_table, tune_alike

    sec = Section("tuning")
    JOB.update(cfg=cfg, base=base, tok=tok, tune_seed=seed)
    grid = {"lr": list(cfg.lr_grid)}
    fixed_grid = {"lr": list(cfg.fixed_lr_grid or cfg.lr_grid), "alpha": list(cfg.alpha_grid or (cfg.fixed_alpha,))}
    grids = {m: fixed_grid if m == "fixed_ema" else grid for m in TUNED}
    points = [(m, _key(dict(zip(g, combo)))) for m, g in grids.items() for combo in itertools.product(*g.values())]
    ks = range(cfg.tune_seeds)
    items = [(m, p, k) for m, p in points for k in ks]
    per = dict(zip(items, fork_map(_tune_one, items, cfg.workers)))
    cache = {(m, p): float(np.mean([per[(m, p, k)] for k in ks])) for m, p in points}

    def score(m):
        def f(p):
            key = (m, _key(p))
            if key not in cache:  # an edge extension: its seeds in the workers
                vals = fork_map(_tune_one, [(m, key[1], k) for k in ks], cfg.workers)
                cache[key] = float(np.mean(vals))
            return cache[key]
        return f

    sel = tune_alike({m: (score(m), {k: list(v) for k, v in grids[m].items()}) for m in TUNED},
                     extend=cfg.tune_extend)
    cfgs = {m: replace(cfg, lr=float(s.params["lr"]), fixed_alpha=float(s.params.get("alpha", cfg.fixed_alpha)))
            for m, s in sel.items()}
    lab = labels(cfgs)
    names = tune_names(cfg)
    cols, rows = selections_table(sel)
    sec.table(f"Hyper-parameters chosen on the validation split (final-stage Avg over {' -> '.join(names)}, mean of "
              f"{cfg.tune_seeds} seeds)", ["method" if c == "name" else c for c in cols],
              [[lab.get(r[0], r[0]), *r[1:]] for r in rows])
    trows = []
    for m, s_ in sel.items():
        for i, t in enumerate(s_.trials):
            trows.append([lab[m], ", ".join(f"{k}={v:g}" for k, v in t["params"].items()),
                          "diverged" if t["score"] is None else f"{t['score']:.3f}",
                          "grid" if i < s_.grid_size else "extension",
                          "yes" if t["params"] == s_.params else ""])
    sec.table(f"Every tuning trial (validation final-stage Avg, mean of {cfg.tune_seeds} seeds; extension = a value "
              "added beyond the chosen edge)", ["method", "params", "validation score", "from", "chosen"], trows)
    sec.notes.append("tuning: " + "; ".join(s.note() for s in sel.values())
                     + "; the joint reference uses sequential LoRA's choice")
    cfgs["joint"] = cfgs["sequential"]
    edges = {m: s.note() for m, s in sel.items() if s.at_edge}
    return cfgs, sec, edges
