"""The teacher of a reproduction: a Diffusion-QL planner trained to the plateau of its validation return, and a
diagnostic of the best-of-50 labels it hands to Habi."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from habi.data import qlearning_dataset
from habi.planner import DiffusionPlanner, PlannerConfig, PlannerTrainConfig, PlannerTrainer
from habi.reproduce.common import score
from habi.teacher import generate_goal_directed_behavior


def fit_planner(data: dict, *, config: PlannerConfig, train: PlannerTrainConfig, seed: int, env_id: str,
                meta: dict, val_start: int, val_episodes: int, eval_every: int, patience: int, min_delta: float,
                log: Any = None, threads: int = 1) -> tuple[DiffusionPlanner, Any, dict[str, Any]]:
    """Train the planner with :func:`icml25.train.train_until_plateau` on the normalised return of its argmax-of-50
    decision on ``val_episodes`` validation episodes (every ``eval_every`` steps, at most ``train.steps``); returns
    the planner at its best evaluation (early stopping), the :class:`icml25.train.Curve` and a summary. ``threads``:
    torch threads while it trains."""
    from icml25.train import train_until_plateau

    tr = PlannerTrainer(data, config=config, train=train, seed=seed)
    best: dict[str, Any] = {}
    t0 = time.perf_counter()
    last: dict[str, float] = {}

    def step(i: int) -> None:
        last.update(tr.step())

    def evaluate() -> float:
        planner = tr.planner()
        torch.manual_seed(seed)
        v = score(planner.act_batch, env_id, meta, episodes=val_episodes, start=val_start)
        if log is not None:
            log(tr.steps_done, stage="planner", validation_score=v, seconds=round(time.perf_counter() - t0, 1),
                **last)
        return v

    prev = torch.get_num_threads()
    torch.set_num_threads(threads)  # the planner trains while the workers only train BC (short jobs)
    try:
        curve = train_until_plateau(step, evaluate, max_steps=train.steps, eval_every=eval_every, patience=patience,
                                    min_delta=min_delta, on_improve=lambda at, v: best.update(step=at, value=v,
                                                                                               state=tr.state()))
    finally:
        torch.set_num_threads(prev)
    info = {"best_step": best["step"], "best": best["value"], "steps": tr.steps_done,
            "seconds": time.perf_counter() - t0, "q_mean": last.get("q_mean", float("nan"))}
    return tr.planner(best["state"]), curve, info


def label_diagnostic(planner: Any, data: dict, *, states: int, seed: int) -> dict[str, float]:
    """How the teacher's best-of-50 labels a* relate to its own samples and to the data's actions.

    On ``states`` data-set states: the fraction of a* at the action bound (|a*| > 0.95), the within-state
    correlation of the candidates' actions with their critic values (a critic that ranks by the action's sign or
    size has |corr| near 1), the mean |a* - mean candidate| and the mean |data action - mean candidate|, and the
    label's own noise: the mean |a* - a*'| between two independent best-of-50 draws on the same states (a target
    that a deterministic map of the state cannot fit closer than about half of that)."""
    t = generate_goal_directed_behavior(planner, data, max_states=states, stored=1, seed=seed, return_all=True,
                                        progress=False)
    A, Q = t["all_candidates"], t["all_values"]  # (N, M, act), (N, M)
    best = A[np.arange(len(A)), Q.argmax(1)]
    torch.manual_seed(seed + 7919)  # a second, independent draw of the 50 candidates on the same states
    with torch.no_grad():
        A2, Q2 = planner.candidates(torch.from_numpy(t["states"]), n=A.shape[1])
    best2 = A2.numpy()[np.arange(len(A)), Q2.numpy().argmax(1)]
    a0, q0 = A[..., 0], Q
    ac, qc = a0 - a0.mean(1, keepdims=True), q0 - q0.mean(1, keepdims=True)
    corr = (ac * qc).sum(1) / np.sqrt((ac ** 2).sum(1) * (qc ** 2).sum(1) + 1e-12)
    q = qlearning_dataset(data)
    return {"frac_bound": float((np.abs(best) > 0.95).mean()),
            "frac_bound_samples": float((np.abs(A) > 0.95).mean()),
            "frac_bound_data": float((np.abs(q["actions"]) > 0.95).mean()),
            "corr_aQ": float(np.nanmean(corr)), "abs_corr_aQ": float(np.nanmean(np.abs(corr))),
            "best_minus_mean": float(np.abs(best - A.mean(1)).mean()),
            "cand_sd": float(A.std(1).mean()), "redraw_gap": float(np.abs(best - best2).mean())}
