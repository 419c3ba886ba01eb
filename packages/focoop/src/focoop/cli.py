"""Command line of focoop: ``focoop run --engine inprocess|flower|flower-sim``, ``focoop prepare``, ``focoop reproduce``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from icml25.cli_helpers import CommonOptions, ReproduceOptions, method_main, reproduce_command

from focoop.registry import METHOD


@dataclass(frozen=True)
class DataOptions(CommonOptions):
    """Benchmark and federation options shared by ``run`` and ``prepare``."""

    method: Literal["zeroshot", "promptfl", "promptfolio", "focoop", "focoop_no_dro", "focoop_no_ot"] = "focoop"
    """Method preset (FOCoOp, its ablations, or a baseline)."""
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


def _setup(opts: DataOptions):
    import torch

    torch.set_num_threads(1)  # tiny ops: one thread avoids OpenMP spin on shared cores
    if opts.synthetic:
        from focoop.synthetic import synthetic_setup

        return synthetic_setup(n_clients=opts.clients, alpha=opts.alpha, num_shot=opts.num_shot, seed=opts.seed,
                               n_ctx=opts.n_ctx)
    from focoop.data import encode_benchmark, load_tiny_clip, make_federation

    if opts.clip_model is not None:
        from icml25.testbeds.clip import load_open_clip

        bundle = load_open_clip(opts.clip_model, opts.clip_checkpoint)
    elif opts.clip_checkpoint is not None:
        raise ValueError("clip_checkpoint needs clip_model (the open_clip architecture it belongs to)")
    else:
        bundle = load_tiny_clip(steps=opts.clip_steps)
    bench = encode_benchmark(bundle)
    return make_federation(bundle, bench, n_clients=opts.clients, alpha=opts.alpha, num_shot=opts.num_shot,
                           seed=opts.seed, n_ctx=opts.n_ctx, n_ood=opts.n_ood)


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

    from icml25.checkpoint import save_tensors
    from icml25.cli_helpers import open_run_dir

    from focoop.engine import run_inprocess

    if opts.clients < 1:
        raise ValueError(f"clients must be >= 1, got {opts.clients}")
    cfg = _fed_config(opts)  # validate before the (slow) data step
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
