"""Every configuration of habi, in one light module (no torch import, so the CLI checks its flags at once).

Method configs, each with its paper values and the CPU scale we run at: :class:`DataGenConfig` (the offline data
sets), :class:`PlannerConfig` / :class:`PlannerTrainConfig` (the Diffusion-QL teacher), :class:`HabiConfig` (the
habitual model) and :class:`HabitizeConfig` (habitization). The CLI's commands nest them (their fields are the
flags). Then the budgets of ``habi reproduce`` (house shape: one frozen :class:`Config` and ``BUDGETS``);
:class:`habi.baselines.RegressConfig` holds the regression baselines' settings.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from typing import Literal

from icml25.experiment import Budgets

from habi.errors import HabiConfigError


@dataclass(frozen=True)
class DataGenConfig:
    """How the offline data sets are generated."""

    env_id: str = "Pendulum-v1"
    """gymnasium environment (Pendulum-v1; Hopper-v5/HalfCheetah-v5 need the mujoco wheel)."""
    sac_steps: int = 4000
    """SAC environment steps (one gradient step each)."""
    checkpoint_every: int = 500
    """Save and evaluate the SAC policy every this many steps."""
    sac_hidden: int = 64
    """Width of SAC's two hidden layers."""
    n_transitions: int = 20000
    """Steps in the 'medium' data set."""
    medium_target: float = 50.0
    """Normalised score of the checkpoint used for 'medium'."""
    eval_episodes: int = 5
    """Episodes per checkpoint / reference evaluation."""
    seed: int = 0
    require_improvement: bool = True
    """Fail if SAC does not beat the random policy (off only for smoke tests, where references are then
    placeholders: expert = random + 1)."""
    references: Literal["own", "d4rl"] = "own"
    """Normalisation references: 'own' (random actions and our best SAC checkpoint, measured) or 'd4rl' (D4RL's
    published random/expert returns, :data:`habi.data.D4RL_REFERENCES`; MuJoCo tasks only)."""
    stop_at_target: bool = False
    """Stop SAC at the first checkpoint whose normalised score reaches ``medium_target`` and use it for 'medium'
    (D4RL's recipe: train until the policy reaches the medium level; 'medium-replay' is the buffer up to there)."""
    sac_lr: float = 1e-3
    """SAC's Adam learning rate."""
    sac_gamma: float = 0.98
    """SAC's discount."""

    def __post_init__(self) -> None:
        if self.references not in ("own", "d4rl"):
            raise HabiConfigError(f"references must be 'own' or 'd4rl', got {self.references!r}")
        if not self.sac_lr > 0 or not 0 < self.sac_gamma <= 1:
            raise HabiConfigError(f"sac_lr must be > 0 and sac_gamma in (0, 1], got {self.sac_lr}, {self.sac_gamma}")
        for name in ("sac_steps", "checkpoint_every", "sac_hidden", "n_transitions", "eval_episodes"):
            if getattr(self, name) < 1:
                raise HabiConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.checkpoint_every > self.sac_steps:
            raise HabiConfigError(f"checkpoint_every ({self.checkpoint_every}) must be <= sac_steps ({self.sac_steps})")

    def key(self) -> str:
        # fields at their defaults are left out, so adding a field keeps the cache keys of earlier configs
        d = {k: v for k, v in asdict(self).items() if k not in _KEY_DEFAULTS or v != _KEY_DEFAULTS[k]}
        return hashlib.sha1(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]


_ADDED_FIELDS = ("references", "stop_at_target", "sac_lr", "sac_gamma")
"""Fields added after cached data sets existed: left out of :meth:`DataGenConfig.key` at their defaults."""
_KEY_DEFAULTS = {f: DataGenConfig.__dataclass_fields__[f].default for f in _ADDED_FIELDS}


@dataclass(frozen=True)
class PlannerConfig:
    """Architecture and decision rule of the diffusion planner."""

    obs_dim: int
    act_dim: int
    hidden: int = 256
    """Width of the noise MLP (3 hidden layers, Mish) and of the twin critic (official DQLMlp/DQLCritic: 256)."""
    time_dim: int = 64
    """Size of the sinusoidal time embedding of the noise MLP (official Habi pipeline: DQLMlp emb_dim=64)."""
    steps: int = 5
    """DDPM denoising steps T."""
    schedule: Literal["vp", "cosine"] = "vp"
    """Noise schedule: Diffusion-QL's 'vp' (default) or 'cosine' (closer to the official CleanDiffuser default)."""
    num_candidates: int = 50
    """Candidates per decision (best-of-N by Q)."""
    temperature: float = 0.5
    """Scale of the initial noise x_T."""
    temperature_all_steps: bool = False
    """Also scale the noise of every intermediate step (official: only x_T)."""
    decision: Literal["argmax", "softmax"] = "argmax"
    """'argmax' of the online critic's q_min (default) or a draw from softmax(weight_temperature · Q_target)."""
    weight_temperature: float = 100.0
    """Softmax sharpness for decision='softmax' (official per-task values 8-300)."""

    def __post_init__(self) -> None:
        check_planner_config(self)


def check_planner_config(c: PlannerConfig) -> None:
    for name in ("obs_dim", "act_dim", "hidden", "time_dim", "steps", "num_candidates"):
        if getattr(c, name) < 1:
            what = "diffusion steps" if name == "steps" else name
            raise HabiConfigError(f"planner {name} ({what}) must be >= 1, got {getattr(c, name)}")
    if c.temperature <= 0:
        raise HabiConfigError(f"planner temperature must be > 0, got {c.temperature}")
    if c.decision not in ("argmax", "softmax"):
        raise HabiConfigError(f"planner decision must be 'argmax' or 'softmax', got {c.decision!r}")
    if c.schedule not in ("vp", "cosine"):
        raise HabiConfigError(f"planner schedule must be 'vp' or 'cosine', got {c.schedule!r}")


@dataclass(frozen=True)
class PlannerTrainConfig:
    """Diffusion-QL training hyper-parameters (defaults: Diffusion-QL's; `habi reproduce` and the CLI use a
    CPU-scale set: batch 128, lr 1e-3, eta 0.2, tau 0.02, gamma 0.98, about 1k steps)."""

    steps: int = 5000
    """Gradient steps."""
    batch_size: int = 256
    lr: float = 3e-4
    gamma: float = 0.99
    eta: float = 1.0
    """Weight of the Q term in the actor loss (Diffusion-QL η)."""
    tau: float = 0.005
    """Soft-update rate of the target critic and the EMA actor."""
    grad_clip: float = 10.0

    @classmethod
    def paper(cls, **overrides) -> PlannerTrainConfig:
        """The MuJoCo teacher as the Habi pipeline trains it (paper note, "Goal-directed planner (teacher)": DQL,
        η = 1, 2M gradient steps); batch 256, lr 3e-4, γ 0.99, τ 0.005 are Diffusion-QL's defaults (the note gives
        none). The architecture (5 DDPM steps, time embedding 64, widths 256, 50 candidates) is PlannerConfig's
        default."""
        return cls(**({"steps": 2_000_000} | overrides))

    @classmethod
    def cpu(cls, **overrides) -> PlannerTrainConfig:
        """The CPU scale of ``habi train-planner`` and ``habi reproduce``: batch 128, lr 1e-3, eta 0.2, tau 0.02,
        gamma 0.98, 1,200 steps."""
        return cls(**({"steps": 1200, "batch_size": 128, "lr": 1e-3, "eta": 0.2, "tau": 0.02, "gamma": 0.98}
                      | overrides))

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1:
            raise HabiConfigError(f"planner training steps and batch_size must be >= 1, got {self.steps}, {self.batch_size}")
        if self.lr <= 0:
            raise HabiConfigError(f"planner lr must be > 0, got {self.lr}")
        if not 0 < self.gamma <= 1 or not 0 < self.tau <= 1 or self.eta < 0:
            raise HabiConfigError(f"planner gamma and tau must be in (0, 1] and eta >= 0, got {self.gamma}, {self.tau}, "
                             f"{self.eta}")


@dataclass(frozen=True)
class HabiConfig:
    """Architecture of the habitual model."""

    obs_dim: int
    act_dim: int
    latent_dim: int = 32
    """d_z (paper/official: 256; 32 at CPU scale)."""
    hidden: int = 128
    """Width of prior/posterior/decoder MLPs (official 256)."""
    critic_hidden: int = 128
    """Width of the habitual critic (official 256)."""
    conditional_decoder: bool = False
    """Decode D(z, s) instead of D(z) (official option; off by default)."""

    @classmethod
    def paper(cls, obs_dim: int, act_dim: int, **overrides) -> HabiConfig:
        """The paper's / official sizes: d_z = 256, widths 256."""
        return cls(**({"obs_dim": obs_dim, "act_dim": act_dim, "latent_dim": 256, "hidden": 256,
                       "critic_hidden": 256} | overrides))

    @classmethod
    def cpu(cls, obs_dim: int, act_dim: int, **overrides) -> HabiConfig:
        """The CPU scale of ``habi habitize`` (the class defaults): d_z = 32, widths 128."""
        return cls(**({"obs_dim": obs_dim, "act_dim": act_dim} | overrides))

    def __post_init__(self) -> None:
        for name in ("obs_dim", "act_dim", "latent_dim", "hidden", "critic_hidden"):
            if getattr(self, name) < 1:
                raise HabiConfigError(f"habi {name} must be >= 1 (a positive size), got {getattr(self, name)}")


@dataclass(frozen=True)
class HabitizeConfig:
    """Hyper-parameters of habitization (defaults: the official ones except the step count)."""

    steps: int = 5000
    """Gradient steps (official 1M)."""
    batch_size: int = 256
    lr: float = 3e-4
    """Adam learning rate of prior/posterior/decoder and critic (cosine-annealed)."""
    kld_target: float = 1.0
    """KL target of the adaptive weight (official kld_target = 1)."""
    kl_init: float = 1e-6
    """Initial η_KL (official 1e-6)."""
    kl_lr: float = 3e-4
    """Adam learning rate of log η_KL (official 3e-4: moves log η_KL by ~3e-4 per step)."""
    kl_mode: Literal["geometric", "arithmetic"] = "geometric"
    """'geometric' (official: mean of per-sample log10 KL) or 'arithmetic' (log10 of the mean KL)."""
    eta: float = 0.0
    """Weight of the -C(z, D(z)) term (official 0 everywhere)."""

    @classmethod
    def paper(cls, **overrides) -> HabitizeConfig:
        """The official values (paper note, "Step 2" and "Losses per minibatch"): 1M steps at batch 256, Adam lr 3e-4
        with cosine annealing, dual step 3e-4, eta_KL from 1e-6, KL target 1."""
        return cls(**({"steps": 1_000_000} | overrides))

    @classmethod
    def cpu(cls, **overrides) -> HabitizeConfig:
        """The CPU scale of ``habi habitize``: 3,000 steps at batch 128, lr 1e-3, and the faster dual step 2e-2
        (the paper's 3e-4 needs ~20k steps to bring the KL to its target)."""
        return cls(**({"steps": 3000, "batch_size": 128, "lr": 1e-3, "kl_lr": 2e-2} | overrides))

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1:
            raise HabiConfigError(f"habitize steps and batch_size must be >= 1, got {self.steps}, {self.batch_size}")
        if not self.kld_target > 0:
            raise HabiConfigError(f"kld_target must be > 0 (log10 is undefined otherwise), got {self.kld_target}")
        if not self.kl_init > 0 or not self.kl_lr > 0 or not self.lr > 0:
            raise HabiConfigError(f"kl_init, kl_lr and lr must be > 0, got {self.kl_init}, {self.kl_lr}, {self.lr}")
        if self.kl_mode not in ("geometric", "arithmetic"):
            raise HabiConfigError(f"kl_mode must be 'geometric' or 'arithmetic', got {self.kl_mode!r}")


@dataclass(frozen=True)
class Config:
    """Budgets of ``habi reproduce`` (one returns protocol per data set; every model is trained to a plateau of
    its validation return and keeps its best weights)."""

    data: DataGenConfig = DataGenConfig()
    dataset: Literal["medium", "medium-replay"] = "medium"
    """Which generated data set the returns protocol trains on."""
    planner_hidden: int = 256
    """Width of the planner's noise MLP and twin critic (official DQLMlp/DQLCritic: 256)."""
    planner_train: PlannerTrainConfig = PlannerTrainConfig.cpu(steps=8000)
    """How the planner is trained (batch, lr, eta, tau, gamma); ``steps`` is the cap of its plateau loop."""
    planner_eval_every: int = 400
    """Planner steps between two validation evaluations (argmax-of-50 return on ``planner_val_episodes``)."""
    planner_patience: int = 3
    """Evaluations without an improvement of more than ``planner_min_delta`` that stop the planner."""
    planner_min_delta: float = 2.0
    """Normalised-score points an evaluation must gain to count as an improvement (planner)."""
    planner_val_episodes: int = 10
    """Validation episodes of each planner evaluation (the planner is the slow policy to evaluate)."""
    planner_time_dim: int = 64
    """Time-embedding size of the noise MLP (official Habi pipeline: 64)."""
    planner_threads: int = 2
    """Torch threads of the planner's training (the workers meanwhile only train BC's short jobs)."""
    teacher_states: int = 3000
    seeds: int = 5
    episodes: int = 20
    """Test episodes per seed and policy."""
    val_episodes: int = 20
    """Validation episodes (disjoint reset seeds) of every evaluation of Habi, BC and Distill-MSE."""
    lr_grid: tuple[float, ...] = (3e-4, 1e-3, 3e-3)
    """Adam lr grid shared by Habi, BC and Distill-MSE (each trained to its plateau at every lr)."""
    extend: int = 2
    """Times a choice at the grid's edge is extended by one more grid step (icml25.tuning)."""
    max_steps: int = 6000
    """Step cap of Habi, BC and Distill-MSE (cosine lr schedule over it; the plateau rule stops them earlier)."""
    eval_every: int = 250
    """Steps between two validation evaluations of Habi, BC and Distill-MSE."""
    patience: int = 4
    """Evaluations without an improvement of more than ``min_delta`` that stop Habi, BC and Distill-MSE."""
    min_delta: float = 1.0
    """Normalised-score points an evaluation must gain to count as an improvement."""
    kl_seeds: int = 3
    """Seeds (the first ones) that also train the KL ablation (Habi with ``ablation_kl_lr``, same lr)."""
    main_kl_lr: float = 3e-4
    """Adam lr of log eta_KL of the main Habi: the paper's dual step 3e-4 (eta_KL from the paper's 1e-6)."""
    ablation_kl_lr: float = 2e-2
    """Adam lr of log eta_KL of the KL ablation: a dual step fast enough to bring the KL to its target within the
    step budget (Adam moves log eta_KL by about this much per step)."""
    bc_margin: float = 0.1
    """The planner gate: the planner must reach BC's return within this fraction of BC's mean normalised score."""
    softmax_seeds: int = 2
    """Seeds on which the planner's official softmax/target-critic rule is also evaluated (an extra row)."""
    bench_habi: int = 2000
    bench_planner: int = 300
    bench_rounds: int = 5
    workers: int = 2
    """Training processes (1: train in this process)."""
    batch: int = 128
    """Batch size of Habi, BC and Distill-MSE."""
    latent_dim: int = 32
    habi_hidden: int = 128
    regress_hidden: int = 128

    def __post_init__(self) -> None:
        if self.dataset not in ("medium", "medium-replay"):
            raise HabiConfigError(f"dataset must be 'medium' or 'medium-replay', got {self.dataset!r}")
        for name in ("seeds", "episodes", "val_episodes", "planner_val_episodes", "max_steps", "eval_every",
                     "patience", "planner_eval_every", "planner_patience"):
            if getattr(self, name) < 1:
                raise HabiConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not self.lr_grid or min(self.lr_grid) <= 0:
            raise HabiConfigError("lr_grid must be non-empty and positive")
        if not self.main_kl_lr > 0 or not self.ablation_kl_lr > 0:
            raise HabiConfigError("main_kl_lr and ablation_kl_lr must be > 0")
        if not 0 <= self.kl_seeds <= self.seeds or not 0 <= self.softmax_seeds <= self.seeds:
            raise HabiConfigError("kl_seeds and softmax_seeds must be in [0, seeds]")
        if self.min_delta < 0 or self.planner_min_delta < 0 or not 0 <= self.bc_margin < 1:
            raise HabiConfigError("min_delta and planner_min_delta must be >= 0 and bc_margin in [0, 1)")


FULL = Config()
QUICK = replace(FULL, planner_train=replace(FULL.planner_train, steps=1200), planner_eval_every=300,
                planner_patience=2, planner_val_episodes=4, teacher_states=600, lr_grid=(1e-3, 3e-3), extend=0,
                max_steps=1000, eval_every=200, patience=2, seeds=3, episodes=4, val_episodes=4, kl_seeds=1,
                softmax_seeds=1, bench_habi=600, bench_planner=60, bench_rounds=3)
SMOKE = Config(data=DataGenConfig(sac_steps=300, checkpoint_every=150, n_transitions=600, eval_episodes=1,
                                  require_improvement=False),
               planner_hidden=32, planner_train=PlannerTrainConfig.cpu(steps=20), planner_eval_every=10,
               planner_patience=1, planner_val_episodes=1, teacher_states=100, lr_grid=(1e-3, 3e-3), extend=1,
               max_steps=30, eval_every=10, patience=1, seeds=1, episodes=1, val_episodes=1, kl_seeds=1,
               softmax_seeds=1, bench_habi=40, bench_planner=10, bench_rounds=2, workers=1, planner_time_dim=8,
               planner_threads=1)
BUDGETS = Budgets(smoke=SMOKE, quick=QUICK, full=FULL)

REPLAY = replace(FULL, dataset="medium-replay", seeds=3, kl_seeds=0, softmax_seeds=0)
"""``habi reproduce --task replay``: the returns protocol on the medium-replay data set (its own planner trained
to its plateau, its own teacher labels, Habi/BC/Distill-MSE tuned alike on its validation episodes); 3 seeds, so
that the main run and this sub-run together fit 15 minutes alone."""
REPLAY_BUDGETS = Budgets(smoke=replace(SMOKE, dataset="medium-replay", kl_seeds=0),
                         quick=replace(QUICK, dataset="medium-replay", kl_seeds=0, softmax_seeds=0), full=REPLAY)

HOPPER_DATA = DataGenConfig(env_id="Hopper-v5", sac_steps=150_000, checkpoint_every=5000, sac_hidden=128,
                            n_transitions=50_000, medium_target=40.0, eval_episodes=5, references="d4rl",
                            stop_at_target=True, sac_gamma=0.99)
"""Hopper-v5 "medium": SAC (128x128, lr 1e-3, gamma 0.99) trained until a checkpoint reaches D4RL-normalised 40
(D4RL's hopper-medium policy: about 44), at most 150k steps; 50k transitions of that stochastic policy."""
HOPPER = replace(FULL, data=HOPPER_DATA)
"""``habi reproduce --task hopper``: the main protocol (5 seeds x 20 episodes, the same tuning grid) on Hopper-v5
medium data, scored with D4RL's Hopper references (not run in the committed results: it does not fit the time
budget with planners trained to their plateau)."""
HOPPER_BUDGETS = Budgets(
    smoke=replace(SMOKE, data=replace(SMOKE.data, env_id="Hopper-v5", n_transitions=400)),
    quick=replace(QUICK, data=replace(HOPPER_DATA, sac_steps=20_000, medium_target=15.0)),
    full=HOPPER)
