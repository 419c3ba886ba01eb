"""Offline data sets made locally with our own stable-baselines3 policies (D4RL "medium" / "medium-replay" analogues).

Recipe (D4RL's, scaled down):

1. Train ``stable_baselines3.SAC`` on ``make_env(env_id)`` (actions in [-1, 1]) for ``sac_steps`` steps, saving the
   policy every ``checkpoint_every`` steps and evaluating each checkpoint (deterministic, ``eval_episodes``).
2. References: ``R_random`` = uniform random actions, ``R_expert`` = the best checkpoint; normalised score
   ``100 (R - R_random) / (R_expert - R_random)``. With ``references="d4rl"`` (MuJoCo tasks) D4RL's published
   random/expert returns are used instead (:data:`habi.data.D4RL_REFERENCES`); our own measurements stay in ``meta``.
3. ``medium``: ``n_transitions`` steps of the (stochastic) checkpoint whose normalised score is closest to
   ``medium_target``. ``medium-replay``: SAC's replay buffer up to that checkpoint. With ``stop_at_target`` SAC
   stops at the first checkpoint that reaches the target (D4RL's recipe for its medium policies).

Both are written in the D4RL HDF5 layout, with the references in the ``meta`` attribute, and cached under
``$HABI_CACHE`` (default ``~/.cache/habi``) keyed by the full configuration.
"""

from __future__ import annotations

import copy
import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from habi.config import DataGenConfig  # noqa: F401 (defined in the light habi.config)
from habi.data import load_offline, save_offline
from habi.envs import make_env
from habi.errors import HabiConfigError

DATASETS = ("medium", "medium-replay")


def cache_root() -> Path:
    return Path(os.environ.get("HABI_CACHE", "~/.cache/habi")).expanduser()


def _rollout_returns(policy_fn, env_id: str, episodes: int, seed: int) -> float:
    from habi.envs import evaluate_policy

    return float(evaluate_policy(policy_fn, env_id, episodes=episodes, seed=seed).mean())


def _collect(model: Any, env_id: str, n: int, seed: int, n_envs: int = 10) -> dict[str, np.ndarray]:
    """Roll the stochastic SB3 policy in ``n_envs`` lock-step envs; episodes stored back to back."""
    envs = [make_env(env_id) for _ in range(n_envs)]
    per = max(1, -(-n // n_envs))
    rec: list[dict[str, list]] = [{k: [] for k in ("o", "a", "r", "te", "to")} for _ in envs]
    obs = np.stack([e.reset(seed=seed + i)[0] for i, e in enumerate(envs)])
    for _ in range(per):
        acts, _ = model.predict(obs, deterministic=False)
        for i, e in enumerate(envs):
            o2, r, te, tr, _ = e.step(acts[i])
            for k, v in zip(("o", "a", "r", "te", "to"), (obs[i].copy(), acts[i], r, te, tr and not te), strict=True):
                rec[i][k].append(v)
            if te or tr:
                o2, _ = e.reset()
            obs[i] = o2
    # the last row of each env's stream ends its segment: mark it as a timeout (its successor is unknown)
    for r in rec:
        if not (r["te"][-1] or r["to"][-1]):
            r["to"][-1] = True
    cat = lambda k: np.concatenate([np.asarray(r[k]) for r in rec])[:n]  # noqa: E731
    out = {"observations": cat("o").astype(np.float32), "actions": cat("a").astype(np.float32),
           "rewards": cat("r").astype(np.float32), "terminals": cat("te").astype(bool),
           "timeouts": cat("to").astype(bool)}
    out["timeouts"][-1] = not out["terminals"][-1]
    return out


def _references(config: DataGenConfig) -> tuple[float, float] | None:
    """D4RL's (random, expert) returns when ``config.references == "d4rl"``, else None (measured ones are used)."""
    if config.references == "own":
        return None
    from habi.data import D4RL_REFERENCES

    if config.env_id not in D4RL_REFERENCES:
        raise HabiConfigError(f"references='d4rl' needs a D4RL locomotion task {tuple(D4RL_REFERENCES)}, got env_id "
                              f"{config.env_id!r}; use references='own'")
    return D4RL_REFERENCES[config.env_id]


def _norm(ret: float, r_random: float, r_expert: float) -> float:
    from habi.data import normalized_score

    return float(normalized_score(ret, random_return=r_random, expert_return=r_expert))


def _episode_return_mean(d: dict[str, np.ndarray]) -> float:
    """Mean return of the complete episodes of a data set (episodes end at a terminal or a timeout; segments cut
    at the end of an env's stream count as episodes too)."""
    ends = np.nonzero(d["terminals"] | d["timeouts"])[0]
    sums = np.add.reduceat(d["rewards"].astype(np.float64), np.r_[0, ends[:-1] + 1]) if len(ends) else d["rewards"]
    return float(np.mean(sums))


def make_offline_data(config: DataGenConfig, *, cache: bool = True, progress: bool = True) -> dict[str, Any]:
    """Generate (or load from the cache) the 'medium' and 'medium-replay' data sets.

    Returns ``{"medium": path, "medium-replay": path, "meta": {...references, checkpoints...}, "cached": bool}``.
    """
    import torch
    from stable_baselines3 import SAC

    folder = cache_root() / f"{config.env_id}-{config.key()}"
    paths = {d: folder / f"{d}.hdf5" for d in DATASETS}
    if cache and all(p.exists() for p in paths.values()) and (folder / "meta.json").exists():
        return {**paths, "meta": json.loads((folder / "meta.json").read_text()), "cached": True}
    t0 = time.perf_counter()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        env = make_env(config.env_id)
        refs = _references(config)
        model = SAC("MlpPolicy", env, policy_kwargs={"net_arch": [config.sac_hidden] * 2},
                    learning_rate=config.sac_lr, gamma=config.sac_gamma,
                    learning_starts=min(500, config.sac_steps // 2), seed=config.seed, verbose=0)
        ckpts: list[dict[str, Any]] = []
        eval_seed = 10_000 + config.seed
        rng = np.random.default_rng(config.seed)
        act_dim = env.action_space.shape[0]
        r_random = _rollout_returns(lambda o: rng.uniform(-1, 1, size=(len(o), act_dim)), config.env_id,
                                    config.eval_episodes, eval_seed)
        from tqdm.auto import tqdm

        done = 0
        with tqdm(total=config.sac_steps, desc="SAC (data policy)", disable=not progress, mininterval=2.0) as bar:
            while done < config.sac_steps:
                chunk = min(config.checkpoint_every, config.sac_steps - done)
                model.learn(chunk, reset_num_timesteps=False)
                done += chunk
                bar.update(chunk)
                ret = _rollout_returns(lambda o: model.predict(o, deterministic=True)[0], config.env_id,
                                       config.eval_episodes, eval_seed)
                ckpts.append({"step": done, "return": ret, "state": copy.deepcopy(model.policy.state_dict())})
                bar.set_postfix(last_return=f"{ret:.1f}", refresh=False)
                if refs and config.stop_at_target and _norm(ret, *refs) >= config.medium_target:
                    break
        best = max(ckpts, key=lambda c: c["return"])
        own_random, own_expert = r_random, best["return"]
        r_expert = best["return"]
        if r_expert <= r_random and not refs:  # with D4RL's references our own ones are not needed
            if config.require_improvement:
                raise RuntimeError(f"SAC did not beat the random policy on {config.env_id} ({r_expert:.1f} <= "
                                   f"{r_random:.1f}); raise sac_steps")
            r_expert = r_random + 1.0  # placeholder reference (smoke only)
        if refs:
            r_random, r_expert = refs
        for c in ckpts:
            c["score"] = _norm(c["return"], r_random, r_expert)
        reached = [c for c in ckpts if c["score"] >= config.medium_target]
        medium = (reached[0] if config.stop_at_target and reached
                  else min(ckpts, key=lambda c: abs(c["score"] - config.medium_target)))
        model.policy.load_state_dict(medium["state"])
        med = _collect(model, config.env_id, config.n_transitions, seed=20_000 + config.seed)
        rb = model.replay_buffer
        m = min(medium["step"], rb.pos if not rb.full else rb.buffer_size)
        dones, tos = rb.dones[:m, 0].astype(bool), rb.timeouts[:m, 0].astype(bool)
        replay = {"observations": rb.observations[:m, 0].astype(np.float32),
                  "actions": rb.actions[:m, 0].astype(np.float32), "rewards": rb.rewards[:m, 0].astype(np.float32),
                  "terminals": dones & ~tos, "timeouts": tos.copy()}
        replay["timeouts"][-1] = not replay["terminals"][-1]
    finally:
        torch.set_num_threads(threads)
    meta = {"env_id": config.env_id, "random_return": r_random, "expert_return": r_expert,
            "references": config.references, "own_random_return": own_random, "own_best_return": own_expert,
            "sac_steps_run": ckpts[-1]["step"],
            "medium_data_return": _episode_return_mean(med),
            "medium_step": medium["step"], "medium_score": medium["score"], "expert_step": best["step"],
            "checkpoints": [{k: c[k] for k in ("step", "return", "score")} for c in ckpts],
            "config": asdict(config), "seconds": round(time.perf_counter() - t0, 1)}
    for name, d in (("medium", med), ("medium-replay", replay)):
        save_offline(paths[name], d, meta={**meta, "dataset": name})
    from icml25.io import atomic_write_json

    atomic_write_json(folder / "meta.json", meta)
    return {**paths, "meta": meta, "cached": False}


def load_generated(paths: dict[str, Any], name: str) -> dict[str, np.ndarray]:
    """Load one generated data set by name ('medium' or 'medium-replay')."""
    if name not in DATASETS:
        raise HabiConfigError(f"dataset must be one of {DATASETS}, got {name!r}")
    return load_offline(paths[name])
