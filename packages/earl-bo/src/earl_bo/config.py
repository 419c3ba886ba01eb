"""Configuration of earl-bo: the agent's settings, the reproduce budgets and presets.

The CLI is generated from these dataclasses (tyro); the field docstrings are the help text. The paper publishes no
default hyper-parameters: :func:`paper` holds this package's reading of Algorithm 1 (H = 3, E = 64, E_off = 16,
U = 8), :func:`cpu` the smaller agent the CPU-scale reproduction runs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from icml25.errors import check_non_negative, check_positive
from icml25.experiment import Budgets

from earl_bo.errors import EarlBoError


@dataclass(frozen=True)
class AgentConfig:
    """EARL-BO's agent and its training at every real BO iteration (Algorithm 1)."""

    horizon: int = 3
    """H: imagined steps per episode (the lookahead)."""
    episodes: int = 64
    """E: imagined episodes per real BO iteration."""
    off_policy_episodes: int = 16
    """E_off: the first episodes follow TuRBO-1 and are learned by advantage-weighted cloning (0 = no TuRBO stage)."""
    update_every: int = 8
    """U: episodes per update (simulated together as one batch)."""
    width: int = 64
    """Encoder width (phi, attention, rho)."""
    heads: int = 4
    """Attention heads (must divide width)."""
    blocks: int = 1
    """Self-attention blocks of the encoder."""
    lr: float = 3e-4
    """Adam learning rate."""
    clip: float = 0.2
    """PPO clip epsilon."""
    epochs: int = 4
    """Gradient epochs per update."""
    gae_lambda: float = 0.95
    """GAE lambda (gamma = 1: finite horizon)."""
    min_std: float = 0.05
    """Minimum standard deviation of the Gaussian policy (pre-squash)."""
    pretrain_tasks: int = 4
    """GP-prior tasks of multi-task pre-training before the first real iteration (0 = none)."""
    warm_start: bool = True
    """Keep the agent from one real iteration to the next (fine-tuning) instead of a fresh agent each time."""
    action: str = "box"
    """Policy mean: box (a point of the box, the paper's wording) or incumbent (a step from the best point so far)."""

    def check(self, prefix: str = "--agent.") -> None:
        """Refuse bad settings, naming the flag (called by the commands; ``EARLBO`` checks its arguments too)."""
        check_positive(self, "horizon", "episodes", "update_every", "width", "heads", "blocks", "epochs", prefix=prefix)
        check_non_negative(self, "off_policy_episodes", "pretrain_tasks", prefix=prefix)
        for name in ("lr", "clip", "min_std"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise EarlBoError(f"{prefix}{name.replace('_', '-')} must be a finite number > 0, got {v!r}")
        if not (math.isfinite(self.gae_lambda) and 0 <= self.gae_lambda <= 1):
            raise EarlBoError(f"{prefix}gae-lambda must be in [0, 1], got {self.gae_lambda!r}")
        if self.off_policy_episodes > self.episodes:
            raise EarlBoError(f"{prefix}off-policy-episodes (E_off={self.off_policy_episodes}) must be <= {prefix}episodes "
                              f"(E={self.episodes})")
        from earl_bo.ppo import ACTIONS

        if self.action not in ACTIONS:
            raise EarlBoError(f"{prefix}action must be one of {', '.join(ACTIONS)}, got {self.action!r}")
        if self.width % self.heads:
            raise EarlBoError(f"{prefix}width ({self.width}) must be divisible by {prefix}heads ({self.heads})")

    def kwargs(self) -> dict:
        """Keyword arguments of :class:`earl_bo.EARLBO`."""
        return asdict(self)


def paper() -> AgentConfig:
    """This package's reading of the paper (no defaults are published): H = 3, E = 64, E_off = 16, U = 8."""
    return AgentConfig()


def cpu() -> AgentConfig:
    """The CPU-scale agent of ``reproduce``: E = 24 episodes (E_off = 8), learning rate 1e-3 (fewer gradient steps
    per real iteration than the paper's reading, so larger ones), the policy's mean a step from the incumbent
    (``action="incumbent"``); ``reproduce`` pre-trains it until its validation regret plateaus
    (:class:`PretrainConfig`), the CLI for ``pretrain_tasks = 8`` rounds."""
    return replace(paper(), episodes=24, off_policy_episodes=8, pretrain_tasks=8, lr=1e-3, action="incumbent")


@dataclass(frozen=True)
class PretrainConfig:
    """Multi-task pre-training of ``reproduce`` (:func:`earl_bo.pretrain.pretrain_until_plateau`): one GP-sampled
    task per round, validation every ``eval_every`` rounds on held-out GP-sampled functions, stopped after
    ``patience`` evaluations without improvement or after ``rounds``."""

    rounds: int = 150
    """Most training rounds (one task each: E imagined episodes, E / U updates)."""
    eval_every: int = 10
    """Rounds between two validation evaluations."""
    patience: int = 3
    """Evaluations without improvement that stop the pre-training (the best weights are kept)."""
    min_delta: float = 0.0
    """Smallest decrease of the validation regret that counts as an improvement."""
    val_tasks: int = 8
    """Held-out GP-sampled validation functions (the same for every seed)."""
    val_queries: int = 20
    """Queries of the mean policy on each validation function (the validation regret is measured after them)."""
    val_seed: int = 123_457
    """Seed of the validation functions (never a training task)."""

    def __post_init__(self) -> None:
        check_positive(self, "rounds", "eval_every", "patience", "val_tasks", "val_queries")
        check_non_negative(self, "min_delta")


GRIDS: dict[str, dict[str, tuple]] = {
    "earl-bo": {"lr": (3e-4, 1e-3, 3e-3)},
    "logei": {"num_restarts": (2, 4, 8)},
    "turbo": {"length_init": (0.4, 0.8, 1.6)},
    "msl": {"num_restarts": (1, 2, 4)},
    "centre": {"sigma": (0.05, 0.1, 0.2)},
}
"""Validation grids of ``reproduce``: three points for every method with a free hyper-parameter (EARL-BO's Adam
learning rate, LogEI's and the 2-step lookahead's optimiser restarts, TuRBO-1's initial trust-region side, the
centre baseline's step size); Sobol search has none. The EARL-BO ablations (H = 1, no TuRBO stage) take EARL-BO's
choice."""


@dataclass(frozen=True)
class Config:
    """Budget of one ``reproduce`` run."""

    seeds: int = 5
    """Seeds (each seed: its own initial design, agent and imagined episodes; the same for every method)."""
    benchmarks: tuple[str, ...] = ("ackley-10", "levy-10", "hartmann-6", "branin-2")
    """Functions of the main comparison (name-dimension); Ackley, Levy and Rosenbrock on shifted boxes, Hartmann and
    Branin on their standard boxes (their optima are not at the centre)."""
    methods: tuple[str, ...] = ("earl-bo", "sobol", "centre", "logei", "turbo")
    """Methods of the main comparison (EARL-BO first)."""
    ablation: tuple[str, ...] = ()
    """Functions of the ablations (H = 1, no TuRBO stage) and of the 2-step lookahead baseline (d <= 5)."""
    lookahead: tuple[str, ...] = ()
    """Further functions on which the 2-step lookahead baseline runs (without the ablations; d <= 5 only)."""
    unshifted: tuple[str, ...] = ()
    """Functions also run on their standard (unshifted) box, where Ackley's optimum is the box centre."""
    unshifted_methods: tuple[str, ...] = ("earl-bo", "sobol", "centre")
    """Methods of the unshifted runs (EARL-BO first)."""
    init_per_dim: float = 1.0
    """Initial Sobol points per dimension (at least 4)."""
    budget: int = 50
    """BO queries after the initial design (the same for every method, on validation and test functions)."""
    shift: float = 0.4
    """Random offset of each function's box per seed (fraction of its side, at most 0.4; the same for every method)."""
    tune: bool = True
    """Choose every method's free hyper-parameter on validation functions (:data:`GRIDS`); False: the grid's middle."""
    val_functions: tuple[str, ...] = ("levy-10",)
    """Validation functions of the tuning (differently shifted boxes and initial designs than the test seeds)."""
    val_instances: int = 1
    """Validation instances per validation function (shift and design seeds ``val_seed + i``)."""
    val_seed: int = 10_000
    """First seed of the validation instances (far from the test seeds)."""
    timing_dims: tuple[int, ...] = (2, 5, 10)
    """Dimensions of the time-per-iteration measurement."""
    timing_iters: int = 4
    """Timed iterations per method and dimension, each on its own data set (empty timing_dims: only the
    conditioning speed-up)."""
    ei_gps: int = 12
    """Fixed GPs of the H = 1 vs EI-maximum check (GP i is fitted to Ackley-5 data of seed ``seed + i``)."""
    ei_episodes: int = 96
    """E of the H = 1 agent trained on each fixed GP (one-step episodes are cheap)."""
    agent: AgentConfig = cpu()
    """The agent (EARL-BO's settings; ``lr`` is replaced by the validation choice when ``tune``)."""
    pretrain: PretrainConfig = PretrainConfig()
    """Multi-task pre-training of the agent (one agent per dimension and seed, before any real query)."""
    workers: int = 2
    """Worker processes of the benchmark jobs (one torch thread each)."""

    def __post_init__(self) -> None:
        check_positive(self, "seeds", "budget", "timing_iters", "workers", "ei_gps", "ei_episodes", "val_instances")
        self.agent.check()
        if not 0 <= self.shift <= 0.4:
            raise EarlBoError(f"shift must be in [0, 0.4], got {self.shift}")
        for name in ("methods", "unshifted_methods"):
            ms = getattr(self, name)
            if ms and ms[0] != "earl-bo":
                raise EarlBoError(f"{name} must start with 'earl-bo' (the method every claim compares), got {ms}")


BUDGETS = Budgets(
    smoke=Config(seeds=1, benchmarks=("branin-2",), ablation=(), lookahead=(), unshifted=(), budget=2,
                 timing_dims=(), timing_iters=1, shift=0.0, tune=False, ei_gps=1, ei_episodes=8, workers=1,
                 agent=replace(cpu(), episodes=4, off_policy_episodes=2, update_every=2, horizon=2, pretrain_tasks=1),
                 pretrain=PretrainConfig(rounds=2, eval_every=1, val_tasks=2, val_queries=3)),
    quick=Config(seeds=3, benchmarks=("ackley-5",), ablation=(), lookahead=(), budget=10,
                 val_functions=("ackley-5",), timing_dims=(), timing_iters=1, ei_gps=3, ei_episodes=24,
                 agent=replace(cpu(), episodes=16, off_policy_episodes=8),
                 pretrain=PretrainConfig(rounds=30, eval_every=5, patience=2, val_tasks=4, val_queries=10)),
    full=Config(),
)
"""The main run (``earl-bo reproduce``): multi-task pre-training of one agent per dimension and seed until its
validation regret plateaus, tuning on validation functions, 50 queries on Ackley-10 and Levy-10 (shifted), Hartmann-6
and Branin-2 (no 2-step lookahead: at d = 10 it does not fit the budget; it runs in the tuning task), the H = 1 check,
timing. ``--quick`` checks that everything runs
(Ackley-5 only, 10 queries, a short pre-training, no lookahead, no timing)."""

HPO_BUDGETS = Budgets(
    smoke=replace(BUDGETS.smoke, benchmarks=("hpo-digits-5",), ablation=(), lookahead=(), budget=1, init_per_dim=1.0),
    quick=replace(BUDGETS.quick, benchmarks=("hpo-digits-5",), methods=("earl-bo", "sobol", "logei", "turbo"),
                  ablation=(), lookahead=(), unshifted=(), budget=4, seeds=3, tune=False),
    full=Config(benchmarks=("hpo-digits-5",), methods=("earl-bo", "sobol", "centre", "logei", "turbo"), ablation=(),
                lookahead=("hpo-digits-5",), unshifted=(), budget=8, shift=0.2, tune=True,
                val_functions=("hpo-wine-5",), val_instances=2),
)
"""``earl-bo reproduce --task hpo-digits``: tuning 5 hyper-parameters of HistGradientBoostingClassifier on sklearn's
bundled digits (3-fold CV accuracy, about 1 s per evaluation on one thread), EARL-BO against Sobol, the box-centre
baseline, LogEI, TuRBO-1 and the 2-step lookahead; too slow to share the main run's 8-minute budget. The full preset tunes every method's knob
alike (:data:`GRIDS`, edge extension) on the same task over sklearn's bundled wine data (two initial designs), never
on digits; the quick preset keeps each grid's middle."""
TASKS = ("main", "hpo-digits")
"""``reproduce --task``: the main run, or the HPO task alone."""
