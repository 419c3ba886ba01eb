"""The jobs of ``earl-bo reproduce`` (run in forked one-thread workers) and the validation tuning shared by its
experiments: one BO run (:func:`_job`), the initial design of an expensive objective (:func:`_init_job`), the
multi-task pre-training of one agent until its validation regret plateaus (:func:`_pretrain_job`), and
:func:`tune` (every method's knob chosen alike on validation functions, :data:`earl_bo.config.GRIDS`).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import asdict
from typing import Any

import numpy as np
from icml25.experiment import Section
from icml25.parallel import fork_map

from earl_bo.config import GRIDS, Config

PAPER = ("EARL-BO paper (ICML 2025), abstract: 'significantly improved performance' over multi-step lookahead and "
         "high-dimensional BO baselines on synthetic functions and HPO; no table values are available to us")
ABLATION_METHODS = ("msl", "earl-bo-h1", "earl-bo-no-turbo")
LABELS = {"earl-bo": "EARL-BO (H=3)", "earl-bo-h1": "EARL-BO (H=1)", "earl-bo-no-turbo": "EARL-BO w/o TuRBO stage",
          "sobol": "Sobol search", "centre": "box centre, then incumbent's neighbourhood", "logei": "LogEI",
          "turbo": "TuRBO-1", "msl": "2-step lookahead (qMSL)"}
NOTES = {"msl": "the paper's multi-step lookahead baseline",
         "earl-bo-h1": "ablation: one-step (EI-like) horizon",
         "earl-bo-no-turbo": "ablation: the off-policy TuRBO stage (paper: it accelerates training)",
         "centre": "sanity baseline, not in the paper: does a bias towards the box centre explain the result?"}
SLOW = ("msl", "earl-bo", "earl-bo-h1", "earl-bo-no-turbo")


SHIFTABLE = ("ackley", "levy", "rosenbrock")
"""Functions whose box ``reproduce`` shifts per seed (their optimum stays inside for a shift <= 0.4); Hartmann,
Branin and the HPO tasks run on their standard boxes, whose centre is not an optimum."""
FIRST = 5
"""The first queries whose mean distance from the box centre is reported."""


def _parse(bench: str) -> tuple[str, int]:
    name, _, d = bench.rpartition("-")
    return name, int(d)


def _shift(bench: str, shift: float) -> float:
    """The box shift a benchmark runs with (0 for the functions outside :data:`SHIFTABLE`)."""
    return shift if _parse(bench)[0] in SHIFTABLE else 0.0


def _job(args: tuple) -> dict:
    """One BO run (in a worker process): returns the best-so-far regret curve and the seconds per query.

    ``args = (bench, method, seed, n_init, budget, options, shift, cache)``; ``seed`` seeds the box's shift, the
    initial design and the method; ``options`` are the method's keyword arguments (EARL-BO's agent, a baseline's
    tuned knob)."""
    import torch

    torch.set_num_threads(1)
    from earl_bo.bo import optimize
    from earl_bo.objectives import make_objective

    bench, method, seed, n_init, budget, opts, shift, cache = args
    name, d = _parse(bench)
    obj = make_objective(name, d, shift=shift, seed=seed)
    known = {tuple(np.asarray(x, dtype=np.float64).tolist()): v for x, v in (cache or [])}

    def f(x: np.ndarray) -> float:  # the initial design's values are computed once per seed (expensive objectives)
        v = known.get(tuple(np.asarray(x, dtype=np.float64).tolist()))
        return obj.f(x) if v is None else v

    r = optimize(f, obj.bounds, n_init=n_init, budget=budget, method=method, seed=seed, options=opts or None)
    lb, ub = obj.bounds
    u = (r.X[n_init:n_init + FIRST] - lb) / (ub - lb)  # the first queries in the unit cube
    return {"bench": bench, "method": method, "seed": seed, "shift": shift, "regret": (obj.optimum - r.best).tolist(),
            "seconds": r.seconds, "centre_distance": float(np.linalg.norm(u - 0.5, axis=1).mean())}


def _pretrain_job(args: tuple) -> dict:
    """Multi-task pre-training of one agent (in a worker process) until its validation regret plateaus:
    ``args = (d, seed, agent_kwargs, pretrain_config)`` -> ``{"state", "curve", "seconds", "untrained", "sobol"}``
    (the Sobol control's validation regret on the same held-out functions, for comparison)."""
    import torch

    torch.set_num_threads(1)
    from earl_bo.earl import EARLBO
    from earl_bo.pretrain import ValidationSet, policy_regret, sobol_policy

    d, seed, agent_kw, pc = args
    bounds = np.stack([np.zeros(d), np.ones(d)])
    agent = EARLBO(bounds, seed=seed, **{**agent_kw, "pretrain_tasks": 0})
    t0 = time.perf_counter()
    curve = agent.pretrain_until_plateau(rounds=pc.rounds, eval_every=pc.eval_every, patience=pc.patience,
                                         min_delta=pc.min_delta, val_tasks=pc.val_tasks, val_queries=pc.val_queries,
                                         val_seed=pc.val_seed)
    val = ValidationSet.make(d, tasks=pc.val_tasks, n_init=max(4, d), seed=pc.val_seed)
    sobol = policy_regret(sobol_policy(d), val, queries=pc.val_queries)
    return {"state": agent.state(), "curve": curve.to_dict(), "seconds": time.perf_counter() - t0, "sobol": sobol}


def pretrain_agents(cfg: Config, keys: list[tuple[int, int]]) -> dict[tuple[int, int], dict]:
    """Pre-train one agent per ``(d, seed)`` in ``keys`` in parallel (the pre-training does not depend on the test
    function, so every function of dimension d at that seed starts from the same agent)."""
    keys = sorted(set(keys), key=lambda k: (-k[0], k[1]))
    res = _pool_map(_pretrain_job, [(d, s, asdict(cfg.agent), cfg.pretrain) for d, s in keys], cfg.workers)
    return dict(zip(keys, res))



def _init_job(args: tuple) -> list:
    """The initial design's values of one benchmark and seed (in a worker process): ``[(x, y), ...]``."""
    import torch

    torch.set_num_threads(1)
    from earl_bo.bo import initial_design
    from earl_bo.objectives import make_objective

    bench, seed, n_init, shift = args
    name, d = _parse(bench)
    obj = make_objective(name, d, shift=shift, seed=seed)
    X = initial_design(obj.bounds, n_init, seed=seed)
    return [(x.tolist(), float(obj.f(x))) for x in X]


def _pool_map(fn, jobs: list, workers: int, order: list[int] | None = None) -> list:
    """``[fn(j) for j in jobs]`` on ``workers`` forked one-thread processes (submitted in ``order``), botorch imported
    once before forking so the workers inherit it."""
    return fork_map(fn, jobs, workers, order=order, preload=("botorch",))


def _run_jobs(jobs: list[tuple], workers: int) -> list[dict]:
    # longest first (EARL-BO and the lookahead, high d), so the two workers finish together
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i][1] not in SLOW, jobs[i][1] != "msl",
                                                     -_parse(jobs[i][0])[1]))
    return _pool_map(_job, jobs, workers, order)


def _n_init(cfg: Config, d: int) -> int:
    return max(4, int(round(cfg.init_per_dim * d)))


def _se(v: list[float]) -> float:
    return float(np.std(v, ddof=1) / math.sqrt(len(v))) if len(v) > 1 else float("nan")


def _options(method: str, cfg: Config, chosen: dict[str, dict], state: dict | None = None) -> dict:
    """Keyword arguments of ``method``: EARL-BO's agent (its ablations share EARL-BO's choice; ``state`` = the
    pre-trained weights of its d and seed) or a baseline's knob."""
    key = "earl-bo" if method.startswith("earl-bo") else method
    knob = chosen.get(key, {})
    if method.startswith("earl-bo"):
        return {**asdict(cfg.agent), **knob, **({"init_state": state} if state is not None else {})}
    return dict(knob)


EXTEND = 2
"""Steps a tuned choice at its grid's edge may be extended by (every method alike; never past :data:`KNOB_BOUNDS`)."""


KNOB_BOUNDS: dict[str, tuple[float, float]] = {"num_restarts": (1, math.inf), "length_init": (0.0, 1.6),
                                                "lr": (0.0, math.inf), "sigma": (0.0, math.inf)}
"""Hard bounds of the tuned knobs (restarts: integers >= 1; TuRBO's initial side at most its maximum 1.6)."""


def _valid(p: dict) -> bool:
    for k, v in p.items():
        if k not in KNOB_BOUNDS:  # not a tuned knob (the agent's other settings)
            continue
        lo, hi = KNOB_BOUNDS[k]
        if not (lo <= v <= hi and (lo < v or k == "num_restarts")):
            return False
        if k == "num_restarts" and float(v) != int(v):
            return False
    return True


def _beyond(vals: list, v: Any) -> Any:
    """The next grid value past ``v`` (an edge of ``vals``), as the tuner would extend to."""
    from icml25.tuning import _next_value

    return _next_value(list(vals), v == max(vals))


def _key(p: dict) -> tuple:
    return tuple(sorted(p.items()))


def _middle(grid: dict[str, tuple]) -> dict:
    return {k: v[len(v) // 2] for k, v in grid.items()}


def tune(cfg: Config, methods: list[str], sec: Section, states: dict | None = None) -> dict[str, dict]:
    """Choose each method's knob on the validation functions (:data:`earl_bo.config.GRIDS`, three points each, a
    choice at an edge extended by up to :data:`EXTEND` steps within :data:`KNOB_BOUNDS`; the same budget as the test
    runs): score = mean over validation instances of final regret / regret after the initial
    design (lower is better; scale-free across functions). ``states[(d, seed)]`` are pre-trained agents (of the
    validation seeds). Returns ``method -> chosen keyword arguments``."""
    from icml25.tuning import selections_table, tune_alike

    grids = {m: GRIDS[m] for m in methods if m in GRIDS}
    if not cfg.tune:
        return {m: _middle(g) for m, g in grids.items()}
    points = {m: [dict(zip(g, combo)) for combo in itertools.product(*g.values())] for m, g in grids.items()}
    vals = [(b, cfg.val_seed + i) for b in cfg.val_functions for i in range(cfg.val_instances)]

    def jobs_for(m: str, p: dict) -> list[tuple]:
        def opts(b: str, s: int) -> dict:
            st = (states or {}).get((_parse(b)[1], s))
            return {**asdict(cfg.agent), **p, **({"init_state": st["state"]} if st else {})} if m == "earl-bo" else p
        return [(b, m, s, _n_init(cfg, _parse(b)[1]), cfg.budget, opts(b, s), _shift(b, cfg.shift), None)
                for b, s in vals]

    jobs, keys = [], []
    for m, ps in points.items():
        for p in ps:
            jobs += jobs_for(m, p)
            keys += [(m, _key(p))] * len(vals)
    scores: dict[tuple, list[float]] = {}

    def collect(ks: list[tuple], res: list[dict]) -> None:
        for k, r in zip(ks, res, strict=True):
            scores.setdefault(k, []).append(float(r["regret"][-1] / max(r["regret"][0], 1e-12)))

    collect(keys, _run_jobs(jobs, cfg.workers))

    def evaluator(m: str):
        def f(p: dict) -> float:
            if not _valid(p):  # beyond a hard bound (no run): never chosen
                return math.inf
            if (m, _key(p)) not in scores:  # a point beyond the grid's edge: its validation runs, in parallel
                collect([(m, _key(p))] * len(vals), _run_jobs(jobs_for(m, p), cfg.workers))
            return float(np.mean(scores[(m, _key(p))]))
        return f

    # a choice at an edge is extended by up to EXTEND steps for every method alike; a step past a hard bound
    # (KNOB_BOUNDS) is not run, and a choice sitting on its bound is reported as such
    sel = tune_alike({LABELS[m]: (evaluator(m), grids[m]) for m in grids}, higher_is_better=False, extend=EXTEND)
    for sl in sel.values():
        sl.trials = [t for t in sl.trials if _valid(t["params"])]
        sl.grid = {k: [v for v in vs if _valid({k: v})] for k, vs in sl.grid.items()}
        sl.at_edge = [f"{k}={v}" + (" (its hard bound)" if not _valid({k: _beyond(sl.grid[k], v)}) else "")
                      for k, v in sl.params.items() if len(sl.grid[k]) >= 2 and v in (min(sl.grid[k]), max(sl.grid[k]))]
    cols, rows = selections_table(sel)
    sec.table(f"Hyper-parameters chosen on validation ({len(vals)} validation instance(s): "
              f"{', '.join(f'{b} (seed {s})' for b, s in vals)}; score = mean final regret / regret after the "
              f"initial design, lower is better)", cols, rows)
    trial_rows = [[n, ", ".join(f"{k}={v}" for k, v in t["params"].items()), t["score"]]
                  for n, sl in sel.items() for t in sl.trials]
    sec.table("Every validation trial", ["method", "setting", "validation score (lower is better)"], trial_rows)
    sec.notes += [s.note() for s in sel.values()]
    by_label = {LABELS[m]: m for m in grids}
    return {by_label[n]: dict(s.params) for n, s in sel.items()}


