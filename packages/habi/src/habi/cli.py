"""Command line of habi: ``habi make-data | train-planner | habitize | evaluate | reproduce``.

Typical flow::

    habi make-data --out runs/data                       # medium.hdf5, medium-replay.hdf5 (D4RL layout)
    habi train-planner --data runs/data/medium.hdf5 --out runs/planner
    habi habitize --planner runs/planner --data runs/data/medium.hdf5 --out runs/habi
    habi evaluate --run runs/habi --policy habi --scorer habi
    habi reproduce --quick
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from icml25.cli_helpers import (
    BaseOptions,
    CommonOptions,
    ReproduceOptions,
    method_main,
    nested_config,
    open_run_dir,
    reproduce_command,
)

from habi.config import DataGenConfig, HabiConfig, HabitizeConfig, PlannerConfig, PlannerTrainConfig
from habi.errors import HabiConfigError
from habi.registry import METHOD

_GEN, _GEN_DEFAULT = nested_config(DataGenConfig, DataGenConfig(), hide=("seed",))
_PLANNER, _PLANNER_DEFAULT = nested_config(PlannerConfig, PlannerConfig(obs_dim=1, act_dim=1),
                                           hide=("obs_dim", "act_dim"), rename={"steps": "diffusion_steps"})
_PTRAIN, _PTRAIN_DEFAULT = nested_config(PlannerTrainConfig, PlannerTrainConfig.cpu())
_HABI, _HABI_DEFAULT = nested_config(HabiConfig, HabiConfig(obs_dim=1, act_dim=1), hide=("obs_dim", "act_dim"))
_HTRAIN, _HTRAIN_DEFAULT = nested_config(HabitizeConfig, HabitizeConfig.cpu())


@dataclass(frozen=True)
class MakeDataConfig(BaseOptions):
    """Generate offline data sets (D4RL layout) with our own SAC policy."""

    no_cache: bool = False
    """Regenerate even if a cached copy exists."""
    gen: _GEN = _GEN_DEFAULT
    """How the data sets are made (habi.config.DataGenConfig)."""


@dataclass(frozen=True)
class TrainPlannerConfig(CommonOptions):
    """Train the Diffusion-QL teacher planner on a D4RL-layout file."""

    PRESETS = {"cpu": PlannerTrainConfig.cpu, "paper": PlannerTrainConfig.paper}
    PRESET_FIELD = "train"

    data: Path = Path("runs/data/medium.hdf5")
    """D4RL-layout .hdf5/.npz file (observations, actions, rewards, terminals, timeouts)."""
    env_id: str = "Pendulum-v1"
    """Environment the data comes from (its observation/action sizes are checked)."""
    planner: _PLANNER = _PLANNER_DEFAULT
    """The planner's architecture and decision rule (habi.config.PlannerConfig; its DDPM `steps` is
    --diffusion-steps)."""
    train: _PTRAIN = _PTRAIN_DEFAULT
    """How it is trained (habi.config.PlannerTrainConfig; defaults: PlannerTrainConfig.cpu(), --preset paper:
    PlannerTrainConfig.paper())."""


@dataclass(frozen=True)
class HabitizeCliConfig(CommonOptions):
    """Generate goal-directed behaviour with a trained planner and habitize it into a fast policy."""

    PRESETS = {"cpu": lambda: {"habi": HabiConfig.cpu(obs_dim=1, act_dim=1), "train": HabitizeConfig.cpu()},
               "paper": lambda: {"habi": HabiConfig.paper(obs_dim=1, act_dim=1), "train": HabitizeConfig.paper()}}

    planner: Path = Path("runs/planner")
    """Run folder of `habi train-planner`."""
    data: Path = Path("runs/data/medium.hdf5")
    """The offline data set whose states the planner labels."""
    num_candidates: int = 5
    """N_c at habitual inference."""
    scorer: Literal["habi", "planner", "planner_target", "none"] = "habi"
    """Critic that picks among the N_c candidates."""
    teacher_states: int = 3000
    """Data-set states labelled by the planner (subsampled)."""
    stored_candidates: int = 10
    """Candidates stored per state for the habitual critic."""
    habi: _HABI = _HABI_DEFAULT
    """The habitual model's sizes (habi.config.HabiConfig; paper: 256 everywhere, --preset paper)."""
    train: _HTRAIN = _HTRAIN_DEFAULT
    """Habitization (habi.config.HabitizeConfig; defaults: HabitizeConfig.cpu(), whose dual step kl_lr 2e-2
    brings the KL to its target within a few thousand steps; the paper's 3e-4 needs ~20k)."""


@dataclass(frozen=True)
class EvaluateConfig(BaseOptions):
    """Roll out a trained policy and report returns, normalised score and decision frequency."""

    run: Path = Path("runs/habi")
    """Run folder of `habi habitize` (or of `habi train-planner` with --policy planner)."""
    policy: Literal["habi", "planner"] = "habi"
    """Which policy to evaluate."""
    env_id: str = "Pendulum-v1"
    """Environment to roll out in."""
    episodes: int = 10
    """Evaluation episodes."""
    num_candidates: int | None = None
    """Override N_c (habi) or the planner's candidate count."""
    scorer: Literal["habi", "planner", "planner_target", "none"] | None = None
    """Override the habi scorer."""
    benchmark: bool = True
    """Also time batch-1 decisions on one thread."""


def make_data(cfg: MakeDataConfig) -> int:
    gcfg = cfg.gen.resolve(seed=cfg.seed)
    from habi.datagen import make_offline_data

    rd = open_run_dir("habi", cfg)
    rd.write_config(asdict(cfg))
    res = make_offline_data(gcfg, cache=not cfg.no_cache, progress=not cfg.quiet)
    for name in ("medium", "medium-replay"):
        shutil.copyfile(res[name], rd.path / f"{name}.hdf5")
    rd.write_json("references.json", res["meta"])
    if not cfg.quiet:
        m = res["meta"]
        print(f"wrote {rd.target}/medium.hdf5 and medium-replay.hdf5 (random {m['random_return']:.1f}, "
              f"expert {m['expert_return']:.1f}, medium score {m['medium_score']:.1f})")
    return 0


def _references(data_path: Path) -> dict:
    from habi.data import load_offline

    meta = load_offline(data_path, action_bound=None).get("meta", {})
    return meta if isinstance(meta, dict) else {}


def train_planner_cmd(cfg: TrainPlannerConfig) -> int:
    from icml25.seeding import seed_everything

    from habi.data import load_offline
    from habi.envs import env_dims
    from habi.planner import train_planner

    obs_dim, act_dim = env_dims(cfg.env_id)
    data = load_offline(cfg.data, obs_dim=obs_dim, act_dim=act_dim)
    pcfg = cfg.planner.resolve(obs_dim=obs_dim, act_dim=act_dim)
    tcfg = cfg.train.resolve()
    from icml25.device import resolve_device

    device = resolve_device(cfg.device)
    rd = open_run_dir("habi", cfg)
    rd.write_config({**asdict(cfg), "data": str(cfg.data), "planner": asdict(pcfg)})
    seed_everything(cfg.seed)
    planner = train_planner(data, config=pcfg, train=tcfg, seed=cfg.seed, log=rd.log, progress=not cfg.quiet,
                            device=device)
    planner.save(rd.path / "planner")
    rd.write_json("references.json", data.get("meta", {}))
    rd.write_env(device=str(device))
    if not cfg.quiet:
        print(f"planner saved to {rd.target / 'planner'}")
    return 0


@dataclass(frozen=True)
class HabiReproduceOptions(ReproduceOptions):
    """Run the method and its baselines side by side and measure the paper's claims (a fixed CPU-scale protocol,
    so there is no ``--device``)."""

    task: Literal["main", "replay", "hopper"] = "main"
    """'main': every claim on Pendulum-v1 medium (the committed full run: the planner trained to its plateau,
    competence gates, Habi at the paper's KL setting, speed); 'replay': the same returns protocol on the
    medium-replay data set with its own planner; 'hopper': the returns protocol on Hopper-v5 medium data from our
    SAC, D4RL-normalised (needs the mujoco extra). Their wall times are in the README."""


def reproduce_cmd(opts: HabiReproduceOptions) -> int:
    return reproduce_command(METHOD, by_task="habi.reproduce:reproduce")(opts)


def habitize_cmd(cfg: HabitizeCliConfig) -> int:
    from icml25.seeding import seed_everything

    from habi.data import load_offline
    from habi.habitize import habitize
    from habi.planner import DiffusionPlanner
    from habi.policy import HabitualPolicy, check_inference_options
    from habi.teacher import generate_goal_directed_behavior

    check_inference_options(cfg.num_candidates, cfg.scorer, "sample")
    hcfg = cfg.train.resolve()
    from icml25.device import resolve_device

    device = resolve_device(cfg.device)
    planner = DiffusionPlanner.from_pretrained(cfg.planner)
    arch = cfg.habi.resolve(obs_dim=planner.config.obs_dim, act_dim=planner.config.act_dim)
    data = load_offline(cfg.data, obs_dim=planner.config.obs_dim, act_dim=planner.config.act_dim)
    rd = open_run_dir("habi", cfg)
    rd.write_config({**asdict(cfg), "planner": str(cfg.planner), "data": str(cfg.data), "habi": asdict(arch)})
    seed_everything(cfg.seed)
    teacher = generate_goal_directed_behavior(planner, data, stored=cfg.stored_candidates,
                                              max_states=cfg.teacher_states, seed=cfg.seed, progress=not cfg.quiet)
    model, hist = habitize(teacher, habi=arch, config=hcfg, seed=cfg.seed, log=rd.log, progress=not cfg.quiet,
                           device=device)
    pol = HabitualPolicy(model=model, normalizer=planner.normalizer, num_candidates=cfg.num_candidates,
                         scorer=cfg.scorer, planner=planner)
    pol.save(rd.path / "habi")
    planner.save(rd.path / "planner")  # a copy, so from_pretrained(run) can use the planner scorers
    ref = Path(cfg.planner) / "references.json"
    rd.write_json("references.json", json.loads(ref.read_text()) if ref.exists() else data.get("meta", {}))
    rd.write_env(device=str(device))
    if not cfg.quiet:
        last = hist[-1]
        print(f"habi saved to {rd.target / 'habi'} (recon {last['recon']:.4f}, KL geo-mean {last['kl_geomean']:.3g}, "
              f"eta_KL {last['eta_kl']:.3g})")
    return 0


def evaluate_cmd(cfg: EvaluateConfig) -> int:
    from habi.benchmark import decision_frequency
    from habi.data import normalized_score
    from habi.envs import env_dims, evaluate_policy

    if cfg.episodes < 1:
        raise HabiConfigError(f"episodes must be >= 1, got {cfg.episodes}")
    if cfg.policy == "habi":
        from habi.policy import HabitualPolicy

        pol = HabitualPolicy.from_pretrained(cfg.run, num_candidates=cfg.num_candidates, scorer=cfg.scorer)
        obs_dim = pol.cfg.obs_dim
    else:
        from habi.planner import DiffusionPlanner

        over = {} if cfg.num_candidates is None else {"num_candidates": cfg.num_candidates}
        pol = DiffusionPlanner.from_pretrained(cfg.run, **over)
        obs_dim = pol.config.obs_dim
    env_obs, _ = env_dims(cfg.env_id)
    if env_obs != obs_dim:
        raise HabiConfigError(f"env_id {cfg.env_id!r} has observation size {env_obs}, the policy expects {obs_dim}")
    rets = evaluate_policy(pol.act_batch, cfg.env_id, episodes=cfg.episodes, seed=cfg.seed)
    res: dict = {"policy": cfg.policy, "mean_return": float(rets.mean()), "returns": rets.tolist()}
    ref_path = Path(cfg.run) / "references.json"
    if ref_path.exists():
        ref = json.loads(ref_path.read_text())
        if "random_return" in ref:
            res["normalized_score"] = float(normalized_score(rets, random_return=ref["random_return"],
                                                             expert_return=ref["expert_return"]).mean())
    if cfg.benchmark:
        import numpy as np

        obs = np.random.default_rng(cfg.seed).normal(size=(64, obs_dim)).astype(np.float32)
        hz = decision_frequency({"policy": pol.act}, obs, decisions=1000 if cfg.policy == "habi" else 200)
        res["decisions_per_s"] = hz["policy"]["hz"]
    if cfg.out is not None:
        rd = open_run_dir("habi", cfg)
        rd.write_json("evaluation.json", res)
    if not cfg.quiet:
        print(json.dumps({k: v for k, v in res.items() if k != "returns"}, indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {
        "make-data": (MakeDataConfig, make_data),
        "train-planner": (TrainPlannerConfig, train_planner_cmd),
        "habitize": (HabitizeCliConfig, habitize_cmd),
        "evaluate": (EvaluateConfig, evaluate_cmd),
        "reproduce": (HabiReproduceOptions, reproduce_cmd),
    }, argv=argv)
