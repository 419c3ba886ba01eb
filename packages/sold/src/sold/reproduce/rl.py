"""Behaviour learning (``reproduce --rl``): the per-seed job (:func:`rl_job`) and the ``behaviour`` experiment."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from icml25.claims import Claim
from icml25.experiment import Section

from sold.config import Config
from sold.reproduce.common import PAPER_RL, _build_ae, _env, _fmt
from sold.reproduce.results import _results

RL_KINDS = ("slots", "holistic", "sac", "random", "oracle")
"""Behaviour-learning rows: the two world-model agents, SB3's SAC on the true object states (the issue's upper
reference, the same number of environment steps), the scripted oracle (an upper bound) and a random policy."""


def _sac_policy(cfg: Config, seed: int):
    """SB3's SAC (its defaults; replay buffer sized to the budget) trained on :class:`TrueStateObservation` for
    ``cfg.rl_steps`` environment steps; returns a deterministic policy ``state -> action``."""
    from stable_baselines3 import SAC

    from sold.envs import TrueStateObservation

    env = TrueStateObservation(_env(cfg))
    env.reset(seed=seed)
    model = SAC("MlpPolicy", env, seed=seed, device="cpu", buffer_size=max(cfg.rl_steps, 1),
                learning_starts=min(100, max(cfg.rl_steps // 10, 1)), verbose=0)
    model.learn(cfg.rl_steps)
    return lambda obs: model.predict(obs, deterministic=True)[0]


def rl_job(cfg: Config, seed: int, kind: str, state: dict[str, np.ndarray] | None) -> dict[str, Any]:
    """Behaviour learning on 'distinct' for one agent (``kind`` 'slots' / 'holistic' with the pre-trained
    autoencoder ``state``; same budget), SB3's SAC on true states ('sac', same number of env steps), or the
    'random' / 'oracle' policies."""
    import torch

    from sold.agent import SOLD

    torch.set_num_threads(1)
    ev_seed = seed * 1_000_003 + 90_000
    if kind in ("slots", "holistic"):
        agent = SOLD(_env(cfg), config=cfg.agent, ae_config=cfg.ae, autoencoder=_build_ae(cfg, kind, state),
                     representation=kind, seed=seed)
        t0 = time.perf_counter()
        agent.learn(cfg.rl_steps)
        r = agent.evaluate(_env(cfg), cfg.rl_eval_episodes, seed=ev_seed)
        r["seconds"] = time.perf_counter() - t0
        return r
    if kind not in ("sac", "random", "oracle"):
        raise ValueError(f"rl_job: kind must be one of {RL_KINDS}, got {kind!r}")
    env = _env(cfg)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    sac = _sac_policy(cfg, seed) if kind == "sac" else None
    fin, anys, rets = [], [], []
    for i in range(cfg.rl_eval_episodes):
        env.reset(seed=ev_seed + i)
        done, hit, ret = False, False, 0.0
        while not done:
            if kind == "random":
                a = rng.uniform(-1, 1, 2)
            elif kind == "sac":
                a = sac(env.true_state())
            else:
                a = env.oracle_action()
            _, rew, term, trunc, info = env.step(a)
            ret += rew
            hit = hit or info["success"]
            done = term or trunc
        fin.append(float(info["success"]))
        anys.append(float(hit))
        rets.append(ret)
    return {"success": float(np.mean(fin)), "any_success": float(np.mean(anys)), "return": float(np.mean(rets)),
            "seconds": time.perf_counter() - t0}



def behaviour(cfg: Config, seeds: list[int], out: Path) -> Section:
    """``--rl``: success after the same number of environment steps, each world-model agent gated on beating a
    random policy's return."""
    sec = Section("behaviour learning")
    res = _results(cfg, seeds)
    rl = [r["rl"] for r in res]
    succ = {k: [x[k]["success"] for x in rl] for k in RL_KINDS}
    anys = {k: [x[k]["any_success"] for x in rl] for k in succ}
    rets = {k: [x[k]["return"] for x in rl] for k in succ}
    gates = {k: f"Gate: the {n} beats a random policy (mean evaluation return)"
             for k, n in (("slots", "SOLD agent"), ("holistic", "holistic agent"))}
    for k in gates:
        sec.add(Claim.gate(claim=gates[k], metric=f"mean return over {cfg.rl_eval_episodes} deterministic episodes",
                           ours=rets[k], controls={"random policy": rets["random"]}, paired=True,
                           note="same evaluation episodes (reset seeds) for the agent and the random policy"))
    sec.add(Claim.compare(
        claim=f"SOLD solves the task ({cfg.env.task!r}) more often than the holistic agent after {cfg.rl_steps} "
              "env steps",
        metric=f"final-step success rate over {cfg.rl_eval_episodes} deterministic episodes",
        ours=succ["slots"], baseline=succ["holistic"], baseline_name="holistic agent (same imagination code)",
        paper=PAPER_RL, kind="paper", paired=True, gates=list(gates.values())))
    names = {"slots": "SOLD", "holistic": "holistic agent", "sac": "SB3 SAC on true object states (reference)",
             "random": "random policy", "oracle": "scripted oracle on true state (upper bound)"}
    sec.table(f"Behaviour learning on {cfg.env.task!r} ({cfg.rl_steps} env steps each)",
              ["agent", "final-step success", "any-step success", "mean return"],
              [[names[k], _fmt(succ[k]), _fmt(anys[k]), _fmt(rets[k])] for k in succ])
    return sec
