"""Command line of lift: ``lift train``, ``lift evaluate``, ``lift reproduce [--quick] [--task main|mul]``.

``--model`` is ``tiny`` (the offline tiny Llama pretrained on 2-digit addition, cached), a local
``save_pretrained`` folder, or a Hugging Face model id (needs the network).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from icml25.cli_helpers import CommonOptions, ReproduceOptions, method_main, open_run_dir, reproduce_command

from lift import config as _config
from lift.checks import check_budget, check_hparams, check_int, flag
from lift.errors import LiftConfigError
from lift.registry import METHOD


@dataclass(frozen=True)
class TrainConfig(CommonOptions):
    """Fine-tune a causal LM with LIFT (SparseAdamW on principal weights) and save it."""

    PRESETS = {"cpu": _config.cpu, "paper": _config.paper}  # lift.config.TrainPreset: this command's own fields

    model: str = "tiny"
    """'tiny' (offline tiny Llama pretrained on addition), a local save_pretrained folder, or a HF model id."""
    task: str = "mul"
    """Synthetic test-bed task to fine-tune on (add, sub, mul, add_scratchpad, reverse, sort, count)."""
    data: Path | None = None
    """JSONL file with {"prompt": ..., "answer": ...} per line (overrides --task)."""
    n_train: int = 2000
    """Number of synthetic training examples (with --task)."""
    steps: int = 300
    """Optimizer steps."""
    batch_size: int = 64
    """Micro-batch size."""
    grad_accum: int = 1
    """Gradient-accumulation micro-batches per optimizer step (mask schedule counts optimizer steps)."""
    lr: float = 3e-3
    """Learning rate (linear decay, 3% warm-up)."""
    filter_rank: int = 8
    """r_f: rank of the low-rank filter."""
    budget_rank: int = 4
    """r_b: k = (m+n) r_b trainable entries per matrix (LoRA's parameter count at rank r_b)."""
    density: float | None = None
    """Alternative budget: fraction of entries per matrix, in (0, 1]; when set it replaces --budget-rank."""
    update_interval: int = 25
    """Recompute the masks every this many optimizer steps."""
    betas: tuple[float, float] = (0.9, 0.95)
    """Adam betas."""
    eps: float = 1e-6
    """Adam eps (added to sqrt(v), HF style); 1e-6 is the released SparseAdamW's default."""
    sparse_grads: bool = True
    """Keep only the k masked entries of each gradient (--no-sparse-grads: dense gradients, as the official code)."""
    weight_decay: float = 0.0
    """Decoupled weight decay on the masked entries."""
    mask_type: Literal["principal", "magnitude", "random", "stable_rank", "gradient", "momentum",
                       "movement"] = "principal"
    """principal = LIFT; the others are the official code's baseline masks (gradient/momentum/movement: from
    training statistics, random until the first refresh)."""
    selection: Literal["largest", "smallest"] = "largest"
    """largest = paper; smallest = what the released official scripts select."""
    svd: Literal["auto", "exact", "randomized"] = "auto"
    """SVD of the low-rank filter (auto: randomized when min(m, n) > 1024)."""


@dataclass(frozen=True)
class EvaluateConfig(CommonOptions):
    """Greedy exact-match accuracy of a (fine-tuned) model on a task."""

    model: str = "tiny"
    """'tiny', a local folder written by `lift train` (its model/ subfolder), or a HF model id."""
    task: str = "mul"
    """Synthetic task (held-out operands: split 'test')."""
    data: Path | None = None
    """JSONL file with {"prompt": ..., "answer": ...} per line (overrides --task)."""
    n_eval: int = 400
    """Number of evaluation examples (with --task)."""


def _check_examples(task: str, data: Path | None) -> None:
    """--task must be a test-bed task unless --data is given; --data must be a file."""
    from icml25.testbeds.lm import TASKS  # numpy only, no torch

    if data is not None:
        if not Path(data).is_file():
            raise LiftConfigError(f"--data {str(data)!r} is not a file (JSONL with {{\"prompt\": ..., \"answer\": ...}} "
                                  "per line)")
    elif task not in TASKS:
        raise LiftConfigError(f"--task must be one of {', '.join(TASKS)} (or give --data FILE.jsonl); got {task!r}")


def _validate_train(cfg: TrainConfig) -> None:
    """Fail fast on bad arguments, naming the flag, before torch is imported and any model is loaded."""
    check_hparams(cfg.lr, cfg.betas, cfg.eps, cfg.weight_decay, flags=True)
    check_int(cfg.filter_rank, "--filter-rank", low=1)
    check_int(cfg.update_interval, "--update-interval", low=1)
    # --density, when set, replaces --budget-rank
    check_budget(None if cfg.density is not None else cfg.budget_rank, cfg.density, flags=True)
    for name in ("steps", "batch_size", "grad_accum", "n_train"):
        check_int(getattr(cfg, name), flag(name), low=1)
    _check_examples(cfg.task, cfg.data)


def train(cfg: TrainConfig) -> int:
    _validate_train(cfg)  # before the heavy imports: bad input fails in a fraction of a second

    import torch
    from icml25.device import resolve_device
    from icml25.seeding import seed_everything

    from lift.finetune import finetune
    from lift.models import exact_match_any, load_examples, load_model, save_model
    from lift.optim import SparseAdamW

    seed_everything(cfg.seed)
    torch.set_num_threads(min(2, torch.get_num_threads()))
    device = resolve_device(cfg.device)
    rank, world = _init_distributed(device)
    examples = load_examples(task=cfg.task, data=cfg.data, n=cfg.n_train, seed=cfg.seed, split="train")
    model, tok = load_model(cfg.model, device=device)
    opt = SparseAdamW(model, lr=cfg.lr, filter_rank=cfg.filter_rank,
                      budget_rank=None if cfg.density is not None else cfg.budget_rank,
                      density=cfg.density, update_interval=cfg.update_interval, betas=cfg.betas, eps=cfg.eps,
                      weight_decay=cfg.weight_decay, mask_type=cfg.mask_type, selection=cfg.selection, svd=cfg.svd,
                      seed=cfg.seed, sparse_grads=cfg.sparse_grads)
    rd = open_run_dir(METHOD.name, cfg) if rank == 0 else None
    if rd is not None:
        rd.write_config(cfg)
        rd.write_env(device=str(device))
    res = finetune(model, tok, examples, optimizer=opt, steps=cfg.steps, batch_size=cfg.batch_size,
                   grad_accum=cfg.grad_accum, seed=cfg.seed, progress=not cfg.quiet and rank == 0,
                   rank=rank, world_size=world)
    if rd is None:  # other ranks: the same weights as rank 0 (averaged gradients); rank 0 saves them
        return 0
    for i, loss in enumerate(res["losses"]):
        rd.log(i + 1, loss=loss)
    summary = {"final_loss": res["losses"][-1], "seconds": res["seconds"], "step_seconds": res["step_seconds"],
               "trainable_entries": opt.trainable_entries(), "optimizer_state_floats": opt.state_floats(),
               "mask_update_steps": opt.mask_update_steps, "memory_bytes": res["memory"], "processes": world}
    if cfg.data is None:
        summary["train_accuracy"] = exact_match_any(model, tok, examples[:200])
    save_model(rd.path / "model", model, tok, extra={"config": cfg, **summary})
    rd.write_json("train_summary.json", summary)
    if not cfg.quiet:
        print(f"final loss {summary['final_loss']:.4f}; {summary['trainable_entries']} trainable entries, "
              f"{summary['optimizer_state_floats']} optimizer-state floats; model saved to {rd.target / 'model'}")
    return 0


def _init_distributed(device: Any) -> tuple[int, int]:
    """``(rank, world_size)``; under ``accelerate launch`` / ``torchrun`` (``WORLD_SIZE`` > 1) join the process
    group (gloo on the CPU, nccl on CUDA). SparseAdamW then averages the gradients over the ranks."""
    import os

    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world < 2:
        return 0, 1
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("nccl" if getattr(device, "type", "cpu") == "cuda" else "gloo")
    return dist.get_rank(), dist.get_world_size()


def evaluate(cfg: EvaluateConfig) -> int:
    check_int(cfg.n_eval, "--n-eval", low=1)  # before the heavy imports
    _check_examples(cfg.task, cfg.data)

    import torch
    from icml25.device import resolve_device
    from icml25.io import atomic_write_json

    from lift.models import exact_match_any, load_examples, load_model

    torch.set_num_threads(min(2, torch.get_num_threads()))
    device = resolve_device(cfg.device)
    examples = load_examples(task=cfg.task, data=cfg.data, n=cfg.n_eval, seed=10_000 + cfg.seed, split="test")
    path = Path(cfg.model)
    model_id = str(path / "model") if (path / "model" / "config.json").exists() else cfg.model
    model, tok = load_model(model_id, device=device)
    acc = exact_match_any(model, tok, examples)
    result = {"model": cfg.model, "task": None if cfg.data else cfg.task, "data": cfg.data, "n": len(examples),
              "exact_match": acc}
    if cfg.out is not None:
        rd = open_run_dir(METHOD.name, cfg)  # --out was checked before the evaluation (method_main)
        rd.write_config(cfg)
        atomic_write_json(rd.path / "eval.json", result)
    if not cfg.quiet:
        print(f"exact match on {len(examples)} examples: {acc:.4f}")
    return 0


@dataclass(frozen=True)
class LiftReproduceOptions(ReproduceOptions):
    """Run LIFT and its baselines side by side and measure the paper's claims."""

    task: Literal["main", "mul"] = "main"
    """main: the committed full run (full: 2-digit subtraction target, 7 methods tuned alike with competence gates,
    rank sweep, memory; --quick/--smoke: multiplication, a plumbing check); mul: the harder target, 2-digit x
    1-digit multiplication in 2000 steps, Full FT / LoRA / LIFT / magnitude tuned alike, 5 seeds."""


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {"train": (TrainConfig, train), "evaluate": (EvaluateConfig, evaluate),
                                "reproduce": (LiftReproduceOptions, reproduce_command(METHOD, by_task="lift.reproduce:reproduce"))}, argv=argv)
