"""Command line of focoop: ``focoop run --engine inprocess|flower|flower-sim``, ``focoop prepare``, ``focoop reproduce``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from icml25.cli_helpers import BaseOptions, ReproduceOptions, method_main, reproduce_command

from focoop.registry import METHOD


@dataclass(frozen=True)
class DataOptions(BaseOptions):
    """Benchmark and federation options shared by ``run`` and ``prepare``."""

    method: Literal["zeroshot", "promptfl", "promptfolio", "fedotp", "fedpgp", "focoop", "focoop_no_dro",
                    "focoop_no_ot", "focoop_no_oodp"] = "focoop"
    """Method preset (FOCoOp, its ablations, or a baseline)."""
    data: Path | None = None
    """Your own images: an ImageFolder-style tree with train/<class>/, test/<class>/ and ood/<set>/ (default: the
    generated shapes of the tiny-CLIP benchmark)."""
    neg_words: Path | None = None
    """Negative-word file for the OOD prompts / NegLabel columns with --data, one word a line (default: the built-in
    list of common nouns)."""
    split: Literal["dirichlet", "pathological", "domain"] = "dirichlet"
    """Client split: dirichlet (label skew, --alpha), pathological (--classes-per-client classes each) or domain
    (each client sees its own corruption of the shapes; not with --data)."""
    classes_per_client: int = 2
    """Classes per client of the pathological split."""
    clients: int = 10
    """Number of clients."""
    alpha: float = 0.1
    """Dirichlet concentration of the label split (> 0; smaller = more heterogeneous)."""
    num_shot: int = 8
    """Training shots per present class per client."""
    n_ctx: int = 4
    """Learned context vectors per prompt (official 16; the tiny CLIP's context length is 16)."""
    n_ood: int = 10
    """OOD prompts / negative words K (at most the size of the word pool)."""
    clip_steps: int = 1000
    """Pretraining steps of the shared tiny CLIP (cached)."""
    clip_model: str | None = None
    """A real open_clip architecture (e.g. ViT-B-32, with --clip-checkpoint) or 'local-dir:/path' instead of the
    tiny CLIP; nothing is downloaded."""
    clip_checkpoint: str | None = None
    """Local weight file (.safetensors/.bin/.pt) for --clip-model."""
    synthetic: bool = False
    """Use the analytic synthetic features and a random open_clip text tower instead of the tiny CLIP."""


@dataclass(frozen=True)
class RunOptions(DataOptions):
    """Train one method federatedly and evaluate every client (ACC, CACC, FPR95, AUROC)."""

    engine: Literal["inprocess", "flower", "flower-sim"] = "inprocess"
    """inprocess loop; flower = Flower ClientApp + FedAvg-subclass strategy on an in-process Grid; flower-sim =
    Flower's simulation engine (Ray)."""
    rounds: int = 10
    """Communication rounds."""
    local_epochs: int = 2
    """Local epochs per round."""
    lr: float = 2e-2
    """SGD learning rate (plain SGD, as the official FOCoOp client)."""
    frac: float | None = None
    """Weight of the global part in the mix, in [0, 1] (default 0.2 for FOCoOp, 0.8 for PromptFolio)."""
    tau: float = 0.1
    """KL-DRO temperature factor (t = tau * gamma_2, > 0)."""
    adv_step: float = 1e-3
    """Step of the feature-space adversary (official code: 1.0)."""
    gamma_floor: float = 0.1
    """Positive floor of the DRO multipliers (the official 0 divides by zero)."""
    uot: Literal["semi", "official"] = "semi"
    """semi: semi-relaxed Sinkhorn UOT (ID marginal exact); official: mm_unbalanced with both marginals relaxed."""
    reg_m: float = 0.1
    """Marginal relaxation of the UOT (finite, > 0)."""
    ema: float = 0.5
    """Calibration EMA of the global prompts, in [0, 1]."""
    normalize_plan: bool = True
    """Column-normalised barycentric calibration (False = the official raw product)."""
    ood_selection: Literal["per_slot", "official"] = "per_slot"
    """How the server picks new OOD prompts (per_slot keeps context-word pairs)."""
    score: Literal["msp", "energy", "neglabel"] = "msp"
    """OOD score."""
    neg_columns: bool = False
    """Score a method without learned OOD prompts (baselines, zero-shot) with the negative words' zero-shot text
    features as extra columns (NegLabel-style), like FOCoOp's OOD-prompt columns."""
    official_metrics: bool = False
    """Use the official code's FPR95 (FNR at 5 % FPR) and all-column scores."""


@dataclass(frozen=True)
class PrepareOptions(DataOptions):
    """Encode the benchmark and write a federation setup file for a deployed Flower app (``setup-path``)."""


def check_data_options(opts: DataOptions) -> None:
    """Refuse bad data options from the options alone (file tree and word file only; no torch import)."""
    from focoop.errors import FOCoOpConfigError

    if opts.clip_checkpoint is not None and opts.clip_model is None:
        raise FOCoOpConfigError("clip_checkpoint needs clip_model (the open_clip architecture it belongs to)")
    if opts.clients < 1:
        raise FOCoOpConfigError(f"--clients must be >= 1, got {opts.clients}")
    if opts.classes_per_client < 1:
        raise FOCoOpConfigError(f"--classes-per-client must be >= 1, got {opts.classes_per_client}")
    if opts.data is not None:
        from focoop.realdata import check_image_folder, read_words

        if opts.synthetic:
            raise FOCoOpConfigError("--synthetic and --data exclude each other")
        if opts.split == "domain":
            raise FOCoOpConfigError("--split domain needs the generated shapes; with --data use dirichlet or "
                                    "pathological")
        tree = check_image_folder(opts.data)
        if opts.split == "pathological" and opts.classes_per_client > len(tree["classes"]):
            raise FOCoOpConfigError(f"--classes-per-client must be <= the {len(tree['classes'])} classes of --data")
        read_words(opts.neg_words)
    elif opts.neg_words is not None:
        raise FOCoOpConfigError("--neg-words is for --data (the generated shapes use the tiny CLIP's own word pool)")
    if opts.synthetic and opts.split != "dirichlet":
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
    torch.set_num_threads(1)  # tiny ops: one thread avoids OpenMP spin on shared cores
    if opts.synthetic:
        from focoop.synthetic import synthetic_setup

        return synthetic_setup(n_clients=opts.clients, alpha=opts.alpha, num_shot=opts.num_shot, seed=opts.seed,
                               n_ctx=opts.n_ctx)
    bundle = _bundle(opts)
    if opts.data is not None:
        from focoop.realdata import image_folder_federation

        return image_folder_federation(bundle, opts.data, words_file=opts.neg_words, n_clients=opts.clients,
                                       alpha=opts.alpha, num_shot=opts.num_shot, seed=opts.seed, n_ctx=opts.n_ctx,
                                       n_ood=opts.n_ood, split=opts.split,
                                       classes_per_client=opts.classes_per_client)
    from focoop.data import encode_benchmark, make_federation

    bench = encode_benchmark(bundle, domains=opts.split == "domain")
    return make_federation(bundle, bench, n_clients=opts.clients, alpha=opts.alpha, num_shot=opts.num_shot,
                           seed=opts.seed, n_ctx=opts.n_ctx, n_ood=opts.n_ood, split=opts.split,
                           classes_per_client=opts.classes_per_client)


def _fed_config(opts: RunOptions):
    from focoop.config import FedConfig

    return FedConfig(method=opts.method, n_clients=opts.clients, rounds=opts.rounds, local_epochs=opts.local_epochs,
                     lr=opts.lr, alpha=opts.alpha, num_shot=opts.num_shot, seed=opts.seed, n_ctx=opts.n_ctx,
                     n_ood=opts.n_ood, frac=opts.frac, tau=opts.tau, adv_step=opts.adv_step,
                     gamma_floor=opts.gamma_floor, uot=opts.uot, reg_m=opts.reg_m, ema=opts.ema,
                     normalize_plan=opts.normalize_plan, ood_selection=opts.ood_selection, score=opts.score,
                     neg_columns=opts.neg_columns, official_metrics=opts.official_metrics).validate()


def run(opts: RunOptions) -> int:
    from dataclasses import asdict

    check_data_options(opts)  # validate everything before the heavy imports and the (slow) data step
    cfg = _fed_config(opts)
    from icml25.checkpoint import save_tensors
    from icml25.cli_helpers import open_run_dir

    from focoop.engine import run_inprocess

    rd = open_run_dir(METHOD.name, opts)
    rd.write_config(asdict(opts) | {"fed_config": cfg.to_dict()})
    setup = _setup(opts)
    if opts.engine == "inprocess":
        res = run_inprocess(setup, cfg, progress=not opts.quiet)
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
                                   "split": opts.split, "neg_words": setup.neg_words,
                                   "per_client": res.per_client, "seconds": res.seconds,
                                   "seconds_per_round": res.seconds_per_round})
    if res.global_state:
        save_tensors(rd.path / "global_prompts.safetensors", res.global_state)
    rd.write_env(device="cpu")
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
