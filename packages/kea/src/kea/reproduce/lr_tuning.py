"""Learning-rate tuning of :mod:`kea.reproduce`: every agent gets the same grid and budget on the validation split
(:func:`icml25.tuning.tune_alike`)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import numpy as np
from icml25.parallel import ForkPool

from kea.config import Config
from kea.reproduce.common import VARIANT_NAMES, _run, ds_job, solve_episode, validation_split


def tune_lr(pool: ForkPool, jobs: Callable[[str, float], list[dict[str, Any]]], score: Callable[[dict], float],
            lr_grid: tuple[float, ...], extend: int, variants: tuple[str, ...] = VARIANT_NAMES):
    """:func:`icml25.tuning.tune_alike` over ``lr_grid`` for every variant (lower score = better). ``jobs(v, lr)``
    are the validation runs of one grid point; all grid points are submitted at once, and a point added by the edge
    extension is submitted when the tuner asks for it."""
    from icml25.tuning import tune_alike

    cache: dict[tuple[str, float], list[Future]] = {}

    def futures(v: str, lr: float) -> list[Future]:
        key = (v, float(lr))
        if key not in cache:
            cache[key] = [pool.submit(_run, j) for j in jobs(v, float(lr))]
        return cache[key]

    for lr in lr_grid:
        for v in variants:
            futures(v, lr)

    def evaluator(v: str):
        return lambda p: float(np.mean([score(f.result()) for f in futures(v, p["lr"])]))

    return tune_alike({v: (evaluator(v), {"lr": list(lr_grid)}) for v in variants}, higher_is_better=False,
                      extend=extend)


def tune(cfg: Config, seeds: list[int], pool: ForkPool, *, variants: tuple[str, ...] = VARIANT_NAMES):
    """:func:`tune_lr` on the validation DeepSea instance (fewer episodes to solve it is better)."""
    val = validation_split(cfg, seeds)["validation"]

    def jobs(v: str, lr: float) -> list[dict[str, Any]]:
        return [ds_job(cfg, v, s, lr, size=val["size"], episodes=cfg.val_episodes, mapping_seed=val["mapping_seed"],
                       warmup=cfg.val_warmup_episodes, eval_every=cfg.val_eval_every) for s in val["seeds"]]

    return tune_lr(pool, jobs, lambda r: solve_episode(r, cfg.val_episodes), tuple(cfg.lr_grid), cfg.extend,
                   variants)
