"""Command line of sold: ``sold pretrain | train | evaluate | reproduce [--quick|--smoke] [--rl]``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from icml25.cli_helpers import (
    BaseOptions,
    CommonOptions,
    ReproduceOptions,
    method_main,
    open_run_dir,
    run_reproduce,
)

from sold import config as _config
from sold.config import AgentConfig, AutoencoderConfig, EnvConfig, TrainPreset, validate_all
from sold.registry import METHOD

DEFAULT_ENV = "sold/ColorReach2D-v0"


@dataclass(frozen=True)
class PretrainOptions(BaseOptions):
    """Pre-train SAVi (or the holistic baseline's autoencoder) on random-action episodes; save it to --out."""

    env: str = DEFAULT_ENV
    """Gymnasium env id: the package's sold/ColorReach2D-v0 or sold/Push2D-v0 (set up by --scene.*), or any
    registered env with square [H, W, 3] uint8 image observations and a bounded Box action space (masks optional)."""
    scene: EnvConfig = field(default_factory=EnvConfig)
    """Settings of the package's own envs (ignored for other ids; sold/Push2D-v0 sets task 'push')."""
    ae: AutoencoderConfig = field(default_factory=AutoencoderConfig)
    """Autoencoder and pre-training settings."""
    representation: str = "slots"
    """'slots' (SAVi) or 'holistic' (the baseline's CNN autoencoder)."""


@dataclass(frozen=True)
class TrainOptions(CommonOptions):
    """Train a SOLD agent (or the holistic baseline agent) online; save it to --out."""

    PRESETS = {"cpu": TrainPreset.cpu, "paper": TrainPreset.paper}  # sold.config.TrainPreset: scene, ae, agent, steps

    env: str = DEFAULT_ENV
    """Gymnasium env id: the package's sold/ColorReach2D-v0 or sold/Push2D-v0 (set up by --scene.*), or any
    registered env with square [H, W, 3] uint8 image observations and a bounded Box action space (masks optional)."""
    scene: EnvConfig = field(default_factory=EnvConfig)
    """Settings of the package's own envs (ignored for other ids; sold/Push2D-v0 sets task 'push')."""
    ae: AutoencoderConfig = field(default_factory=AutoencoderConfig)
    """Autoencoder settings (used when --pretrained is not given)."""
    agent: AgentConfig = field(default_factory=AgentConfig)
    """World model and behaviour-learning settings."""
    pretrained: Path | None = None
    """A run folder of `sold pretrain` (default: pre-train first)."""
    steps: int = 2000
    """Environment steps."""
    representation: str = "slots"
    """'slots' (SOLD) or 'holistic' (the baseline agent)."""


@dataclass(frozen=True)
class EvaluateOptions(BaseOptions):
    """Evaluate a trained agent (a `sold train` run folder) with deterministic actions."""

    run: Path = Path("runs/sold/latest")
    """Run folder written by `sold train`."""
    episodes: int = 10
    """Evaluation episodes."""


@dataclass(frozen=True)
class SoldReproduceOptions(ReproduceOptions):
    """Run SOLD and its baselines side by side and measure the paper's claims."""

    rl: bool = False
    """Also run behaviour learning (SOLD vs the holistic agent; SB3 SAC on the true state, a random policy and a
    scripted oracle beside them)."""
    task: Literal["main", "ae-lr", "rl-long", "speed-width", "savi-long"] = "main"
    """main: the claims (results/full); ae-lr: tune both autoencoders' pre-training learning rates alike
    (results/full/ae_lr), the run that justifies the defaults ae.lr and ae.holistic_lr; rl-long: the claims plus
    behaviour learning for 20 000 env steps per agent on 3 seeds (results/full/rl_long, about 35 minutes);
    speed-width: SOLD's update cost vs the holistic agent's as SOLD's transformers shrink (results/full/speed_width,
    about 2 minutes); savi-long: the claims with both autoencoders pre-trained for 8000 steps instead of 1200
    (results/full/savi_long, about 22 minutes)."""


def _check_representation(rep: str) -> None:
    from sold.errors import SoldError

    if rep not in ("slots", "holistic"):
        raise SoldError(f"--representation must be 'slots' or 'holistic', got {rep!r}")


def make_env(env_id: str, scene: EnvConfig | None = None):
    """The env of ``--env``: the package's ids built from ``scene``, any other id by :func:`gymnasium.make`; its
    observation space is checked here so that a wrong env fails with one error naming ``--env``."""
    import dataclasses

    import gymnasium as gym
    import numpy as np

    from sold.envs import ENV_IDS, ColorReach2D
    from sold.errors import SoldError

    if env_id in ENV_IDS:
        kw = {**dataclasses.asdict(scene or EnvConfig()), **ENV_IDS[env_id]}
        return ColorReach2D(**kw)
    try:
        env = gym.make(env_id)
    except gym.error.Error as exc:
        raise SoldError(f"--env {env_id!r}: not a registered gymnasium env ({exc})") from exc
    obs, act = env.observation_space, env.action_space
    shape = getattr(obs, "shape", None)
    if not (isinstance(obs, gym.spaces.Box) and obs.dtype == np.uint8 and shape is not None and len(shape) == 3
            and shape[-1] == 3 and shape[0] == shape[1] and shape[0] % 8 == 0):
        raise SoldError(f"--env {env_id!r}: needs square [H, W, 3] uint8 image observations with H divisible by 8, "
                        f"got {obs}")
    if not (isinstance(act, gym.spaces.Box) and len(act.shape) == 1 and np.isfinite(act.low).all()
            and np.isfinite(act.high).all()):
        raise SoldError(f"--env {env_id!r}: needs a bounded 1-D Box action space, got {act}")
    return env


def _env_meta(env) -> dict:
    return {"image_size": int(env.observation_space.shape[0]), "action_dim": int(env.action_space.shape[0])}


def _from_dict(cls, d, where: str, key: str):
    """``cls(**d)`` for a config section read from a run folder; a wrong section names the file and the key."""
    from sold.errors import SoldError

    if not isinstance(d, dict):
        raise SoldError(f"{where}: {key!r} must be a JSON object of {cls.__name__} fields, got {type(d).__name__}")
    try:
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})
    except TypeError as exc:  # an unknown or missing field
        raise SoldError(f"{where}: {key!r} does not fit {cls.__name__} ({exc})") from None


def _build_ae(conf: dict):
    from sold.agent import build_holistic_ae, build_savi

    a = AutoencoderConfig(**conf["ae"])
    if conf["representation"] == "slots":
        return build_savi(a, image_size=conf["image_size"], action_dim=conf["action_dim"])
    return build_holistic_ae(a, image_size=conf["image_size"])


def _load_ae(folder: Path):
    from icml25.checkpoint import load_config, load_model

    conf = load_config(folder, required=["ae", "representation", "image_size", "action_dim"])
    where = str(Path(folder) / "model_config.json")
    _from_dict(AutoencoderConfig, conf["ae"], where, "ae")  # checked before anything is built
    if conf["representation"] not in ("slots", "holistic"):
        from sold.errors import SoldError

        raise SoldError(f"{where}: 'representation' must be 'slots' or 'holistic', got {conf['representation']!r}")
    return load_model(folder, lambda _: _build_ae(conf)), conf


def pretrain_command(opts: PretrainOptions) -> int:
    from icml25.checkpoint import save_model
    from icml25.seeding import seed_everything

    from sold.agent import SOLD

    _config._DEFER[0] = False
    validate_all(opts)
    _check_representation(opts.representation)
    seed_everything(opts.seed)
    env = make_env(opts.env, opts.scene)
    rd = open_run_dir("sold", opts)
    agent = SOLD(env, ae_config=opts.ae, representation=opts.representation, seed=opts.seed)
    curve = agent.pretrain(progress=not opts.quiet)
    rd.write_config(asdict(opts))
    rd.write_env(device="cpu")
    conf = {"ae": asdict(opts.ae), "representation": opts.representation, **_env_meta(env)}
    save_model(rd.path / "model", agent.autoencoder, conf)
    rd.write_json("pretrain.json", {"final_loss": curve[-1], "steps": len(curve)})
    if not opts.quiet:
        print(f"pre-trained {opts.representation} autoencoder, final loss {curve[-1]:.5f}; saved to {rd.target}")
    return 0


def train_command(opts: TrainOptions) -> int:
    import torch
    from icml25.checkpoint import save_model, save_tensors
    from icml25.errors import check_positive
    from icml25.seeding import seed_everything

    from sold.agent import SOLD

    _config._DEFER[0] = False
    validate_all(opts)
    _check_representation(opts.representation)
    check_positive(opts, "steps", prefix="--")
    ae, conf = (None, None)
    if opts.pretrained is not None:
        ae, conf = _load_ae(opts.pretrained / "model")
        if conf["representation"] != opts.representation:
            raise ValueError(f"--pretrained holds a {conf['representation']!r} autoencoder but --representation is "
                             f"{opts.representation!r}")
    from icml25.device import resolve_device

    device = resolve_device(opts.device)
    seed_everything(opts.seed)
    env = make_env(opts.env, opts.scene)
    rd = open_run_dir("sold", opts)
    ae_cfg = AutoencoderConfig(**conf["ae"]) if conf else opts.ae
    agent = SOLD(env, config=opts.agent, ae_config=ae_cfg, autoencoder=ae, representation=opts.representation,
                 seed=opts.seed, device=device)

    def log(ag, out) -> None:
        rd.log(ag.trace.env_steps, **out)

    agent.learn(opts.steps, progress=not opts.quiet, callback=log)
    rd.write_config(asdict(opts))
    rd.write_env(device=str(device))
    conf = {"ae": asdict(ae_cfg), "representation": opts.representation, **_env_meta(env)}
    save_model(rd.path / "model", agent.autoencoder, conf)
    state = {f"world.{k}": v for k, v in agent.world.state_dict().items()}
    state.update({f"learner.{k}": v for k, v in agent.learner.state_dict().items()})
    save_tensors(rd.path / "agent.safetensors", {k: v.contiguous() for k, v in state.items()
                                                 if isinstance(v, torch.Tensor)})
    rd.write_json("agent_config.json", {"agent": asdict(opts.agent), "env": opts.env, "scene": asdict(opts.scene),
                                        **conf})
    tr = agent.trace
    summary = {"env_steps": tr.env_steps, "updates": tr.updates, "episodes": len(tr.episode_returns),
               "last_returns": tr.episode_returns[-5:], "env_seconds": tr.env_seconds,
               "update_seconds": tr.update_seconds}
    rd.write_json("summary.json", summary)
    if not opts.quiet:
        print(f"trained {opts.representation} agent: {summary}; saved to {rd.target}")
    return 0


def evaluate_command(opts: EvaluateOptions) -> int:
    from icml25.checkpoint import load_tensors
    from icml25.errors import check_positive, read_json

    from sold.agent import SOLD
    from sold.errors import SoldError

    _config._DEFER[0] = False
    check_positive(opts, "episodes", prefix="--")
    meta = read_json(opts.run / "agent_config.json", what="agent config",
                     required=["agent", "env", "ae", "representation"])
    where = str(opts.run / "agent_config.json")
    agent_cfg = _from_dict(AgentConfig, meta["agent"], where, "agent")
    ae_cfg = _from_dict(AutoencoderConfig, meta["ae"], where, "ae")
    if isinstance(meta["env"], dict):  # runs written before --env took a gymnasium id
        env_id, scene = DEFAULT_ENV, _from_dict(EnvConfig, meta["env"], where, "env")
    elif isinstance(meta["env"], str):
        env_id, scene = meta["env"], _from_dict(EnvConfig, meta.get("scene", {}), where, "scene")
    else:
        raise SoldError(f"{where}: 'env' must be a gymnasium id, got {meta['env']!r}")
    ae, _ = _load_ae(opts.run / "model")
    agent = SOLD(make_env(env_id, scene), config=agent_cfg, ae_config=ae_cfg, autoencoder=ae,
                 representation=meta["representation"], seed=opts.seed)
    state = load_tensors(opts.run / "agent.safetensors")
    world = {k[len("world."):]: v for k, v in state.items() if k.startswith("world.")}
    learner = {k[len("learner."):]: v for k, v in state.items() if k.startswith("learner.")}
    try:
        agent.world.load_state_dict(world, strict=False)
        agent.learner.load_state_dict(learner, strict=True)
    except RuntimeError as exc:
        raise SoldError(f"{opts.run / 'agent.safetensors'}: does not match the saved config ({exc})") from exc
    rd = open_run_dir("sold", opts)
    res = agent.evaluate(make_env(env_id, scene), opts.episodes, seed=opts.seed + 10_000)
    rd.write_config(asdict(opts))
    rd.write_json("evaluation.json", res)
    if not opts.quiet:
        print(f"evaluation over {opts.episodes} episodes: {res}; written to {rd.target}")
    return 0


def reproduce_command(opts: SoldReproduceOptions) -> int:
    from icml25.registry import default_out

    _config._DEFER[0] = False
    out = opts.out if opts.out is not None else default_out(METHOD.name)

    class _Method:
        name, title, venue, url = METHOD.name, METHOD.title, METHOD.venue, METHOD.url

        @staticmethod
        def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
            from sold.reproduce import reproduce

            return reproduce(quick=quick, smoke=smoke, out=out, seed=seed, rl=opts.rl, task=opts.task)

    # the main run replaces `out` whole; the sub-runs committed inside it (ae_lr/, rl/, rl_long/) are carried over
    run_reproduce(_Method, quick=opts.quick, smoke=opts.smoke, out=out, seed=opts.seed, overwrite=opts.overwrite,
                  quiet=opts.quiet, device="cpu", keep=("ae_lr", "rl", "rl_long", "speed_width", "savi_long") if opts.task == "main" else ())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    _config._DEFER[0] = True  # nested configs are validated by the command itself (one `error:` line)
    try:
        return method_main(METHOD, {
            "pretrain": (PretrainOptions, pretrain_command),
            "train": (TrainOptions, train_command),
            "evaluate": (EvaluateOptions, evaluate_command),
            "reproduce": (SoldReproduceOptions, reproduce_command),
        }, argv=argv)
    finally:
        _config._DEFER[0] = False
