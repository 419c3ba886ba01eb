"""Command line of pes: ``pes train``, ``pes evaluate``, ``pes reproduce [--quick|--smoke]``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from icml25.cli_helpers import BaseOptions, ReproduceOptions, method_main, reproduce_command

from pes.config import LearnerConfig
from pes.registry import METHOD


@dataclass(frozen=True)
class TrainOptions(BaseOptions):
    """Train one linear policy with PES, SL-PG or fixed-σ GPOMDP/PGPE and write the run directory
    (config.json, env.json, metrics.jsonl, policy.json with θ, summary.json). A NumPy method: it runs on the CPU (no
    --device)."""

    PRESETS = {"cpu": LearnerConfig.cpu, "paper": LearnerConfig.paper}
    PRESET_FIELD = "learner"

    learner: LearnerConfig = LearnerConfig()
    """The learner's settings."""


@dataclass(frozen=True)
class EvaluateOptions(BaseOptions):
    """Evaluate the deterministic policy of a ``pes train`` run (exact J_D on LQR, Monte Carlo otherwise); written to
    evaluation.json in --out."""

    run: Path = Path("runs/pes/latest")
    """Run directory written by ``pes train`` (holds policy.json)."""
    episodes: int = 10
    """Deterministic episodes (Monte Carlo environments only)."""


def build_learner(cfg: LearnerConfig, seed: int):
    """The learner object (:class:`pes.PES` or :class:`pes.SLPG`) of a :class:`LearnerConfig`."""
    from pes.algorithms import PES, SLPG
    from pes.envs import make_env

    env = make_env(cfg.env, horizon=cfg.horizon, gamma=cfg.gamma)
    common = dict(exploration=cfg.exploration, sigma0=cfg.sigma0, sigma_exponent=cfg.sigma_exponent, lr=cfg.lr,
                  batch=cfg.batch, horizon=cfg.horizon, gamma=cfg.gamma, seed=seed, sigma_min=cfg.sigma_min,
                  optimizer=cfg.optimizer, estimator=cfg.estimator, baseline=cfg.baseline,
                  eval_every=cfg.eval_every)
    if cfg.algorithm == "slpg":
        return SLPG(env, parameterization=cfg.parameterization, phases=cfg.phases,
                    iters_per_phase=cfg.iters_per_phase, sigma_lr=cfg.sigma_lr, pb_sigma_score=cfg.pb_sigma_score,
                    **common)
    phases = 1 if cfg.algorithm == "fixed" else cfg.phases
    return PES(env, phases=phases, iters_per_phase=cfg.iters_per_phase, reset_optimizer=cfg.reset_optimizer,
               warm_start=cfg.warm_start, lr_schedule=cfg.lr_schedule, **common)


def train_command(opts: TrainOptions) -> int:
    from icml25.registry import default_out
    from icml25.rundir import RunDir

    opts.learner.validate()                                    # one `error:` line naming the field, nothing written
    learner = build_learner(opts.learner, opts.seed)          # validates the rest (env, θ, parameterisation)
    out = opts.out if opts.out is not None else default_out(METHOD.name)
    with RunDir(out, overwrite=opts.overwrite, staged=True) as rd:
        rd.write_config(asdict(opts))
        rd.write_env(device="cpu")
        learner.learn()
        for h in learner.history:
            rd.log(h["iteration"], **{k: v for k, v in h.items() if k != "iteration"})
        env = learner.env
        rd.write_json("policy.json", {"env": opts.learner.env, "horizon": opts.learner.horizon,
                                      "gamma": opts.learner.gamma, "state_dim": env.state_dim,
                                      "action_dim": env.action_dim, "theta": learner.theta.tolist()})
        last = next(h for h in reversed(learner.history) if "J_D" in h)
        summary = {"J_D": last["J_D"], "final_sigma": float(learner.history[-1]["sigma"]),
                   "samples": learner.samples, "seconds": learner.seconds}
        if hasattr(env, "optimal_return"):
            summary["J_D_optimal"] = env.optimal_return()
            summary["deterministic_gap"] = summary["J_D_optimal"] - summary["J_D"]
        rd.write_json("summary.json", summary)
    if not opts.quiet:
        print(f"{opts.learner.algorithm} ({opts.learner.exploration}) on {opts.learner.env}: {summary}")
        print(f"written to {rd.target}")
    return 0


def evaluate_command(opts: EvaluateOptions) -> int:
    import json

    from icml25.cli_helpers import open_run_dir
    from icml25.errors import check_positive, read_json

    from pes.algorithms import evaluate
    from pes.envs import make_env
    from pes.errors import PesError

    check_positive(opts, "episodes", prefix="--")
    path = Path(opts.run) / "policy.json"
    pol = read_json(path, what="--run policy file of a `pes train` run", required=("env", "horizon", "gamma", "theta"))
    try:
        env = make_env(pol["env"], horizon=pol["horizon"], gamma=pol["gamma"])
        theta = env.check_theta(pol["theta"])
    except (ValueError, TypeError) as exc:
        raise PesError(f"--run {str(path)!r}: {exc}") from None
    res = evaluate(env, theta, episodes=opts.episodes, seed=opts.seed)
    if hasattr(env, "optimal_return"):
        res["J_D_optimal"] = env.optimal_return()
        res["deterministic_gap"] = res["J_D_optimal"] - res["J_D"]
    rd = open_run_dir(METHOD.name, opts)  # --out was checked before the work (method_main)
    rd.write_config(asdict(opts))
    rd.write_env(device="cpu")
    rd.write_json("evaluation.json", res)
    if not opts.quiet:
        print(json.dumps(res))
        print(f"written to {rd.target}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {
        "train": (TrainOptions, train_command),
        "evaluate": (EvaluateOptions, evaluate_command),
        "reproduce": (ReproduceOptions, reproduce_command(METHOD)),
    }, argv=argv)
