"""Command line of safediffcon: ``make-data``, ``pretrain``, ``post-train``, ``control``, ``evaluate``,
``reproduce [--quick|--smoke]``.

Every command that runs torch (the solver, the diffusion model, its sampler) takes ``--device auto|cpu|cuda|mps``
(``icml25.device.resolve_device``; ``auto``: cuda, then mps, then cpu) and records the device it ran on in
``env.json``; the random streams stay on the CPU, so a seed draws the same data, batches and noise on every device.
``reproduce`` is the fixed CPU-scale protocol and has no ``--device``. ``pretrain``, ``post-train`` and ``control``
take ``--preset cpu|paper`` (:func:`safediffcon.config.cpu`, :func:`safediffcon.config.paper`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Literal

from icml25.cli_helpers import CommonOptions, ReproduceOptions, method_main, open_run_dir, reproduce_command

from safediffcon.config import Config, cpu, paper
from safediffcon.registry import METHOD

SPLITS = ("train", "cal", "holdout", "val", "test")


@dataclass(frozen=True)
class ConfigArgs(Config):
    """The method's configuration (every field of safediffcon.config.Config)."""

    def __post_init__(self) -> None:  # checked by the command, so a bad value gives one `error:` line
        pass


def checked(cfg: Config) -> Config:
    """``cfg`` as a validated :class:`Config`; a bad field raises one clear error naming ``--config.<field>``."""
    from safediffcon.errors import SafediffconError

    try:
        return Config(**{f.name: getattr(cfg, f.name) for f in fields(Config)})
    except ValueError as exc:
        raise SafediffconError(f"--config: {exc}") from exc


@dataclass(frozen=True)
class MakeDataOptions(CommonOptions):
    """Generate the Burgers splits (train, cal, holdout, val, test) as burgers_{split}.h5 in the official layout."""

    config: ConfigArgs = ConfigArgs()
    """Sizes, grid and amplitudes (the data fields of the config are used)."""


@dataclass(frozen=True)
class PretrainOptions(CommonOptions):
    """Pretrain the joint [u, f, s] diffusion model and save it under <out>/model."""

    PRESETS = {"cpu": cpu, "paper": paper}
    PRESET_FIELD = "config"

    config: ConfigArgs = ConfigArgs()
    """The method's configuration."""
    data: Path | None = None
    """Folder of burgers_{split}.h5 files (make-data or the official ones); default: generate in memory."""


@dataclass(frozen=True)
class PostTrainOptions(CommonOptions):
    """Reweighted post-training with per-epoch conformal re-calibration; saves <out>/model (with its Q)."""

    PRESETS = {"cpu": cpu, "paper": paper}
    PRESET_FIELD = "config"

    model: Path = Path("runs/safediffcon/pretrain")
    """Run folder of `safediffcon pretrain` (holds model/)."""
    config: ConfigArgs = ConfigArgs()
    """Post-training fields (post_epochs, post_steps, post_lr, batch_size) and the data fields."""
    data: Path | None = None
    """Folder of burgers_{split}.h5 files; default: generate in memory."""


@dataclass(frozen=True)
class ControlOptions(CommonOptions):
    """Generate safe controls for the test split (guidance + InfFT) and write controls.npz and metrics.json."""

    PRESETS = {"cpu": cpu, "paper": paper}
    PRESET_FIELD = "config"

    model: Path = Path("runs/safediffcon/post-train")
    """Run folder of `safediffcon post-train` or `pretrain` (holds model/)."""
    config: ConfigArgs = ConfigArgs()
    """InfFT fields (infft_iters, infft_lr) and the data fields."""
    data: Path | None = None
    """Folder of burgers_{split}.h5 files; default: generate in memory."""
    guidance: bool = True
    """Safety guidance on x_hat0 during sampling."""


@dataclass(frozen=True)
class EvaluateOptions(CommonOptions):
    """Re-simulate controls (a controls.npz written by `control`) with the true solver: J, R_p, R_t, R_s (written to
    evaluation.json in --out)."""

    controls: Path = Path("runs/safediffcon/control/controls.npz")
    """File with arrays u0 [N, nx], u_target [N, nx], f [N, 10, nx]."""
    config: ConfigArgs = ConfigArgs()
    """Solver fields (nu, dt, u_bound)."""


def _device(opts):
    """The ``torch.device`` of ``--device``; an unknown or unavailable one is one error naming the flag."""
    from icml25.device import resolve_device

    from safediffcon.errors import SafediffconError

    try:
        return resolve_device(opts.device)
    except ValueError as exc:
        raise SafediffconError(f"--device: {exc}") from exc


def _split(cfg: Config, split: str, seed: int, device="cpu"):
    cfg = checked(cfg)
    from safediffcon.data import make_split

    k = SPLITS.index(split)
    if split == "train":
        return make_split(cfg.n_train, cfg.nx, nu=cfg.nu, dt=cfg.dt, amp=cfg.train_amp, seed=1000 * seed,
                          device=device)
    n = {"cal": cfg.n_cal, "holdout": cfg.n_holdout, "val": cfg.n_val, "test": cfg.n_test}[split]
    return make_split(n, cfg.nx, nu=cfg.nu, dt=cfg.dt, amp=cfg.eval_amp, safe_only=True, u_bound=cfg.u_bound,
                      seed=1000 * seed + k, device=device)


def _data(opts, split: str, device="cpu"):
    from safediffcon.data import load_h5
    from safediffcon.errors import SafediffconError

    if opts.data is None:
        return _split(opts.config, split, opts.seed, device)
    d = load_h5(Path(opts.data) / f"burgers_{split}.h5", split)
    if d.nx != opts.config.nx:
        raise SafediffconError(f"--data has nx={d.nx} but --config.nx is {opts.config.nx}")
    return d


def _model(run: Path, device="cpu"):
    from safediffcon.errors import SafediffconError
    from safediffcon.method import SafeDiffCon

    folder = Path(run) / "model"
    if not (folder / "model_config.json").exists():
        raise SafediffconError(f"{str(folder)!r} has no model_config.json; pass --model DIR of a pretrain/post-train run")
    return SafeDiffCon.load(folder, device=device)


def make_data(opts: MakeDataOptions) -> int:
    checked(opts.config)
    device = _device(opts)
    from safediffcon.data import save_h5

    rd = open_run_dir("safediffcon", opts)
    rd.write_config(asdict(opts))
    sizes = {}
    for split in SPLITS:
        d = _split(opts.config, split, opts.seed, device)
        save_h5(rd.path / f"burgers_{split}.h5", split, d, dt=opts.config.dt)
        sizes[split] = {"n": len(d), "unsafe": float((d.s > opts.config.u_bound**2).float().mean())}
    rd.write_json("summary.json", sizes)
    rd.write_env(device=str(device))
    if not opts.quiet:
        print(json.dumps(sizes), f"\nwritten to {rd.target}")
    return 0


def pretrain(opts: PretrainOptions) -> int:
    cfg = checked(opts.config)  # before any heavy import
    device = _device(opts)
    from icml25.seeding import seed_everything

    from safediffcon.method import SafeDiffCon

    train = _data(opts, "train", device)
    seed_everything(opts.seed)
    rd = open_run_dir("safediffcon", opts)
    rd.write_config(asdict(opts))
    model = SafeDiffCon(**cfg.model_kwargs(opts.seed), device=device)
    losses = model.pretrain(train, steps=cfg.pretrain_steps, batch_size=cfg.batch_size, lr=cfg.pretrain_lr)
    for i in range(0, len(losses), max(1, len(losses) // 100)):
        rd.log(i, loss=losses[i])
    model.save(rd.path / "model")
    rd.write_env(device=str(device))
    if not opts.quiet:
        print(f"pretrained {cfg.pretrain_steps} steps, final loss {losses[-1]:.4f}; saved to {rd.target / 'model'}")
    return 0


def post_train(opts: PostTrainOptions) -> int:
    cfg = checked(opts.config)  # before any heavy import
    device = _device(opts)
    model = _model(opts.model, device)
    train, cal = _data(opts, "train", device), _data(opts, "cal", device)
    rd = open_run_dir("safediffcon", opts)
    rd.write_config(asdict(opts))
    qs = model.post_train(train, cal, epochs=cfg.post_epochs, steps_per_epoch=cfg.post_steps,
                          batch_size=cfg.batch_size, lr=cfg.post_lr)
    model.save(rd.path / "model")
    rd.write_json("summary.json", {"Q_per_epoch": qs})
    rd.write_env(device=str(device))
    if not opts.quiet:
        print(f"post-trained; Q per epoch {qs}; saved to {rd.target / 'model'}")
    return 0


def control(opts: ControlOptions) -> int:
    cfg = checked(opts.config)  # before any heavy import
    import numpy as np

    from safediffcon.metrics import evaluate_control

    device = _device(opts)
    model = _model(opts.model, device)
    test, cal = _data(opts, "test", device), _data(opts, "cal", device)
    model._check_conditions(test.u0, test.u_target)
    rd = open_run_dir("safediffcon", opts)
    rd.write_config(asdict(opts))
    lam_w = model.guidance_lambda if cfg.infft_tie_lambda else None
    qs = model.fine_tune(test.u0, test.u_target, cal, iters=cfg.infft_iters, lr=cfg.infft_lr, extra_Q=model.Q,
                         weight_lambda=lam_w) if cfg.infft_iters > 0 and opts.guidance else []
    f = model.control(test.u0, test.u_target, guidance=opts.guidance)
    np.savez(rd.path / "controls.npz", u0=test.u0.numpy(), u_target=test.u_target.numpy(), f=f.numpy())
    metrics = evaluate_control(test.u0, f, test.u_target, nu=model.nu, dt=model.dt, u_bound=model.u_bound,
                               device=device)
    metrics.update({"Q": model.Q, "infft_Q": qs})
    rd.write_json("metrics.json", metrics)
    rd.write_env(device=str(device))
    if not opts.quiet:
        print(json.dumps(metrics), f"\nwritten to {rd.target}")
    return 0


def _read_controls(p: Path) -> dict:
    """The arrays u0, u_target, f of a ``--controls`` .npz; every error names the flag and the file
    (:func:`icml25.errors.read_npz`)."""
    from icml25.errors import read_npz

    from safediffcon.errors import SafediffconError

    return read_npz(p, what="--controls", keys=("u0", "u_target", "f"), error=SafediffconError,
                    hint="the controls.npz written by `safediffcon control`")


def evaluate(opts: EvaluateOptions) -> int:
    """Re-simulate the controls and write config.json, env.json and evaluation.json (J, R_p, R_t, R_s) to --out."""
    cfg = checked(opts.config)  # before any heavy import
    device = _device(opts)
    arrays = _read_controls(Path(opts.controls))
    import torch

    from safediffcon.errors import SafediffconError
    from safediffcon.metrics import evaluate_control

    u0, ut, f = (torch.as_tensor(arrays[k], dtype=torch.float32) for k in ("u0", "u_target", "f"))
    if ut.shape != u0.shape:
        raise SafediffconError(f"--controls: u_target {tuple(ut.shape)} must have the shape of u0 {tuple(u0.shape)}")
    if not torch.isfinite(ut).all():
        raise SafediffconError("--controls: u_target must be finite (found NaN or inf)")
    metrics = evaluate_control(u0, f, ut, nu=cfg.nu, dt=cfg.dt, u_bound=cfg.u_bound,
                               device=device)  # checks f's shape too
    rd = open_run_dir("safediffcon", opts)  # --out was checked before the work (method_main)
    rd.write_config(asdict(opts))
    rd.write_env(device=str(device))
    rd.write_json("evaluation.json", metrics)
    if not opts.quiet:
        print(json.dumps(metrics), f"\nwritten to {rd.target}")
    return 0


@dataclass(frozen=True)
class SdcReproduceOptions(ReproduceOptions):
    """Run SafeDiffCon, its baselines and the trivial controls side by side and measure the paper's claims."""

    task: Literal["nx64", "nx128"] = "nx64"
    """nx64: the note's coarse grid (nx 64, dt 1e-3; the committed full run); nx128: the official grid nx 128 with
    dt 1e-3 (a sub-run: 5 seeds, released-code options on the first seed only, no safety-row-mask pretraining)."""


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {
        "make-data": (MakeDataOptions, make_data),
        "pretrain": (PretrainOptions, pretrain),
        "post-train": (PostTrainOptions, post_train),
        "control": (ControlOptions, control),
        "evaluate": (EvaluateOptions, evaluate),
        "reproduce": (SdcReproduceOptions, reproduce_command(METHOD, by_task="safediffcon.reproduce:reproduce")),
    }, argv=argv)
