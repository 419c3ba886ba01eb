"""Presets of ``kea train`` (:func:`paper`, :func:`cpu`: the flags they change, each a field of
``kea.cli.TrainConfig`` with its documentation there) and the budgets of ``kea reproduce`` (frozen dataclasses;
:class:`icml25.experiment.Budgets`).

``BUDGETS`` is the main run (``kea reproduce [--quick|--smoke]``: DeepSea N = 10 with the released update schedule,
4 parallel environments and prioritised replay, plus the cost per size); ``LARGE`` is
``kea reproduce --task deepsea-large`` (N = 14 and 20, which do not fit the main run's time); ``ABLATION`` is
``kea reproduce --task ablation`` (KEA-RND vs RND-SAC on 10 more seeds, and KEA-RND's switch/gate options).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from icml25.experiment import Budgets


def paper() -> dict[str, Any]:
    """The released KEA-RND-SAC setting on DeepSea N = 10 (paper note, "Architecture and defaults" table [official
    code]): budget 100k × N = 1M environment steps, 2000 warm-up steps, an update every 16 steps with 8 gradient
    steps, batch 64, hidden 64, σ = 1, β_i = 0.3, β_e = N, α = 0.1 fixed (learning rates 3e-4, γ 0.99 and prioritised
    replay with α_PER 0.6 are the agent's defaults).

    Not expressible by ``kea train``: the 4 parallel environments (it steps one), the 100k replay buffer (it keeps
    every step) and the released gate that never trains the standard module (``--standard-update never``; the
    paper's rule, after the first success, is the default)."""
    return {"size": 10, "steps": 1_000_000, "learning_starts": 2000, "train_freq": 16, "gradient_steps": 8}


def cpu() -> dict[str, Any]:
    """The CPU scale ``kea train`` uses by default: DeepSea N = 8, 4000 steps, 100 warm-up steps, one gradient step
    every 4 steps (paper note, "Reproduction at CPU scale"): no overrides, the flags' own defaults."""
    return {}


@dataclass(frozen=True)
class Config:
    """One budget of ``reproduce``. Episode counts include the random warm-up; all agents get the same budget."""

    seeds: int | tuple[int, ...] = 5
    """Test seeds (agent, warm-up actions and environment seeds; every agent of a seed shares them); a tuple gives
    explicit offsets from ``--seed`` (the ablation task uses seeds 5–14, disjoint from the main run's 0–4)."""
    val_seeds: int = 1
    """Validation seeds per tuning point (agent seeds 10000, 10001, …; never test seeds)."""
    lr_grid: tuple[float, ...] = (1e-3, 3e-3, 1e-2)
    """Learning-rate grid (actor and critic) every agent is tuned on: same grid, same budget."""
    extend: int = 1
    """Grid extensions allowed when a choice sits at an edge (icml25.tuning: the grid's ratio once more
    beyond it, 3.3e-4 below or 3.3e-2 above)."""
    val_size: int = 6
    """DeepSea N of the validation instance (a different action mapping from the test instance)."""
    val_episodes: int = 300
    """Episode budget of a validation run."""
    val_warmup_episodes: int = 50
    """Random warm-up episodes of a validation run (shorter than the test runs' so that tuning sees learning)."""
    val_eval_every: int = 10
    """Greedy evaluation every this many episodes in a validation run (finer than the test runs' so that grid
    points are rarely tied)."""
    sizes: tuple[int, ...] = (10,)
    """DeepSea N of the test runs."""
    episodes: int = 560
    """Episode budget of a test run (runs stop once a greedy module is optimal)."""
    warmup_episodes: int = 200
    """Random warm-up episodes (released: 200·N transitions = 200 episodes)."""
    eval_every: int = 20
    """Greedy evaluation of both modules every this many episodes."""
    coverage_episode: int = 260
    """Episode at which the distinct-state counts are compared (before most runs solve): the states the agents' own
    actions reached after the shared random warm-up (which alone visits nearly every cell of N = 10)."""
    num_envs: int = 4
    """Parallel environments (released: 4)."""
    train_freq: int = 16
    """Transitions between updates (released: 16)."""
    gradient_steps: int = 8
    """Gradient steps per update (released: 8)."""
    hidden: int = 64
    """Width of the two hidden layers (released: 64)."""
    batch_size: int = 64
    """Minibatch size (released: 64)."""
    cost_sizes: tuple[int, ...] = (10, 14, 20)
    """DeepSea N of the throughput runs (RND-SAC vs KEA-RND with both modules training)."""
    cost_grid: int = 10
    """Side of the GridNav room of the throughput runs (the second environment)."""
    cost_warmup: int = 128
    """Warm-up transitions of a throughput run."""
    cost_steps: int = 384
    """Transitions of a throughput run (including the warm-up)."""
    workers: int = 2
    """Worker processes (one torch thread each)."""
    ablation_lr: float = 3e-3
    """Learning rate of every agent of the ablation task (not tuned there: the earlier main runs chose 3e-3 for
    every novelty agent)."""
    option_seeds: int = 5
    """Ablation task: the option rows (released gate, σ) run on the first this many of its seeds."""


BUDGETS = Budgets(
    smoke=Config(seeds=1, lr_grid=(1e-3,), extend=0, val_size=3, val_episodes=16, val_warmup_episodes=8, sizes=(3,),
                 episodes=24, warmup_episodes=8,
                 eval_every=8, coverage_episode=16, num_envs=2, train_freq=8, gradient_steps=1, hidden=16,
                 batch_size=16, cost_sizes=(3,), cost_grid=3, cost_warmup=16, cost_steps=48, workers=1),
    quick=Config(seeds=3, extend=0, val_size=4, val_episodes=80, val_warmup_episodes=16, sizes=(5,), episodes=160,
                 warmup_episodes=40,
                 eval_every=8, coverage_episode=80, cost_sizes=(5, 8), cost_grid=5, cost_warmup=64, cost_steps=192),
    full=Config(),
)

LARGE = Budgets(
    smoke=Config(seeds=1, lr_grid=(1e-3,), extend=0, val_size=3, val_episodes=16, val_warmup_episodes=8, sizes=(4,),
                 episodes=24, warmup_episodes=8,
                 eval_every=8, coverage_episode=16, num_envs=2, train_freq=8, gradient_steps=1, hidden=16,
                 batch_size=16, cost_sizes=(), workers=1),
    quick=Config(seeds=3, extend=0, sizes=(8,), episodes=300, warmup_episodes=100, coverage_episode=200, cost_sizes=()),
    full=Config(sizes=(14, 20), episodes=1200, coverage_episode=300, cost_sizes=()),
)


@dataclass(frozen=True)
class ContinuousConfig:
    """``kea reproduce --task continuous``: SparseMountainCar (reward 1 only at the flag), continuous SAC modules."""

    seeds: int = 5
    """Test seeds."""
    val_seeds: int = 1
    """Validation seeds per tuning point (agent and env seeds 10000, …; never test seeds)."""
    lr_grid: tuple[float, ...] = (1e-3, 3e-3, 1e-2)
    """Learning-rate grid every agent is tuned on."""
    extend: int = 1
    """Grid extensions allowed at an edge."""
    episode_steps: int = 300
    """Episode length (truncation) of SparseMountainCar."""
    steps: int = 30_000
    """Transitions per run (all 4 envs together)."""
    val_steps: int = 15_000
    """Transitions per validation run."""
    warmup: int = 2000
    """Random warm-up transitions."""
    eval_every: int = 8
    """Greedy evaluation (2 episodes per module) every this many episodes."""
    num_envs: int = 4
    """Parallel environments."""
    train_freq: int = 16
    """Transitions between updates."""
    gradient_steps: int = 8
    """Gradient steps per update."""
    hidden: int = 64
    """Hidden width."""
    batch_size: int = 64
    """Minibatch size."""
    workers: int = 2
    """Worker processes."""


CONTINUOUS = Budgets(
    smoke=ContinuousConfig(seeds=1, lr_grid=(1e-3,), extend=0, episode_steps=20, steps=160, val_steps=80, warmup=64,
                           eval_every=4, num_envs=2, train_freq=8, gradient_steps=1, hidden=16, batch_size=16,
                           workers=1),
    quick=ContinuousConfig(seeds=3, extend=0, steps=4000, val_steps=2000, warmup=1000),
    full=ContinuousConfig(),
)


ABLATION = Budgets(
    smoke=Config(seeds=(5,), lr_grid=(1e-3,), extend=0, sizes=(3,), episodes=24, warmup_episodes=8, eval_every=8,
                 num_envs=2, train_freq=8, gradient_steps=1, hidden=16, batch_size=16, cost_sizes=(), workers=1,
                 ablation_lr=1e-3, option_seeds=1),
    quick=Config(seeds=(5, 6, 7), extend=0, sizes=(5,), episodes=160, warmup_episodes=40, eval_every=8,
                 cost_sizes=(), option_seeds=2),
    full=Config(seeds=tuple(range(5, 15)), sizes=(10,), cost_sizes=()),
)
"""``kea reproduce --task ablation``: KEA-RND vs RND-SAC on 10 more seeds (5–14) of the main run's DeepSea N = 10
instance, plus KEA-RND option rows (the released dead gate ``standard_update="never"``, σ = 0.5) on seeds 5–9."""
