"""One training run of one variant on one task, with periodic greedy evaluation (used by ``reproduce``/``train``).

Tasks: ``deepsea`` (size N; β_e = N as in the paper; evaluation = one greedy episode, the env is deterministic),
``gridnav`` (size × size room), ``mountaincar`` (gymnasium ``MountainCarContinuous-v0``; plain SAC there is
stable-baselines3's ``SAC`` with matched hyper-parameters). Runs are plain functions of picklable arguments so
that ``reproduce`` can fan them out over processes.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

TASKS = ("deepsea", "gridnav", "mountaincar", "sparse-mountaincar", "sparse-reacher")
SUCCESS_RETURN = {"sparse-mountaincar": 1.0, "sparse-reacher": 1.0}
"""Greedy return that counts as solved on the sparse continuous tasks (DeepSea: its optimum 0.99)."""


def make_env(task: str, *, size: int = 10, seed: int = 0, mapping_seed: int = 42):
    """``task``'s environment; ``mapping_seed`` picks the DeepSea instance (42 = bsuite's, used for the test runs;
    ``reproduce`` tunes on another instance)."""
    import gymnasium as gym

    from kea.envs import DeepSea, GridNav

    if task == "deepsea":
        return DeepSea(size=size, seed=seed, mapping_seed=mapping_seed)
    if task == "gridnav":
        return GridNav(size=size, seed=seed)
    if task == "mountaincar":
        return gym.make("MountainCarContinuous-v0")
    if task == "sparse-mountaincar":  # size = episode length
        from kea.envs import SparseMountainCar

        return SparseMountainCar(max_episode_steps=size)
    if task == "sparse-reacher":
        from kea.envs import SparseReacher

        return SparseReacher()
    raise ValueError(f"task must be one of {TASKS}, got {task!r}")


def greedy_return(agent, env, *, module: str, episodes: int = 1, seed: int = 10_000) -> float:
    """Mean return of ``agent.predict(..., deterministic=True, module=module)`` over ``episodes``."""
    total = 0.0
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        done = False
        while not done:
            a, _ = agent.predict(obs, deterministic=True, module=module)
            obs, r, term, trunc, _ = env.step(a)
            total += float(r)
            done = term or trunc
    return total / episodes


EVAL_MODULES = ("standard", "sac")


def declared_module(variant: str, kea_eval_module: str = "standard") -> str:
    """The one greedy module an agent is scored by, declared before the run: KEA's standard module A^B (the
    released evaluation's intent, ``kea_eval_module``), every baseline its only (SAC) module."""
    if kea_eval_module not in EVAL_MODULES:
        raise ValueError(f"kea_eval_module must be one of {EVAL_MODULES}, got {kea_eval_module!r}")
    return kea_eval_module if variant.startswith("KEA") else "sac"


def run_variant(*, task: str, variant: str, seed: int, size: int, steps: int, agent_kwargs: dict[str, Any],
                eval_every: int, eval_episodes: int = 1, stop_when_solved: bool = False, mapping_seed: int = 42,
                num_envs: int = 1, kea_eval_module: str = "standard") -> dict[str, Any]:
    """Train ``variant`` for ``steps`` transitions on ``num_envs`` parallel copies of the task; evaluate both modules
    greedily every ``eval_every`` episodes.

    Every agent is scored by ONE greedy module declared before the run (:func:`declared_module`: KEA's standard
    module, a baseline's SAC module); KEA's other module is evaluated and reported beside it, never counted.
    Returns a JSON-able dict: eval curve ``[(episode, return_sac, return_std_or_nan)]``, coverage curve
    ``[(episode, distinct states so far, distinct states visited after the random warm-up)]``, the episode at which
    the declared greedy module first reached the optimum (``solved_episode``; ``other_solved_episode`` for KEA's
    other module, if it did before the run stopped), first successful episode, gate-open step, switch fraction,
    steps/s. ``stop_when_solved`` ends a run once the declared greedy module is optimal.
    """
    import warnings

    import torch
    from icml25.seeding import seed_everything

    from kea.agent import KEAGateWarning
    from kea.envs import make_vec_env
    from kea.variants import make_agent

    warnings.simplefilter("ignore", KEAGateWarning)  # the gate is reported in the results instead
    torch.set_num_threads(1)
    seed_everything(seed)
    venv = make_vec_env(lambda: make_env(task, size=size, seed=seed, mapping_seed=mapping_seed), num_envs=num_envs)
    eval_env = make_env(task, size=size, seed=seed + 1, mapping_seed=mapping_seed)
    t0 = time.perf_counter()
    if task == "mountaincar" and variant == "SAC":
        return _run_sb3_sac(make_env(task), eval_env, seed=seed, steps=steps, agent_kwargs=agent_kwargs,
                            eval_every=eval_every, eval_episodes=eval_episodes)
    kw = dict(agent_kwargs)
    if task == "deepsea":
        kw.setdefault("beta_e", float(size))
    kw.setdefault("per_beta_steps", int(steps))
    agent = make_agent(variant, venv, seed=seed, **kw)
    curve: list[list[float]] = []
    coverage: list[list[int]] = []
    solved_at: list[int | None] = [None]
    other_solved_at: list[int | None] = [None]
    decl = declared_module(variant, kea_eval_module)
    next_eval = [eval_every]
    optimum = eval_env.optimal_return if task == "deepsea" else SUCCESS_RETURN.get(task)

    def cb(ag) -> None:
        n_ep = len(ag.trace.episode_returns)
        if n_ep < next_eval[0]:
            return
        next_eval[0] += eval_every
        r_sac = greedy_return(ag, eval_env, module="sac", episodes=eval_episodes)
        r_std = (greedy_return(ag, eval_env, module="standard", episodes=eval_episodes)
                 if ag.standard is not None else math.nan)
        curve.append([n_ep, r_sac, r_std])
        coverage.append([n_ep, ag.trace.distinct_states[-1], ag.trace.distinct_states_learn[-1]])
        r_decl, r_other = (r_std, r_sac) if decl == "standard" else (r_sac, r_std)
        if optimum is not None and solved_at[0] is None and r_decl >= optimum - 1e-6:
            solved_at[0] = n_ep
        if (optimum is not None and other_solved_at[0] is None and not math.isnan(r_other)
                and r_other >= optimum - 1e-6):
            other_solved_at[0] = n_ep

    stopped = False
    chunk = max(eval_every * (size if task in ("deepsea", "sparse-mountaincar") else 1), num_envs)
    while agent.num_timesteps < steps:
        agent.learn(min(chunk, steps - agent.num_timesteps), callback=cb)
        if stop_when_solved and solved_at[0] is not None:
            stopped = True
            break
    seconds = time.perf_counter() - t0
    tr = agent.trace
    learn_sw = tr.switched[agent.learning_starts:]
    return {
        "task": task, "variant": variant, "seed": seed, "size": size, "mapping_seed": mapping_seed,
        "num_envs": num_envs, "lr": float(kw.get("lr", 3e-4)), "steps": agent.num_timesteps,
        "stopped_early": stopped, "episodes": len(tr.episode_returns),
        "curve": curve, "coverage": coverage, "distinct_states": len(agent._visited),
        "first_success_episode": tr.first_success_episode, "solved_episode": solved_at[0],
        "declared_module": decl, "other_solved_episode": other_solved_at[0],
        "final_return_declared": greedy_return(agent, eval_env, module=decl, episodes=eval_episodes),
        "gate_open_step": tr.gate_open_step,
        "switch_fraction": float(np.mean(learn_sw)) if learn_sw else 0.0,
        "final_return_sac": greedy_return(agent, eval_env, module="sac", episodes=eval_episodes),
        "final_return_standard": (greedy_return(agent, eval_env, module="standard", episodes=eval_episodes)
                                  if agent.standard is not None and agent.gate_open else math.nan),
        "seconds": seconds, "steps_per_s": agent.num_timesteps / max(tr.seconds, 1e-9),
    }


def _run_sb3_sac(env, eval_env, *, seed: int, steps: int, agent_kwargs: dict[str, Any], eval_every: int,
                 eval_episodes: int) -> dict[str, Any]:
    """Plain SAC on a Box task through stable-baselines3 (hyper-parameters matched to the KEA agents)."""
    from stable_baselines3 import SAC
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor

    eval_env = Monitor(eval_env)
    kw = agent_kwargs
    t0 = time.perf_counter()
    model = SAC("MlpPolicy", env, learning_rate=kw.get("lr", 3e-4), buffer_size=kw.get("buffer_size", 100_000),
                learning_starts=kw.get("learning_starts", 2000), batch_size=kw.get("batch_size", 64),
                tau=kw.get("tau", 0.005), gamma=kw.get("gamma", 0.99), train_freq=kw.get("train_freq", 16),
                gradient_steps=kw.get("gradient_steps", 8), ent_coef="auto",
                policy_kwargs={"net_arch": list(kw.get("hidden", (64, 64)))}, seed=seed, device="cpu", verbose=0)
    returns: list[float] = []
    curve: list[list[float]] = []

    class _Cb(BaseCallback):
        def _on_step(self) -> bool:
            for info in self.locals.get("infos", []):
                if "episode" in info:
                    returns.append(float(info["episode"]["r"]))
                    if len(returns) % eval_every == 0:
                        m, _ = evaluate_policy(self.model, eval_env, n_eval_episodes=eval_episodes)
                        curve.append([len(returns), float(m), math.nan])
            return True

    model.learn(total_timesteps=steps, callback=_Cb())
    seconds = time.perf_counter() - t0
    final, _ = evaluate_policy(model, eval_env, n_eval_episodes=eval_episodes)
    return {
        "task": "mountaincar", "variant": "SAC", "seed": seed, "size": 0, "steps": steps, "stopped_early": False,
        "episodes": len(returns), "episode_returns": returns, "curve": curve,
        "first_success_episode": next((i + 1 for i, r in enumerate(returns) if r > 0), None),
        "solved_episode": None, "gate_open_step": None, "coverage": [], "distinct_states": None,
        "declared_module": "sac", "other_solved_episode": None,
        "switch_fraction": 0.0,
        "final_return_sac": float(final), "final_return_standard": math.nan, "final_return": float(final),
        "final_return_declared": float(final),
        "seconds": seconds, "steps_per_s": steps / seconds,
    }
