"""What every experiment of ``relgnn reproduce`` shares: the database, the presampled sub-graphs, the fits (tuned
alike, then every seed), the no-relation floor and the trivial controls (RelGNN, ICML 2025).

:func:`run_all` (memoised per budget) generates one database (:func:`relgnn.synthetic.make_database`) and, per
task, samples the temporal sub-graphs of **every** training row once (:func:`relgnn.train.presample`; the floor
trains on the same rows). Every GNN fit trains until its validation metric plateaus
(:func:`relgnn.train.fit`, early stopping via :func:`icml25.train.train_until_plateau`) and returns its
:class:`icml25.train.Curve`. RelGNN and GraphSAGE pick lr × depth × channels on the validation split of the first
seed (:func:`icml25.tuning.tune_alike`); the floor picks its own knobs from a grid of the same size; an edge choice
is extended (``Config.extend``, :data:`STEPS`). The chosen settings then run on every seed, and the attention
ablation (RelGNN with a mean instead of attention) runs at RelGNN's chosen knobs on every seed.
"""

from __future__ import annotations

import time
from itertools import product

import numpy as np
from icml25.parallel import ForkPool
from icml25.tuning import arithmetic_step, integer_step

from relgnn.config import Config

NAMES = {"relgnn": "RelGNN", "sage": "GraphSAGE", "relgnn-mean": "RelGNN, mean instead of attention",
         "sage-mean": "GraphSAGE (mean)"}
FLOOR = "no-relation floor"
ENCODER_ABLATION = "relgnn|"
"""Key prefix of the encoder ablation (RelGNN with the other per-table encoder, e.g. ``"relgnn|torch-frame"``)."""
BRIDGE = ("user-churn", "user-ltv", "user-item-purchase")
CONTROL = "post-reply"

_STATE: dict = {}  # task -> (graph, task data, presampled batches); read by the forked workers
_CACHE: dict = {}  # (Config, seeds) -> everything the experiments report


def gnn_grid(cfg: Config) -> dict:
    """The grid every GNN is tuned on: lr × depth × channels."""
    return {"lr": list(cfg.lr_grid), "num_layers": list(cfg.depth_grid), "channels": list(cfg.channels_grid)}


def floor_grid(cfg: Config, kind: str) -> dict:
    """A grid for the floor with as many points as :func:`gnn_grid` (1, 2, 4 or 8)."""
    n = len(cfg.lr_grid) * len(cfg.depth_grid) * len(cfg.channels_grid)
    if kind == "recommendation":
        return {"lookback": list(range(1, n + 1))}
    axes = [("learning_rate", [0.03, 0.1]), ("max_leaf_nodes", [15, 31]), ("max_iter", [100, 300])]
    grid, size = {}, 1
    for name, vals in axes:
        if size * 2 <= n:
            grid[name], size = vals, size * 2
    if not grid:
        grid = {"learning_rate": [0.1]}
    if size != n:
        raise ValueError(f"no floor grid of {n} points (GNN grid sizes must be 1, 2, 4 or 8)")
    return grid


def _fit_job(job: tuple) -> tuple:
    """Worker: one fit ``(task, gnn, lr, layers, channels, seed, cfg)`` on the task's presampled batches, trained
    until its validation metric plateaus (at most ``cfg.max_epochs`` epochs)."""
    import torch

    from relgnn.train import FitConfig, fit

    torch.set_num_threads(1)
    task, label, lr, layers, channels, seed, cfg = job
    gnn, _, encoder = label.partition("|")  # "relgnn|torch-frame": the encoder ablation
    graph, td, batches = _STATE[task]
    fc = FitConfig(gnn=gnn, lr=lr, num_layers=layers, channels=channels, num_heads=cfg.num_heads,
                   epochs=cfg.max_epochs, patience=cfg.patience, batch_size=cfg.batch_size,
                   num_neighbors=cfg.num_neighbors, seed=seed, encoder=encoder or cfg.encoder)
    r = fit(graph, td, fc, batches=batches)
    return job[:6], dict(val=r.val, test=r.test, curve=r.curve, values=list(r.val_curve),
                         epoch_cpu=float(np.mean(r.epoch_cpu_seconds)), epoch_wall=float(np.mean(r.epoch_seconds)),
                         epochs=len(r.val_curve), steps=r.steps, params=r.num_params, best_epoch=r.best_epoch)


def _run_jobs(jobs: list, workers: int, bar) -> dict:
    """Fit every job (forked one-thread workers when ``workers > 1``), in job order, ticking ``bar``."""
    out = {}
    with ForkPool(workers if len(jobs) > 1 else 1) as pool:
        for k, v in pool.imap(_fit_job, jobs):
            out[k] = v
            bar.update()
    return out


def valid_point(p: dict) -> bool:
    """A GNN grid point can be fitted: lr > 0, and depth and width whole numbers >= 1 (a grid extended past its
    edge can propose e.g. 0.5 layers; the tuner then scores it NaN, so it is never chosen)."""
    return (p["lr"] > 0 and all(float(p[k]).is_integer() and p[k] >= 1 for k in ("num_layers", "channels")))


FLOOR_MIN = {"learning_rate": 0.0, "max_leaf_nodes": 2, "max_iter": 1, "lookback": 1}
"""The floor's hard bounds (scikit-learn needs >= 2 leaves; a learning rate > 0, the others >= the value)."""


def valid_floor_point(p: dict) -> bool:
    """A floor grid point can be fitted (an extension past a hard bound, e.g. 1 leaf, is scored NaN)."""
    return all(v > FLOOR_MIN[k] if k == "learning_rate" else v >= FLOOR_MIN[k] for k, v in p.items())


STEPS = {"num_layers": arithmetic_step, "channels": integer_step, "max_leaf_nodes": integer_step,
         "max_iter": integer_step, "lookback": arithmetic_step}
"""How an edge choice is extended (``Config.extend``): depth by one layer (2 -> 3; 1 -> 0 is past the hard bound,
scored NaN), widths and tree sizes to the next integer of the geometric step (16 -> 8, 32 -> 64; 15 -> 7,
300 -> 900), the popularity window by one seed time; the learning rates geometrically (0.01 -> 0.033)."""


def tune_in_passes(tune_pass, missing: set, fit) -> object:
    """Run ``tune_pass()`` until it meets no unfitted point, fitting each pass's points together in between.

    ``tune_pass`` scores a point it has no fit for NaN, adding the key of each competitor's *first* unfitted point
    to ``missing`` (later ones of that competitor are NaN too but not collected, so nothing is fitted on
    speculation); ``fit(keys)`` fits them in parallel workers. A NaN is never chosen, so a pass follows each
    competitor's tuner exactly up to its first unfitted point; the last pass meets none and is therefore exactly
    the sequential tuner's run, with the grid extensions of every task and model fitted side by side.
    """
    while True:
        missing.clear()
        out = tune_pass()
        if not missing:
            return out
        fit(sorted(missing))


def sampler_rates(sampler, td, *, n: int, repeats: int) -> list[float]:
    """Seed sub-graphs per second of ``sampler`` on the first ``n`` training rows, once per repeat (one thread)."""
    import torch

    idx = torch.arange(min(n, td.n_rows["train"]))
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for s in range(0, idx.numel(), 256):
            b = idx[s:s + 256]
            sampler.sample(td.entity, td.ids["train"][b], td.times["train"][b])
        rates.append(idx.numel() / max(time.perf_counter() - t0, 1e-9))
    return rates


def trivial_control(graph, td, split: str = "test", *, seed: int = 0) -> tuple[str, float]:
    """The task's trivial control and its ``split`` metric: a constant score for binary tasks (ROC-AUC 0.5, the
    majority class), the training median for regression (MAE), and a uniformly random top-k ranking for
    recommendation (MAP@k, mean of 20 draws)."""
    from relgnn.train import evaluate_predictions

    n = td.n_rows[split]
    if td.kind == "binary":
        return "majority class (constant score)", evaluate_predictions(td, split, np.zeros(n))
    if td.kind == "regression":
        return "training median", evaluate_predictions(td, split, np.full(n, np.median(td.targets["train"])))
    num_dst = graph.num_nodes(td.dst)
    rng = np.random.default_rng(seed)
    draws = [evaluate_predictions(td, split, np.stack([rng.choice(num_dst, td.k, replace=False) for _ in range(n)]),
                                  num_dst=num_dst) for _ in range(20)]
    return "random ranking (chance)", float(np.mean(draws))


def run_all(cfg: Config, seeds: list[int]) -> dict:
    """Generate the database, presample every task, tune alike, run every seed (memoised per budget)."""
    key = (cfg, tuple(seeds))
    if key in _CACHE:
        return _CACHE[key]
    import torch
    from icml25.tuning import tune_alike
    from tqdm.auto import tqdm

    from relgnn.baselines import floor_predictions
    from relgnn.graph import build_graph
    from relgnn.sampler import TemporalSampler
    from relgnn.synthetic import bayes_scores, make_database
    from relgnn.train import FitConfig, evaluate_predictions, prepare_task, presample

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    sdb = make_database(num_users=cfg.num_users, num_items=cfg.num_items, num_windows=cfg.num_windows, seed=seeds[0])
    info: dict = {"sizes": {k: len(t.df) for k, t in sdb.db.table_dict.items()}, "tasks": {}}
    grid = gnn_grid(cfg)
    points = list(product(grid["lr"], grid["num_layers"], grid["channels"]))
    for name in cfg.tasks:
        task = sdb.tasks[name]
        graph = build_graph(task.get_db())
        td = prepare_task(task, graph, db=task.get_db(upto_test_timestamp=False))
        fc = FitConfig(batch_size=cfg.batch_size, num_neighbors=cfg.num_neighbors)
        rates = sampler_rates(TemporalSampler(graph, num_neighbors=cfg.num_neighbors,
                                              generator=torch.Generator().manual_seed(seeds[0])),
                              td, n=cfg.sampler_seeds, repeats=cfg.sampler_repeats)
        ps = presample(graph, td, fc, seed=seeds[0], max_train_rows=cfg.max_train_rows)
        _STATE[name] = (graph, td, ps)
        ceiling = None
        bs = bayes_scores(sdb, name, task.get_table("test", mask_input_cols=False,
                                                     db=task.get_db(upto_test_timestamp=False)))
        if bs is not None:
            ceiling = evaluate_predictions(td, "test", bs)
        ctrl_name, ctrl = trivial_control(graph, td, "test", seed=seeds[0])
        info["tasks"][name] = dict(metric=td.metric, hib=td.higher_is_better, kind=td.kind, rows=dict(td.n_rows),
                                   seeds_per_s=rates, ceiling=ceiling, control_name=ctrl_name, control=ctrl,
                                   train_rows_used=sum(len(b.pos) for b in ps.train),
                                   stypes={t: s.stypes for t, s in graph.specs.items()})
    n_jobs = len(cfg.tasks) * len(cfg.models) * (len(points) + len(seeds) - 1)
    bar = tqdm(total=n_jobs, desc="relgnn fits", disable=None)
    # phase 1: every grid point of every model on the first seed
    jobs = [(t, m, lr, L, C, seeds[0], cfg) for t in cfg.tasks for m in cfg.models for lr, L, C in points]
    res = _run_jobs(jobs, cfg.workers, bar)
    selections, chosen, floors = {}, {}, {}
    missing: set = set()
    floor_memo: dict = {}

    def tune_task(name: str) -> dict:
        graph, td, ps = _STATE[name]
        num_dst = graph.num_nodes(td.dst) if td.dst else None
        rows = np.sort(np.concatenate([b.pos for b in ps.train]))  # the rows the GNNs train on

        def floor_score(p, split, s):
            if not valid_floor_point(p):  # an extension past a hard bound: never chosen
                return float("nan")
            key = (name, tuple(sorted(p.items())), split, s)
            if key not in floor_memo:
                pred = floor_predictions(graph, td, split, seed=s, train_rows=rows, **p)
                floor_memo[key] = evaluate_predictions(td, split, pred, num_dst=num_dst)
            return floor_memo[key]

        def val_score(p, m):
            if not valid_point(p):  # an extension past a hard bound (e.g. depth 0): never chosen
                return float("nan")
            key = (name, m, p["lr"], p["num_layers"], p["channels"], seeds[0])
            if key not in res:  # beyond the grid's edge (cfg.extend): this competitor's first unfitted point is
                if not any(k[:2] == key[:2] for k in missing):  # collected and fitted before the next pass
                    missing.add(key)
                return float("nan")
            return res[key]["val"]

        comp = {NAMES[m]: ((lambda p, m=m: val_score(p, m)), grid) for m in cfg.models}
        comp[FLOOR] = ((lambda p: floor_score(p, "val", seeds[0])), floor_grid(cfg, td.kind))
        sel = tune_alike(comp, higher_is_better=td.higher_is_better, extend=cfg.extend, steps=STEPS)
        return dict(sel=sel, floor=[floor_score(sel[FLOOR].params, "test", s) for s in seeds])

    def fit_missing(keys: list) -> None:
        bar.total += len(keys)
        res.update(_run_jobs([(*k, cfg) for k in keys], cfg.workers, bar))

    out = tune_in_passes(lambda: {name: tune_task(name) for name in cfg.tasks}, missing, fit_missing)
    for name in cfg.tasks:
        sel = selections[name] = out[name]["sel"]
        for m in cfg.models:
            p = sel[NAMES[m]].params
            chosen[(name, m)] = (p["lr"], p["num_layers"], p["channels"])
        floors[name] = out[name]["floor"]
    # phase 2: the chosen settings on the other seeds; the attention ablation at RelGNN's knobs on every seed
    jobs = [(t, m, *chosen[(t, m)], s, cfg) for t in cfg.tasks for m in cfg.models for s in seeds[1:]]
    abl = [t for t in cfg.ablation_tasks if t in cfg.tasks] if "relgnn" in cfg.models else []
    jobs += [(t, "relgnn-mean", *chosen[(t, "relgnn")], s, cfg) for t in abl for s in seeds]
    enc = ENCODER_ABLATION + ("mlp" if cfg.encoder == "torch-frame" else "torch-frame")
    eabl = [t for t in cfg.encoder_ablation_tasks if t in cfg.tasks] if "relgnn" in cfg.models else []
    jobs += [(t, enc, *chosen[(t, "relgnn")], s, cfg) for t in eabl for s in seeds]
    bar.total += (len(abl) + len(eabl)) * len(seeds)
    res.update(_run_jobs(jobs, cfg.workers, bar))
    bar.close()
    per_seed = {(t, m): [res[(t, m, *chosen[(t, m)], s)] for s in seeds] for t in cfg.tasks for m in cfg.models}
    per_seed.update({(t, "relgnn-mean"): [res[(t, "relgnn-mean", *chosen[(t, "relgnn")], s)] for s in seeds]
                     for t in abl})
    per_seed.update({(t, enc): [res[(t, enc, *chosen[(t, "relgnn")], s)] for s in seeds] for t in eabl})
    info.update(res=res, selections=selections, chosen=chosen, floors=floors, per_seed=per_seed, points=points,
                ablation_tasks=abl, encoder_ablation=(enc, eabl), seconds=time.perf_counter() - t0)
    for name in cfg.tasks:
        _STATE[name][0].cache.clear()
    _STATE.clear()
    _CACHE[key] = info
    return info


def tests_of(info: dict, task: str, model: str) -> list[float]:
    """Per-seed test metrics of ``model`` on ``task``."""
    return [r["test"] for r in info["per_seed"][(task, model)]]


def curves_of(info: dict, task: str, model: str) -> list:
    """Per-seed validation curves (:class:`icml25.train.Curve`) of ``model`` on ``task``."""
    return [r["curve"] for r in info["per_seed"][(task, model)]]


def sel_note(info: dict, task: str, *names: str) -> str:
    sel = info["selections"][task]
    return "; ".join(sel[n].note() for n in names if n in sel)
