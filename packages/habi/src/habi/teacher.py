"""Goal-directed behaviour generation (official ``mode=generate_goal_direct_behavior``).

For every state ``s_n`` of the offline data set (``qlearning_dataset`` rows, normalised with the planner's own
normaliser) the frozen planner samples ``M`` candidates (official 50) and scores them with ``q_min``; the best one
is ``a*_n``. The **first** ``k`` candidates (official 10 for MuJoCo; they are unselected samples) are stored with
their values, together with ``a*_n`` and ``Q*_n``, as ``N · k`` flat rows::

    states (N·k, obs_dim)  candidates (N·k, act_dim)  values (N·k,)  best_actions (N·k, act_dim)  best_values (N·k,)

``states`` are normalised. Row ``n·k + i`` holds candidate ``i`` of state ``n``.
"""

from __future__ import annotations

import numpy as np
import torch

from habi.data import qlearning_dataset
from habi.errors import HabiConfigError
from habi.planner import DiffusionPlanner


def generate_goal_directed_behavior(planner: DiffusionPlanner, data: dict[str, np.ndarray], *,
                                    num_candidates: int = 50, stored: int = 10, batch_states: int = 512,
                                    max_states: int | None = None, seed: int = 0, return_all: bool = False,
                                    progress: bool = True) -> dict[str, np.ndarray]:
    """Run the planner on every data-set state; see the module docstring for the returned arrays.

    ``return_all=True`` also returns ``all_candidates (N, M, act_dim)`` and ``all_values (N, M)`` (for tests).
    """
    from tqdm.auto import tqdm

    if num_candidates < 1:
        raise HabiConfigError(f"num_candidates must be >= 1, got {num_candidates}")
    if not 1 <= stored <= num_candidates:
        raise HabiConfigError(f"stored candidates must be in [1, num_candidates={num_candidates}], got {stored}")
    if batch_states < 1:
        raise HabiConfigError(f"batch_states must be >= 1, got {batch_states}")
    obs = qlearning_dataset(data)["observations"]
    if max_states is not None and len(obs) > max_states:
        obs = obs[np.random.default_rng(seed).choice(len(obs), size=max_states, replace=False)]
    if obs.shape[1] != planner.config.obs_dim:
        raise HabiConfigError(f"observation size {obs.shape[1]} does not match the planner's {planner.config.obs_dim}")
    torch.manual_seed(seed)
    s_all = torch.from_numpy(planner.normalizer(obs))
    outs: dict[str, list[torch.Tensor]] = {k: [] for k in ("cand", "val", "best", "bestv", "allc", "allv")}
    for lo in tqdm(range(0, len(s_all), batch_states), desc="goal-directed behaviour", disable=not progress,
                   mininterval=2.0):
        s = s_all[lo: lo + batch_states]
        a, q = planner.candidates(s, n=num_candidates)  # (b, M, act), (b, M)
        best = q.argmax(dim=1)
        ar = torch.arange(a.shape[0])
        outs["cand"].append(a[:, :stored])
        outs["val"].append(q[:, :stored])
        outs["best"].append(a[ar, best])
        outs["bestv"].append(q[ar, best])
        if return_all:
            outs["allc"].append(a)
            outs["allv"].append(q)
    n, k, act_dim = len(s_all), stored, planner.config.act_dim
    cand = torch.cat(outs["cand"]).reshape(n * k, act_dim)  # (N, k, act) -> (N·k, act)
    res = {
        "states": s_all.repeat_interleave(k, dim=0).numpy(),
        "candidates": cand.numpy(),
        "values": torch.cat(outs["val"]).reshape(n * k).numpy(),  # (N, k) -> (N·k,)
        "best_actions": torch.cat(outs["best"]).repeat_interleave(k, dim=0).numpy(),
        "best_values": torch.cat(outs["bestv"]).repeat_interleave(k, dim=0).numpy(),
    }
    if return_all:
        res["all_candidates"] = torch.cat(outs["allc"]).numpy()
        res["all_values"] = torch.cat(outs["allv"]).numpy()
    return res
