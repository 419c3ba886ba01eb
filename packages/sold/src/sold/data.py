"""Episodes generated locally from a gymnasium env (:class:`sold.envs.ColorReach2D` or any env with image
observations; never downloaded) and the ARI metric.

Episode arrays follow the replay convention of SOLD: index ``t`` holds frame ``x_t``, the action that *led to* it
(``a_0 = 0``) and the reward received on arriving there (``r_0 = NaN``, masked in the reward loss).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sold.errors import SoldError


@dataclass
class Episodes:
    """``frames [E, T, H, W, 3]`` uint8, ``actions [E, T, A]``, ``rewards [E, T]`` (``[:, 0]`` NaN); where the env
    provides them in ``info``: ``segs [E, T, H, W]`` true labels (``info["masks"]``; FG-ARI needs them),
    ``states [E, T, S]`` true object states (``info["state"]``) and ``targets [E]`` (``info["target"]``); ``None``
    otherwise."""

    frames: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    segs: np.ndarray | None = None
    states: np.ndarray | None = None
    targets: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.frames)


def episode_length(env) -> int:
    """Steps per collected episode: the env's ``max_steps`` (ColorReach2D) or its registered ``max_episode_steps``."""
    n = getattr(env.unwrapped, "max_steps", None) or getattr(getattr(env, "spec", None), "max_episode_steps", None)
    if not n:
        raise SoldError(f"cannot tell the episode length of {env}: give `length`, or register the env with "
                        "max_episode_steps")
    return int(n)


def collect_episodes(env, n: int, *, seed: int, policy=None, length: int | None = None) -> Episodes:
    """``n`` episodes of ``length`` steps (default :func:`episode_length`) of any gymnasium env with ``[H, W, 3]``
    uint8 image observations, with random actions from ``env.action_space`` (seeded with ``seed``) or
    ``policy(obs, env) -> action``; episode attempt ``i`` is reset with seed ``seed + i``. An episode that terminates
    before ``length`` steps is skipped (up to ``10 n`` attempts). ``info["masks"]``, ``info["state"]`` and
    ``info["target"]`` are kept where every step provides them."""
    length = episode_length(env) if length is None else int(length)
    if length < 1:
        raise SoldError(f"length must be >= 1, got {length}")
    env.action_space.seed(seed)
    frames, actions, rewards, segs, states, targets = [], [], [], [], [], []
    adim = int(np.prod(env.action_space.shape))
    attempt = 0
    while len(frames) < n:
        if attempt >= 10 * max(n, 1):
            raise SoldError(f"only {len(frames)} of {n} episodes reached {length} steps in {attempt} attempts: the env "
                            "terminates earlier; use a shorter length")
        obs, info = env.reset(seed=seed + attempt)
        attempt += 1
        f, a, r = [obs], [np.zeros(adim, np.float32)], [np.nan]
        s, st = [info.get("masks")], [info.get("state")]
        ok = True
        for t in range(length):
            act = env.action_space.sample() if policy is None else policy(obs, env)
            obs, rew, term, trunc, info = env.step(act)
            f.append(obs)
            a.append(np.asarray(act, np.float32).reshape(adim))
            r.append(rew)
            s.append(info.get("masks"))
            st.append(info.get("state"))
            if (term or trunc) and t < length - 1:
                ok = False
                break
        if not ok:
            continue
        frames.append(np.stack(f))
        actions.append(np.stack(a))
        rewards.append(np.array(r, np.float32))
        segs.append(None if any(x is None for x in s) else np.stack(s))
        states.append(None if any(x is None for x in st) else np.stack(st))
        targets.append(info.get("target"))
    return Episodes(np.stack(frames), np.stack(actions), np.stack(rewards),
                    None if any(x is None for x in segs) else np.stack(segs),
                    None if any(x is None for x in states) else np.stack(states),
                    None if any(x is None for x in targets) else np.array(targets))


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
