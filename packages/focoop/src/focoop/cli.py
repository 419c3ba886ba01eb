"""Command line of focoop: ``focoop run --engine inprocess|flower|flower-sim``, ``focoop prepare``, ``focoop reproduce``."""

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
    nested_config,
    reproduce_command,
)

from focoop import config as _config
from focoop.config import FedConfig, Federation
from focoop.registry import METHOD

_FEDERATION, _FEDERATION_DEFAULT = nested_config(Federation, Federation(), hide=("seed",),
                                                 aliases={"n_clients": ("--clients",)})
# the run's knobs; the federation's own fields come from --clients/--alpha/... above (one flag each)
_FED, _FED_DEFAULT = nested_config(FedConfig, FedConfig(),
                                   hide=("seed", "n_clients", "n_ctx", "n_ood"))


@dataclass(frozen=True)
class DataOptions(BaseOptions):
    """Benchmark and federation options shared by ``run`` and ``prepare``."""

    data: Path | None = None
    """Your own images: an ImageFolder-style tree with train/<class>/, test/<class>/ and ood/<set>/ (default: the
    generated shapes of the tiny-CLIP benchmark)."""
    neg_words: Path | None = None
    """Negative-word file for the OOD prompts / NegLabel columns with --data, one word a line (default: the built-in
    list of common nouns)."""
    clip_steps: int = 1000
    """Pretraining steps of the shared tiny CLIP (cached)."""
    clip_model: str | None = None
    """A real open_clip architecture (e.g. ViT-B-32, with --clip-checkpoint) or 'local-dir:/path' instead of the
    tiny CLIP; nothing is downloaded."""
    clip_checkpoint: str | None = None
    """Local weight file (.safetensors/.bin/.pt) for --clip-model."""
    synthetic: bool = False
    """Use the analytic synthetic features and a random open_clip text tower instead of the tiny CLIP."""
    federation: _FEDERATION = _FEDERATION_DEFAULT
    """How the benchmark is cut into clients (focoop.config.Federation)."""

    def fed_split(self) -> Federation:
        """The plain :class:`Federation` with this command's ``--seed``."""
        return self.federation.resolve(seed=self.seed)


@dataclass(frozen=True)
class RunOptions(DataOptions, CommonOptions):
    """Train one method federatedly and evaluate every client (ACC, CACC, FPR95, AUROC)."""

    PRESETS = {"cpu": _config.cpu, "paper": _config.paper}  # focoop.config.RunPreset: federation + fed

    engine: Literal["inprocess", "flower", "flower-sim"] = "inprocess"
    """inprocess loop; flower = Flower ClientApp + FedAvg-subclass strategy on an in-process Grid; flower-sim =
    Flower's simulation engine (Ray)."""
    fed: _FED = _FED_DEFAULT
    """The method and its training (focoop.config.FedConfig)."""


@dataclass(frozen=True)
class PrepareOptions(DataOptions):
    """Encode the benchmark and write a federation setup file for a deployed Flower app (``setup-path``)."""


def check_data_options(opts: DataOptions) -> None:
    """Refuse bad data options from the options alone (file tree and word file only; no torch import)."""
    from focoop.errors import FOCoOpConfigError

    if opts.clip_checkpoint is not None and opts.clip_model is None:
        raise FOCoOpConfigError("clip_checkpoint needs clip_model (the open_clip architecture it belongs to)")
    fs = opts.fed_split().validate(flags=True)
    if opts.data is not None:
        from focoop.realdata import check_image_folder, read_words

        if opts.synthetic:
            raise FOCoOpConfigError("--synthetic and --data exclude each other")
        if fs.split == "domain":
            raise FOCoOpConfigError("--split domain needs the generated shapes; with --data use dirichlet or "
                                    "pathological")
        tree = check_image_folder(opts.data)
        if fs.split == "pathological" and fs.classes_per_client > len(tree["classes"]):
            raise FOCoOpConfigError(f"--classes-per-client must be <= the {len(tree['classes'])} classes of --data")
        read_words(opts.neg_words)
    elif opts.neg_words is not None:
        raise FOCoOpConfigError("--neg-words is for --data (the generated shapes use the tiny CLIP's own word pool)")
    if opts.synthetic and fs.split != "dirichlet":
        raise FOCoOpConfigError("--synthetic supports --split dirichlet only")


def _bundle(opts: DataOptions):
    from focoop.data import load_tiny_clip

    if opts.clip_model is not None:
        from icml25.testbeds.clip import load_open_clip

        return load_open_clip(opts.clip_model, opts.clip_checkpoint)
    return load_tiny_clip(steps=opts.clip_steps)


def _setup(opts: DataOptions):
    import torch

    check_data_options(opts)
    fs = opts.fed_split()
    torch.set_num_threads(1)  # tiny ops: one thread avoids OpenMP spin on shared cores
    if opts.synthetic:
        from focoop.synthetic import synthetic_setup

        return synthetic_setup(n_clients=fs.n_clients, alpha=fs.alpha, num_shot=fs.num_shot, seed=fs.seed,
                               n_ctx=fs.n_ctx)
    bundle = _bundle(opts)
    if opts.data is not None:
        from focoop.realdata import image_folder_federation

        return image_folder_federation(bundle, opts.data, words_file=opts.neg_words, **fs.to_kwargs())
    from focoop.data import encode_benchmark, make_federation

    bench = encode_benchmark(bundle, domains=fs.split == "domain")
    return make_federation(bundle, bench, **fs.to_kwargs())


def _fed_config(opts: RunOptions) -> FedConfig:
    fs = opts.fed_split()
    return opts.fed.resolve(seed=fs.seed, n_clients=fs.n_clients, n_ctx=fs.n_ctx, n_ood=fs.n_ood).validate()


def run(opts: RunOptions) -> int:
    from dataclasses import asdict

    check_data_options(opts)  # validate everything before the heavy imports and the (slow) data step
    cfg = _fed_config(opts)
    if opts.engine != "inprocess" and opts.device not in ("auto", "cpu"):
        from focoop.errors import FOCoOpConfigError

        raise FOCoOpConfigError(f"--device {opts.device} is for --engine inprocess (the Flower engines run on the CPU)")
    from icml25.checkpoint import save_tensors
    from icml25.cli_helpers import open_run_dir

    from focoop.engine import run_inprocess

    rd = open_run_dir(METHOD.name, opts)
    rd.write_config(asdict(opts) | {"fed_config": cfg.to_dict()})
    setup = _setup(opts)
    from icml25.device import resolve_device

    device = resolve_device(opts.device if opts.engine == "inprocess" else "cpu")
    if opts.engine == "inprocess":
        res = run_inprocess(setup, cfg, progress=not opts.quiet, device=device)
    elif opts.engine == "flower":
        from focoop.flower import run_flower_local

        res = run_flower_local(setup, cfg)
    else:
        from focoop.flower import run_flower_simulation

        path = setup.save(rd.path / "federation.safetensors")
        res = run_flower_simulation(path, cfg, result_path=rd.path / "flower_result.safetensors")
    for row in res.history:
        rd.log(int(row["round"]), **{k: v for k, v in row.items() if k != "round"})
    summary = res.summary()
    rd.write_json("results.json", {"method": cfg.method, "engine": res.engine, "summary": summary,
                                   "data": str(opts.data) if opts.data else "generated shapes (tiny-CLIP benchmark)",
                                   "split": opts.fed_split().split, "neg_words": setup.neg_words,
                                   "per_client": res.per_client, "seconds": res.seconds,
                                   "seconds_per_round": res.seconds_per_round})
    if res.global_state:
        save_tensors(rd.path / "global_prompts.safetensors", res.global_state)
    rd.write_env(device=str(device))
    if not opts.quiet:
        keys = ("acc", "cacc", "fpr95", "auroc")
        print(" ".join(f"{k}={summary[k]:.4f}±{summary[k + '_std']:.4f}" for k in keys))
        print(f"{res.engine}: {res.seconds_per_round:.3f} s/round; results in {rd.target}")
    return 0


def prepare(opts: PrepareOptions) -> int:
    check_data_options(opts)
    from icml25.cli_helpers import open_run_dir

    rd = open_run_dir(METHOD.name, opts)
    _setup(opts).save(rd.path / "federation.safetensors")
    if not opts.quiet:
        print(f"federation setup written to {rd.target / 'federation.safetensors'}; set setup-path in your Flower "
              "app config")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {"run": (RunOptions, run), "prepare": (PrepareOptions, prepare),
                                "reproduce": (ReproduceOptions, reproduce_command(METHOD))}, argv=argv)
