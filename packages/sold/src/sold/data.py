"""Episodes generated locally from :class:`sold.envs.ColorReach2D` (never downloaded) and the ARI metric.

Episode arrays follow the replay convention of SOLD: index ``t`` holds frame ``x_t``, the action that *led to* it
(``a_0 = 0``) and the reward received on arriving there (``r_0 = NaN``, masked in the reward loss).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sold.envs import ColorReach2D


@dataclass
class Episodes:
    """``frames [E, T, H, W, 3]`` uint8, ``actions [E, T, A]``, ``rewards [E, T]`` (``[:, 0]`` NaN),
    ``segs [E, T, H, W]`` true labels, ``states [E, T, S]`` true object states, ``targets [E]``."""

    frames: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    segs: np.ndarray
    states: np.ndarray
    targets: np.ndarray

    def __len__(self) -> int:
        return len(self.frames)


def collect_episodes(env: ColorReach2D, n: int, *, seed: int, policy=None) -> Episodes:
    """``n`` episodes of ``env.max_steps`` steps with uniform random actions (or ``policy(obs, env) -> action``);
    episode ``i`` is reset with seed ``seed + i``."""
    rng = np.random.default_rng(seed)
    frames, actions, rewards, segs, states, targets = [], [], [], [], [], []
    for i in range(n):
        obs, info = env.reset(seed=seed + i)
        f, a, r, s, st = [obs], [np.zeros(2, np.float32)], [np.nan], [info["masks"]], [info["state"]]
        done = False
        while not done:
            act = rng.uniform(-1, 1, 2).astype(np.float32) if policy is None else policy(obs, env)
            obs, rew, term, trunc, info = env.step(act)
            f.append(obs)
            a.append(np.asarray(act, np.float32))
            r.append(rew)
            s.append(info["masks"])
            st.append(info["state"])
            done = term or trunc
        frames.append(np.stack(f))
        actions.append(np.stack(a))
        rewards.append(np.array(r, np.float32))
        segs.append(np.stack(s))
        states.append(np.stack(st))
        targets.append(info["target"])
    return Episodes(np.stack(frames), np.stack(actions), np.stack(rewards), np.stack(segs), np.stack(states),
                    np.array(targets))


def adjusted_rand_index(true: np.ndarray, pred: np.ndarray) -> float:
    """ARI (Hubert & Arabie 1985) of two labelings of the same items; 1 = identical partitions, ≈ 0 = chance.

    ``ARI = (Σ_ij C(n_ij, 2) − E) / (½(Σ_i C(a_i, 2) + Σ_j C(b_j, 2)) − E)`` with ``E = Σ_i C(a_i,2) Σ_j C(b_j,2) / C(n,2)``.
    Both partitions with a single cluster give 1.
    """
    true, pred = np.asarray(true).reshape(-1), np.asarray(pred).reshape(-1)
    n = true.size
    if n < 2:
        return 1.0
    _, ti = np.unique(true, return_inverse=True)
    _, pi = np.unique(pred, return_inverse=True)
    cont = np.zeros((ti.max() + 1, pi.max() + 1))
    np.add.at(cont, (ti, pi), 1)

    def c2(x):
        return x * (x - 1) / 2.0

    sum_ij, a, b = c2(cont).sum(), c2(cont.sum(1)).sum(), c2(cont.sum(0)).sum()
    expected = a * b / c2(n)
    denom = 0.5 * (a + b) - expected
    if denom == 0:
        return 1.0
    return float((sum_ij - expected) / denom)


def foreground_ari(segs: np.ndarray, masks: np.ndarray) -> float:
    """Mean FG-ARI over frames: ``segs [M, H, W]`` (0 = background), ``masks [M, K, H, W]`` predicted soft masks;
    each pixel goes to its argmax slot and only pixels of true objects (label > 0) count."""
    segs, pred = np.asarray(segs), np.asarray(masks).argmax(1)
    scores = []
    for s, p in zip(segs, pred):
        fg = s > 0
        if fg.sum() >= 2:
            scores.append(adjusted_rand_index(s[fg], p[fg]))
    return float(np.mean(scores)) if scores else float("nan")
