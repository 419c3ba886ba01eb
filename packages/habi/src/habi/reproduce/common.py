"""Pieces shared by the experiments: evaluation episodes, scores, trivial controls and training jobs to a plateau.

Every trained model of ``reproduce`` (the planner, Habi, BC, Distill-MSE) is trained with
:func:`icml25.train.train_until_plateau` on its **validation return** (normalised score on validation episodes whose
reset seeds never meet a test episode's, :func:`episode_seeds`) and keeps the weights of its best evaluation
(early stopping). The :class:`icml25.train.Curve` of every run goes into the gate claims.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from habi.data import normalized_score
from habi.envs import evaluate_policy
from habi.errors import HabiConfigError

PAPER_RETURN = ("Habi's normalised score comparable to or higher than its diffusion planner's (abstract; D4RL "
                "MuJoCo/Kitchen/AntMaze/Maze2D)")
PAPER_LATENT = ("habitual inference samples N_c = 5 latents from the prior and keeps the critic's best (the paper's "
                "decision rule); not a numbered claim")
PAPER_HZ = ("800+ Hz average decision frequency on a laptop CPU, orders of magnitude faster than diffusion planners "
            "(abstract)")
PAPER_KL = "adaptive KL weight tuned automatically towards kld_target = 1 (official code; no per-task tuning)"
PAPER_PLANNER = ("the paper's teachers (Diffusion-QL on D4RL medium) score above BC on the same data; Habi is "
                 "compared with a planner that has learned the task")
HZ_TARGET = 800.0
SPEEDUP_TARGET = 10.0
KL_TOL_DECADES = 0.3  # 'reached' = geometric-mean KL within a factor 2 of the target

# Evaluation episodes: test and validation reset seeds never overlap (see :func:`episode_seeds`).
TEST_SEED_BASE = 100_000
VALIDATION_SEED_BASE = 50_000_000
SEED_STRIDE = 1000
MAX_RUN_SEED = 10_000
STORED = 10
"""Candidates stored per state by the teacher (official MuJoCo uncondition_sample_ratio; the teacher's default)."""
METHODS = ("Habi", "BC", "Distill-MSE")


def episode_seeds(split: str, seed: int, episodes: int) -> range:
    """Reset seeds of the evaluation episodes of one training seed on one split.

    ``test``: ``100_000 + 1000·seed + i``; ``validation``: ``50_000_000 + 1000·seed + i`` (``i < episodes``). With
    ``episodes <= 1000`` and ``0 <= seed < 10_000`` the two splits are disjoint for every pair of seeds (test seeds
    stay below 10_100_000): hyper-parameters and early stopping chosen on validation episodes never see a test
    episode.
    """
    if split not in ("test", "validation"):
        raise HabiConfigError(f"split must be 'test' or 'validation', got {split!r}")
    if not 1 <= episodes <= SEED_STRIDE:
        raise HabiConfigError(f"episodes must be in [1, {SEED_STRIDE}], got {episodes}")
    if not 0 <= seed < MAX_RUN_SEED:
        raise HabiConfigError(f"seed must be in [0, {MAX_RUN_SEED}) to keep test and validation episodes apart, got {seed}")
    base = TEST_SEED_BASE if split == "test" else VALIDATION_SEED_BASE
    start = base + SEED_STRIDE * seed
    return range(start, start + episodes)


def score(act_batch: Callable[[np.ndarray], np.ndarray], env_id: str, meta: dict, *, episodes: int,
          start: int) -> float:
    """Mean normalised score (x100, 0 = the random policy, 100 = the expert reference) over ``episodes`` episodes
    with reset seeds ``start, start + 1, ...``."""
    rets = evaluate_policy(act_batch, env_id, episodes=episodes, seed=start)
    return float(normalized_score(rets, random_return=meta["random_return"],
                                  expert_return=meta["expert_return"]).mean())


class RandomActions:
    """Trivial control: uniform actions in [-1, 1] (seeded)."""

    def __init__(self, act_dim: int, seed: int) -> None:
        self.act_dim, self.rng = act_dim, np.random.default_rng(seed)

    def act_batch(self, obs: np.ndarray) -> np.ndarray:
        return self.rng.uniform(-1.0, 1.0, (len(obs), self.act_dim)).astype(np.float32)


class ZeroAction:
    """Trivial control: the zero action (the middle of the action box) in every state."""

    def __init__(self, act_dim: int) -> None:
        self.act_dim = act_dim

    def act_batch(self, obs: np.ndarray) -> np.ndarray:
        return np.zeros((len(obs), self.act_dim), np.float32)


# ---- training jobs to a plateau (run in worker processes when Config.workers > 1) ------------------------------
def _validation(spec: dict[str, Any]) -> Callable[[Any], float]:
    def evaluate(policy: Any) -> float:
        return score(policy.act_batch, spec["env_id"], spec["meta"], episodes=spec["val_episodes"],
                     start=spec["val_start"])
    return evaluate


def _plateau(spec: dict[str, Any], step: Callable[[int], Any], policy: Callable[[], Any],
             snapshot: Callable[[], dict]) -> tuple[Any, dict]:
    from icml25.train import train_until_plateau

    evaluate, best = _validation(spec), {}
    curve = train_until_plateau(step, lambda: evaluate(policy()), max_steps=spec["max_steps"],
                                eval_every=spec["eval_every"], patience=spec["patience"],
                                min_delta=spec["min_delta"],
                                on_improve=lambda at, v: best.update(step=at, value=v, state=snapshot()))
    return curve, best


def _job(spec: dict[str, Any]) -> dict[str, Any]:
    """Train one model from a picklable spec; returns its state dict (and the habitization history).

    ``kind``: ``"habi"`` / ``"regress"`` train a fixed number of steps; ``"habi_plateau"`` / ``"regress_plateau"``
    train to a plateau of the validation return and return the best weights, the best step and value and the
    :class:`icml25.train.Curve` (as a dict)."""
    from habi.baselines import make_regressor, regress_policy
    from habi.habitize import habitize, make_habitizer
    from habi.policy import HabitualPolicy

    torch.set_num_threads(1)
    kind = spec["kind"]
    if kind == "habi":
        model, hist = habitize(spec["teacher"], habi=spec["hcfg"], config=spec["config"], seed=spec["seed"],
                               progress=False)
        return {"state": model.state_dict(), "hist": hist}
    if kind == "regress":
        actor = regress_policy(spec["states"], spec["targets"], normalizer=spec["norm"], config=spec["config"],
                               seed=spec["seed"])
        return {"state": actor.net.state_dict()}
    if kind == "habi_plateau":
        trainer, one_step = make_habitizer(spec["teacher"], habi=spec["hcfg"], config=spec["config"],
                                           seed=spec["seed"])
        model, hist, every = trainer.model, [], max(1, spec["eval_every"] // 5)

        def step(i: int) -> None:
            out = one_step()
            if (i + 1) % every == 0:
                hist.append({"step": i + 1, **out})

        curve, best = _plateau(
            spec, step,
            lambda: HabitualPolicy(model=model, normalizer=spec["norm"], num_candidates=5, scorer="habi",
                                   seed=spec["val_start"]),
            lambda: {"model": copy.deepcopy(model.state_dict()), "hist_len": len(hist)})
        model.eval()
        return {"state": best["state"]["model"], "hist": hist[: best["state"]["hist_len"]] or hist[:1],
                "full_hist": hist, "curve": curve.to_dict(), "best_step": best["step"], "best": best["value"]}
    if kind == "regress_plateau":
        actor, one_step = make_regressor(spec["states"], spec["targets"], normalizer=spec["norm"],
                                         config=spec["config"], seed=spec["seed"])
        curve, best = _plateau(spec, lambda i: one_step(), lambda: actor,
                               lambda: {"model": copy.deepcopy(actor.net.state_dict())})
        return {"state": best["state"]["model"], "curve": curve.to_dict(), "best_step": best["step"],
                "best": best["value"]}
    raise HabiConfigError(f"unknown job kind {kind!r}")


class _Done:
    def __init__(self, value: dict[str, Any]) -> None:
        self.value = value

    def result(self) -> dict[str, Any]:
        return self.value


class Trainer:
    """Submits training jobs to a spawn process pool (or runs them here); one job per key, cached."""

    def __init__(self, workers: int) -> None:
        self.pool = None
        if workers > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
        self.jobs: dict[tuple, Any] = {}

    def get(self, key: tuple, spec: Callable[[], dict[str, Any]]):
        if key not in self.jobs:
            self.jobs[key] = self.pool.submit(_job, spec()) if self.pool is not None else _Done(_job(spec()))
        return self.jobs[key]

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
