"""Shared pieces of the reproduce runs: the paper references and fixed gates, each seed's episodes (made once per worker
process), the environment and autoencoder builders, and the table number format."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from icml25.claims import mean_sd

from sold.config import Config

PAPER_WM = ("SOLD paper (ICML 2025), Sec. 4 / project page: object-centric slot dynamics give accurate open-loop "
            "predictions that keep objects separate (shown qualitatively; no table values in our notes)")
PAPER_ATTN = ("SOLD paper (ICML 2025), abstract: slot-level attention makes the reward-relevant objects "
              "interpretable (qualitative attention maps; no numbers)")
PAPER_RL = ("SOLD paper (ICML 2025), abstract: SOLD outperforms DreamerV3 and TD-MPC2 on relational manipulation "
            "tasks (success-rate curves; no table values in our notes)")
ARI_GATE = 0.5
"""Foreground-ARI gate for stage B, fixed before any run."""
ARI_GATE_NAME = f"Stage-A gate: SAVi decomposes the scenes (foreground ARI ≥ {ARI_GATE}) after pre-training"
SPLIT_OFFSETS = {"train": 0, "val": 50_000, "test": 80_000, "pretrain": 20_000}


_DATA: dict[tuple, dict[str, Any]] = {}


def _env(cfg: Config):
    from sold.envs import ColorReach2D

    ec = cfg.env
    return ColorReach2D(num_objects=ec.num_objects, task=ec.task, reward=ec.reward, size=ec.size,
                        max_steps=ec.max_steps)


def _data(cfg: Config, seed: int) -> dict[str, Any]:
    """The seed's episodes (train / val / test, disjoint reset seeds), made once per worker process."""
    from sold.data import collect_episodes
    from sold.savi import frames_to_video

    key = (repr(cfg.env), cfg.train_episodes, cfg.val_episodes, cfg.test_episodes, seed)
    if key not in _DATA:
        if len(_DATA) >= 6:  # a worker sees jobs of every seed; keep a few seeds' episodes (≈ 30 MB each)
            _DATA.pop(next(iter(_DATA)))
        env = _env(cfg)
        base = seed * 1_000_003
        t0 = time.perf_counter()
        split = {k: collect_episodes(env, n, seed=base + SPLIT_OFFSETS[k]) for k, n in
                 (("train", cfg.train_episodes), ("val", cfg.val_episodes), ("test", cfg.test_episodes))}
        env_steps = sum(len(e) * cfg.env.max_steps for e in split.values())
        env_sps = env_steps / (time.perf_counter() - t0)
        _DATA[key] = {"split": split, "vid": {k: frames_to_video(e.frames) for k, e in split.items()},
                      "env_steps_per_s": env_sps}
    return _DATA[key]


def _build_ae(cfg: Config, kind: str, state: dict[str, np.ndarray] | None = None):
    import torch

    from sold.agent import build_holistic_ae, build_savi

    ae = (build_savi(cfg.ae, image_size=cfg.env.size, action_dim=2) if kind == "slots"
          else build_holistic_ae(cfg.ae, image_size=cfg.env.size))
    if state is not None:
        ae.load_state_dict({k: torch.as_tensor(v) for k, v in state.items()})
        ae.eval()
    return ae



def _fmt(vals) -> str:
    m, sd = mean_sd([float(v) for v in vals])
    return f"{m:.4g} ± {sd:.2g}" if len(vals) > 1 else f"{m:.4g}"
