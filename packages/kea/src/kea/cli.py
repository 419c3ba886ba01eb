"""Command line of kea: ``kea train``, ``kea evaluate``, ``kea reproduce [--quick|--smoke]``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from icml25.cli_helpers import (
    BaseOptions,
    CommonOptions,
    ReproduceOptions,
    method_main,
    open_run_dir,
    reproduce_command,
)

from kea import config as _config
from kea.registry import METHOD


@dataclass(frozen=True)
class TrainConfig(CommonOptions):
    """Train one agent (KEA or a baseline) on one task and save it to the run directory."""

    PRESETS = {"cpu": _config.cpu, "paper": _config.paper}  # kea.config: the values of this command's own fields

    task: Literal["deepsea", "gridnav", "mountaincar", "sparse-mountaincar", "sparse-reacher"] = "deepsea"
    """Environment: bsuite-exact DeepSea, the 2-D grid navigation task, MountainCarContinuous-v0, its sparse variant
    (reward 1 only at the flag) or sparse MuJoCo Reacher (extra kea[mujoco])."""
    env: str | None = None
    """A registered gymnasium environment id instead of --task (e.g. CartPole-v1, Pendulum-v1, or your own:
    'your.module:YourEnv-v0' imports your module, which registers it). Discrete or Box actions; a 1-D Box or
    Discrete observation. The standard module's gate opens at the first episode with info['is_success'] (or a
    positive return)."""
    size: int = 8
    """DeepSea N, grid side length or SparseMountainCar episode length (ignored for mountaincar, sparse-reacher)."""
    variant: Literal["KEA-RND", "KEA-NovelD", "RND-SAC", "NovelD-SAC", "SAC"] = "KEA-RND"
    """Agent: KEA with RND/NovelD, or the baselines (novelty-augmented SAC without the switch, plain SAC)."""
    steps: int = 4000
    """Environment steps."""
    switch_threshold: float = 1.0
    """σ: the standard module acts where the normalised novelty of the current state exceeds it."""
    standard_update: Literal["first_success", "never", "always"] = "first_success"
    """When the standard module starts learning: after the first rewarded episode (paper), never (released code)."""
    beta_i: float = 0.3
    """Intrinsic reward weight β_i."""
    beta_e: float | None = None
    """Extrinsic reward weight β_e (default: N on DeepSea as in the paper, 1 elsewhere)."""
    alpha: float = 0.1
    """Entropy coefficient α (discrete tasks; continuous tasks tune it)."""
    learning_starts: int = 100
    """Random warm-up steps before learning."""
    train_freq: int = 4
    """Environment steps between updates."""
    gradient_steps: int = 1
    """Gradient steps per update."""
    hidden: int = 64
    """Width of the two hidden layers of actors and critics."""
    batch_size: int = 64
    """Minibatch size (must not exceed learning_starts)."""


@dataclass(frozen=True)
class EvaluateConfig(BaseOptions):
    """Evaluate a trained agent (a ``kea train`` run directory) with greedy actions; written to evaluation.json in
    --out."""

    run: Path = Path("runs/kea/latest")
    """Run directory written by ``kea train``."""
    episodes: int = 5
    """Evaluation episodes."""
    module: Literal["auto", "sac", "standard"] = "auto"
    """Which SAC module acts: auto (standard once trained, else novelty-augmented), sac or standard."""


def _agent_kwargs(cfg: TrainConfig, *, discrete: bool = False) -> dict:
    kw = dict(switch_threshold=cfg.switch_threshold, standard_update=cfg.standard_update, beta_i=cfg.beta_i,
              learning_starts=cfg.learning_starts, train_freq=cfg.train_freq, gradient_steps=cfg.gradient_steps,
              hidden=(cfg.hidden, cfg.hidden), batch_size=cfg.batch_size,
              buffer_size=max(cfg.steps, cfg.batch_size))
    if (cfg.env is None and cfg.task in ("deepsea", "gridnav")) or discrete:
        kw["alpha"] = cfg.alpha
    if cfg.beta_e is not None:
        kw["beta_e"] = cfg.beta_e
    if cfg.variant == "SAC":
        kw.pop("switch_threshold")
        kw.pop("standard_update")
    return kw


def _make_env(task: str, *, size: int, seed: int, what: str = "--task", env_id: str | None = None):
    """``kea.experiment.make_env`` (or the gymnasium environment ``env_id``, :func:`kea.envs.make_gym_env`); a task
    whose simulator is not installed (MuJoCo for sparse-reacher) is a clean error naming ``what`` and the extra to
    install."""
    from kea.errors import KEAError
    from kea.experiment import make_env

    if env_id is not None:
        from kea.envs import make_gym_env

        return make_gym_env(env_id, what="--env" if what == "--task" else what)
    try:
        return make_env(task, size=size, seed=seed)
    except ImportError as exc:
        raise KEAError(f"{what} {task!r}: {exc}") from None


def train(cfg: TrainConfig) -> int:
    from icml25.errors import check_non_negative, check_positive
    from icml25.seeding import seed_everything

    from kea.variants import make_agent

    check_positive(cfg, "steps", "train_freq", "gradient_steps", "hidden", "batch_size", prefix="--")
    check_positive(cfg, "alpha", integer=False, prefix="--")
    check_non_negative(cfg, "learning_starts", "beta_i", prefix="--")
    if cfg.beta_e is not None:
        check_non_negative(cfg, "beta_e", prefix="--")
    if cfg.size < 2:
        raise ValueError(f"--size must be >= 2, got {cfg.size}")
    seed_everything(cfg.seed)
    env = _make_env(cfg.task, size=cfg.size, seed=cfg.seed, env_id=cfg.env)  # before the run folder
    from icml25.device import resolve_device

    device = resolve_device(cfg.device)
    rd = open_run_dir("kea", cfg)
    rd.write_config(cfg)
    rd.write_env(device=str(device))
    import gymnasium as gym

    kw = _agent_kwargs(cfg, discrete=isinstance(env.action_space, gym.spaces.Discrete)) | {"device": str(device)}
    if cfg.env is None and cfg.task == "deepsea" and "beta_e" not in kw:
        kw["beta_e"] = float(cfg.size)
    agent = make_agent(cfg.variant, env, seed=cfg.seed, **kw)

    def log(ag) -> None:
        tr = ag.trace
        rd.log(ag.num_timesteps, episode=len(tr.episode_returns), episode_return=tr.episode_returns[-1],
               gate_open=ag.gate_open, switch_fraction=float(sum(tr.switched[-200:]) / max(len(tr.switched[-200:]), 1)))

    agent.learn(cfg.steps, callback=log, progress=not cfg.quiet)
    env_config = ({"env_id": cfg.env, "seed": cfg.seed} if cfg.env is not None
                  else {"task": cfg.task, "size": cfg.size, "seed": cfg.seed})
    agent.save(rd.path / "model", env_config=env_config)
    tr = agent.trace
    summary = {"episodes": len(tr.episode_returns), "first_success_episode": tr.first_success_episode,
               "gate_open_step": tr.gate_open_step, "seconds": tr.seconds}
    rd.write_json("summary.json", summary)
    if not cfg.quiet:
        print(f"trained {cfg.variant} on {cfg.env or cfg.task}: {summary}; saved to {rd.target / 'model'}")
    return 0


def evaluate(cfg: EvaluateConfig) -> int:
    import json

    from kea.agent import KEA
    from kea.experiment import greedy_return

    model = Path(cfg.run) / "model"
    if not (model / "model_config.json").exists():
        raise FileNotFoundError(f"{str(model)!r} has no model_config.json; pass --run DIR of a `kea train` run")
    if cfg.episodes <= 0:
        raise ValueError(f"--episodes must be > 0, got {cfg.episodes}")
    from icml25.errors import UserInputError, read_json

    env_cfg = read_json(model / "model_config.json", what="--run config", required=("env",))["env"]
    keys = ("env_id", "seed") if isinstance(env_cfg, dict) and "env_id" in env_cfg else ("task", "size", "seed")
    if not isinstance(env_cfg, dict) or any(k not in env_cfg for k in keys):
        raise UserInputError(f"{str(model / 'model_config.json')!r}: 'env' must hold the keys task, size, seed "
                             "(or env_id, seed)")
    what = f"--run {str(model / 'model_config.json')!r}: env task"

    def build(seed: int):
        if "env_id" in env_cfg:
            return _make_env("", size=0, seed=seed, what=what.replace("env task", "env_id"),
                             env_id=str(env_cfg["env_id"]))
        return _make_env(env_cfg["task"], size=env_cfg["size"], seed=seed, what=what)

    agent = KEA.load(model, build(env_cfg["seed"]))
    ret = greedy_return(agent, build(cfg.seed), module=cfg.module, episodes=cfg.episodes)
    res = {"mean_return": ret, "episodes": cfg.episodes, "module": cfg.module}
    rd = open_run_dir("kea", cfg)  # --out was checked before the work (method_main)
    rd.write_config(cfg)
    rd.write_env(device="cpu")
    rd.write_json("evaluation.json", res)
    if not cfg.quiet:
        print(json.dumps(res))
        print(f"written to {rd.target}")
    return 0


@dataclass(frozen=True)
class KeaReproduceOptions(ReproduceOptions):
    """Run KEA and its baselines side by side and measure the paper's claims."""

    task: Literal["main", "deepsea-large", "continuous", "ablation"] = "main"
    """main: DeepSea N=10 + cost per size (the committed full run); deepsea-large: DeepSea N=14 and 20 (longer);
    continuous: SparseMountainCar with continuous SAC modules (longer); ablation: KEA-RND vs RND-SAC on 10 more
    seeds of N=10, and KEA-RND with the released gate and with σ=0.5."""


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {"train": (TrainConfig, train), "evaluate": (EvaluateConfig, evaluate),
                                "reproduce": (KeaReproduceOptions, reproduce_command(METHOD, by_task="kea.reproduce:reproduce"))}, argv=argv)
