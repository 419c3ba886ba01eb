"""The per-seed results of one reproduce call, shared by the experiments: the fork pool, the job schedule
(:func:`_results`) and the dynamics learning rates chosen alike (:func:`_select`, :func:`_selection`)."""

from __future__ import annotations

import os
from concurrent.futures import Future
from typing import Any

import numpy as np
from icml25.parallel import ForkPool

from sold.config import Config
from sold.reproduce.jobs import ae_job, wm_job


def _pool(workers: int) -> ForkPool:
    """The shared fork pool, with torch and sold's agent imported before forking so the workers inherit them."""
    return ForkPool(workers, preload=("torch", "sold.agent"))


_CACHE: dict[tuple, list[dict[str, Any]]] = {}
_WANT_RL = [False]


def _results(cfg: Config, seeds: list[int]) -> list[dict[str, Any]]:
    """The per-seed results, run once per reproduce call and shared by the experiments.

    Work is split into small jobs so that two workers stay busy: first one stage-A job per (seed, autoencoder) —
    the SAVi jobs, the longest, first — and, as each one finishes, the update-speed job and, on the first
    ``wm_tune_seeds`` seeds, one world model per dynamics learning rate of its grid. Once those are in, each model's
    learning rate is chosen alike on the validation episodes (:func:`_select`, grids extended past an edge choice)
    and the other seeds train their world models at the chosen rate only (and, with ``--rl``, behaviour learning)."""
    from concurrent.futures import as_completed

    from sold.reproduce.rl import RL_KINDS, rl_job  # these modules' experiments read _results
    from sold.reproduce.speed import speed_job

    rl = _WANT_RL[0]
    key = (repr(cfg), tuple(seeds), rl)
    if key in _CACHE:
        return _CACHE[key]
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    lr_ae = {"slots": cfg.ae.lr, "holistic": cfg.ae.holistic_lr}
    grids = {"slots": cfg.lr_grid, "holistic": cfg.holistic_lr_grid}
    tune = seeds[: cfg.wm_tune_seeds]
    pool = _pool(cfg.workers if len(seeds) * 2 > 1 else 1)
    try:
        ae_futs = {pool.submit(ae_job, cfg, s, kind, lr_ae[kind], keep=True): (s, kind)
                   for kind in ("slots", "holistic") for s in seeds}
        later: dict[Future, tuple] = {}
        if rl:
            for s in seeds:
                for kind in ("sac", "random", "oracle"):
                    later[pool.submit(rl_job, cfg, s, kind, None)] = ("rl", s, kind)
        ae_res: dict[tuple, dict[str, Any]] = {}
        wm: dict[tuple, Future] = {}
        for f in as_completed(ae_futs):
            s, kind = ae_futs[f]
            r = f.result()
            ae_res[(s, kind)] = r
            if s in tune:
                for lr in grids[kind]:
                    wm[(s, kind, lr)] = pool.submit(wm_job, cfg, s, kind, lr, r["state"], r["latents"], s == seeds[0])
            later[pool.submit(speed_job, cfg, s, kind, r["state"])] = ("speed", s, kind)
        wm_res = {k: f.result() for k, f in wm.items()}
        sel = _select(cfg, tune, wm_res, ae_res, pool)
        chosen = {k: sel[k].params["lr"] for k in grids}
        for s in seeds[len(tune):]:
            for kind in grids:
                r = ae_res[(s, kind)]
                wm[(s, kind, chosen[kind])] = pool.submit(wm_job, cfg, s, kind, chosen[kind], r["state"],
                                                          r["latents"], False)
        if rl:
            for s in seeds:
                for kind in grids:
                    later[pool.submit(rl_job, cfg, s, kind, ae_res[(s, kind)]["state"])] = ("rl", s, kind)
        wm_res.update({k: f.result() for k, f in wm.items() if k not in wm_res})
        done = {later[f]: f.result() for f in list(later)}
    finally:
        pool.close()
    res = []
    for s in seeds:
        a, b = ae_res[(s, "slots")], ae_res[(s, "holistic")]
        out: dict[str, Any] = {
            "seed": s, "env_steps_per_s": a["env_steps_per_s"], "ari_untrained": a["ari_untrained"],
            "ari": a["ari_test"], "ari_val": a["ari_val"], "savi_seconds": a["seconds"],
            "holistic_ae_seconds": b["seconds"], "recon_mse": {"slots": a["recon_test"], "holistic": b["recon_test"]},
            "controls": a["controls"], "tuned": s in tune,
            "wm": {(kind, lr): v for (ss, kind, lr), v in wm_res.items() if ss == s},
            "chosen": chosen,
            "update_seconds": {kind: done[("speed", s, kind)]["update_seconds"] for kind in grids},
            "update_parts": {kind: done[("speed", s, kind)]["parts"] for kind in grids},
            "update_counts": {kind: done[("speed", s, kind)]["counts"] for kind in grids}}
        out["params"] = {kind: out["wm"][(kind, chosen[kind])]["params"] for kind in grids}
        if "example" in a:
            out["example"] = a["example"]
        if rl:
            out["rl"] = {k: done[("rl", s, k)] for k in RL_KINDS}
        res.append(out)
    _CACHE.clear()
    _CACHE[key] = res
    _SELECTED.clear()
    _SELECTED[key] = sel
    return res



_SELECTED: dict[tuple, dict] = {}


def _select(cfg: Config, tune: list[int], wm_res: dict[tuple, dict], ae_res: dict[tuple, dict], pool):
    """Each world model's dynamics lr, chosen alike on the validation episodes of the tuning seeds (score: the best
    validation open-loop MSE of the plateau-trained model, mean over those seeds); a choice at the edge of its grid
    gets up to ``cfg.tune_extend`` points beyond it (trained on the tuning seeds like the grid points)."""
    from icml25.tuning import tune_alike

    def evaluator(kind: str):
        def score(p) -> float:
            lr = p["lr"]
            todo = {s: pool.submit(wm_job, cfg, s, kind, lr, ae_res[(s, kind)]["state"], ae_res[(s, kind)]["latents"],
                                   s == tune[0]) for s in tune if (s, kind, lr) not in wm_res}   # beyond the edge
            wm_res.update({(s, kind, lr): f.result() for s, f in todo.items()})
            return float(np.mean([np.mean(wm_res[(s, kind, lr)]["val"]) for s in tune]))
        return score

    return tune_alike({"slots": (evaluator("slots"), {"lr": list(cfg.lr_grid)}),
                       "holistic": (evaluator("holistic"), {"lr": list(cfg.holistic_lr_grid)})},
                      higher_is_better=False, extend=cfg.tune_extend)


def _selection(cfg: Config, seeds: list[int]):
    _results(cfg, seeds)
    return _SELECTED[(repr(cfg), tuple(seeds), _WANT_RL[0])]
