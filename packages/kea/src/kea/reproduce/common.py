"""Helpers shared by the experiments of :mod:`kea.reproduce`: the agents and their pairs, the validation and test
splits, one DeepSea job, the fork pool, the read-outs of a run (episodes to solve, coverage) and the competence gates."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
from icml25.claims import Claim, fmt_seeds
from icml25.parallel import ForkPool

from kea.config import Config

VARIANT_NAMES = ("SAC", "RND-SAC", "NovelD-SAC", "KEA-RND", "KEA-NovelD")
PAIRS = (("KEA-RND", "RND-SAC"), ("KEA-NovelD", "NovelD-SAC"))
TASKS = ("main", "deepsea-large", "continuous", "ablation")
PAPER = ("KEA paper (ICML 2025), abstract and Sec. 4: KEA 'significantly improves learning efficiency and "
         "robustness in sparse reward setups' vs RND-/NovelD-SAC (DeepSea N = 10 … 30, learning curves); no table "
         "values are available to us")
TEST_MAPPING_SEED = 42
"""bsuite's DeepSea instance: the test split."""
VAL_MAPPING_SEED = 7
"""Another DeepSea instance (a different per-cell action mapping): the validation split used for tuning."""
VAL_SEED_OFFSET = 10_000
"""Validation agent seeds are ``VAL_SEED_OFFSET + i``: never one of the test seeds."""

_fmt = partial(fmt_seeds, spec=".3g", sd_spec=".2g")  # mean ± sd over seeds, one table cell


def validation_split(cfg: Config, seeds: list[int]) -> dict[str, Any]:
    """The tuning split (DeepSea instance + agent seeds) and the test split; raises if they overlap."""
    val = {"mapping_seed": VAL_MAPPING_SEED, "size": cfg.val_size,
           "seeds": tuple(VAL_SEED_OFFSET + i for i in range(cfg.val_seeds))}
    test = {"mapping_seed": TEST_MAPPING_SEED, "sizes": tuple(cfg.sizes), "seeds": tuple(seeds)}
    if val["mapping_seed"] == test["mapping_seed"]:
        raise ValueError("the validation DeepSea instance must differ from the test instance")
    shared = set(val["seeds"]) & set(test["seeds"])
    if shared:
        raise ValueError(f"validation seeds {sorted(shared)} are also test seeds")
    return {"validation": val, "test": test}


def agent_kwargs(cfg: Config, size: int, lr: float, episodes: int, *, warmup: int | None = None) -> dict[str, Any]:
    """The released DeepSea settings at this budget (identical for every agent but the learning rate)."""
    warmup = cfg.warmup_episodes if warmup is None else warmup
    return dict(hidden=(cfg.hidden, cfg.hidden), batch_size=cfg.batch_size,
                learning_starts=max(warmup * size, cfg.batch_size), train_freq=cfg.train_freq,
                gradient_steps=cfg.gradient_steps, buffer_size=100_000, lr=float(lr),
                per_beta_steps=episodes * size)


def ds_job(cfg: Config, variant: str, seed: int, lr: float, *, size: int, episodes: int,
           mapping_seed: int, warmup: int | None = None, eval_every: int | None = None,
           options: dict[str, Any] | None = None) -> dict[str, Any]:
    """One DeepSea run; ``options`` are extra ``KEA`` keyword arguments (the ablation's option rows)."""
    kw = agent_kwargs(cfg, size, lr, episodes, warmup=warmup)
    kw.update(options or {})
    return dict(task="deepsea", variant=variant, seed=seed, size=size, steps=episodes * size,
                agent_kwargs=kw, eval_every=cfg.eval_every if eval_every is None else eval_every,
                stop_when_solved=True, mapping_seed=mapping_seed, num_envs=cfg.num_envs)


def _run(job: dict[str, Any]) -> dict[str, Any]:
    from kea.experiment import run_variant

    return run_variant(**job)


def _pool(workers: int) -> ForkPool:
    """The shared fork pool, with torch and kea's modules imported before forking so the workers inherit them."""
    return ForkPool(workers, preload=("torch", "kea.agent", "kea.experiment"))


def solve_episode(r: dict[str, Any], budget_eps: int) -> float:
    """Episode at which the run's declared greedy module (KEA: the standard module; baselines: their SAC module)
    first reached the optimum; unsolved = the budget."""
    return float(r["solved_episode"]) if r["solved_episode"] is not None else float(budget_eps)


def coverage_at(r: dict[str, Any], episode: int, *, after_warmup: bool = True) -> float:
    """Distinct states visited by ``episode`` (the last evaluation point at or before it; a run that stopped
    earlier because it solved the task keeps its last value). ``after_warmup``: only the states the agent's own
    actions reached after the shared random warm-up (the warm-up alone visits almost every cell of N = 10)."""
    best = 0
    for point in r["coverage"]:
        if point[0] <= episode:
            best = point[2] if after_warmup else point[1]
    return float(best)


def gate_name(task: str, variant: str) -> str:
    """The text of ``variant``'s competence gate on ``task`` (a paper claim names the gates it depends on)."""
    return f"{task}: {variant} has learned the task (its declared greedy module beats doing nothing)"


def competence_gate(task: str, variant: str, runs: list[dict[str, Any]], *, optimum: float,
                    controls: dict[str, float]) -> Claim:
    """Gate: the final greedy return of ``variant``'s declared module (per seed) beats each trivial control."""
    decl = runs[0]["declared_module"] if runs else "sac"
    return Claim.gate(
        claim=gate_name(task, variant),
        metric=f"final greedy return of the declared module ({decl}); optimum {optimum:g}",
        ours=[r["final_return_declared"] for r in runs], controls=controls,
        note=f"{sum(r['solved_episode'] is not None for r in runs)}/{len(runs)} seeds solved by the declared module")


def deepsea_controls(n: int) -> dict[str, float]:
    """DeepSea's trivial controls: always-left (doing nothing: return 0) and the uniform-random policy (reaches
    the treasure with probability 2^-N, pays 0.01/N per right move: expected 2^-N − 0.005)."""
    return {"always-left (do nothing)": 0.0, "uniform-random policy": 2.0 ** -n - 0.005}


def _curve(runs: list[dict[str, Any]], points: list[int], fn) -> np.ndarray:
    return np.array([[fn(r, p) for p in points] for r in runs], dtype=float)  # (seeds, points)
