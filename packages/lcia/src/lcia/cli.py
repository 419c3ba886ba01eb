"""Command line of lcia: ``lcia train | evaluate | reproduce [--quick|--smoke]``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
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

from lcia.config import Config, cpu, paper
from lcia.errors import LciaError
from lcia.registry import METHOD


@dataclass(frozen=True)
class TrainOptions(CommonOptions):
    """Train one continual method on a task stream, task after task, and write the run folder (accuracy matrix,
    Avg/forgetting/BWT, the codebook and the LoRA adapters as safetensors)."""

    PRESETS = {"cpu": cpu, "paper": paper}
    PRESET_FIELD = "config"

    config: Config = cpu()
    """The method's configuration."""
    method: Literal["lcia", "dema", "fixed_ema", "sequential"] = "lcia"
    """Continual method."""
    tasks: Path | None = None
    """JSONL instruction data, one object per line with instruction, input, output (the Alpaca / CoIN shape) and
    optional task and split; checked before any model is built. Default: the synthetic five-task stream."""
    model: str = "tiny"
    """Base model: 'tiny' (the icml25 test-bed Llama, pre-trained and cached), a local folder with your own
    transformers causal-LM checkpoint (config.json, tokenizer, weights: what save_pretrained writes) or a hub id.
    Under ``accelerate launch`` (several processes) training is data-parallel: each process takes its share of every
    batch and steps on the mean gradient."""


@dataclass(frozen=True)
class EvaluateOptions(BaseOptions):
    """Evaluate a trained run (its adapters and codebook) on every task of a stream."""

    run: Path = Path("runs/lcia/latest")
    """Run folder written by `lcia train`."""
    tasks: Path | None = None
    """JSONL instruction data (instruction, input, output); default: the stream the run was trained on."""
    split: Literal["test", "val", "train"] = "test"
    """Split to score."""


def _stream(tasks: Path | None, cfg: Config, seed: int):
    from lcia.data import default_stream, load_jsonl_stream

    if tasks is not None:
        try:
            return load_jsonl_stream(tasks)
        except UnicodeDecodeError:
            raise LciaError(f"--tasks {str(tasks)!r} is not a UTF-8 text (JSONL) file") from None
        except LciaError as exc:
            raise LciaError(f"--tasks: {exc}") from None
    return default_stream(cfg.n_train, seed=seed, n_eval=cfg.n_eval, tasks=list(cfg.tasks))


def _base(model: str, cfg: Config, quiet: bool):
    from lcia.continual import load_base, tiny_base

    if model == "tiny":
        return tiny_base(cfg, progress=not quiet)
    if Path(model).exists() and not Path(model).is_dir():
        raise LciaError(f"--model {model!r} is a file; pass a model folder (config.json, tokenizer, weights), "
                        "'tiny' or a hub id")
    try:
        return load_base(model)
    except LciaError as exc:
        raise LciaError(f"--model: {exc}") from None
    except Exception as exc:  # a local folder that is not a model: tokenizer/config ValueError, corrupt weights
        if not Path(model).is_dir() or not (isinstance(exc, ValueError) or type(exc).__name__ == "SafetensorError"):
            raise
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise LciaError(f"--model {model!r} is not a loadable causal-LM folder (config.json, tokenizer, weights): "
                        f"{type(exc).__name__}: {why[:200]}") from None


def _accelerator(device: str):
    """An ``accelerate.Accelerator`` when launched with several processes, else None: ``accelerate launch
    --multi_gpu --num_processes 2 -m lcia train --device cpu ...`` (torchrun under the hood; on the CPU the
    processes talk through gloo) or ``torchrun --nproc_per_node 2 -m lcia train ...``."""
    import os

    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    import torch
    from accelerate import Accelerator

    # on the CPU (``--device cpu`` or no GPU) the processes talk through gloo (accelerate's MULTI_CPU)
    return Accelerator(cpu=device == "cpu" or not torch.cuda.is_available())


def train_command(opts: TrainOptions) -> int:
    from icml25.seeding import seed_everything

    from lcia.continual import check_fits, run_stream

    tasks = _stream(opts.tasks, opts.config, opts.seed)  # validated before any model is built
    seed_everything(opts.seed)
    accelerator = _accelerator(opts.device)
    main_process = accelerator is None or accelerator.is_main_process
    base, tok = _base(opts.model, opts.config, opts.quiet or not main_process)
    check_fits(tasks, base, tok)
    from icml25.device import resolve_device

    device = resolve_device(opts.device) if accelerator is None else accelerator.device
    if device.type != "cpu":
        import copy

        base = copy.deepcopy(base).to(device)  # the cached tiny base stays on the CPU
    r = run_stream(base, tok, tasks, opts.config, method=opts.method, seed=opts.seed, accelerator=accelerator)
    A, learner = r["acc"], r["learner"]
    world = 1 if accelerator is None else accelerator.num_processes
    spread = 0.0
    if world > 1:  # the processes must hold the same weights (they stepped on the same mean gradient)
        import torch

        flat = torch.cat([p.detach().reshape(-1).float() for n, p in learner.model.named_parameters()
                          if "lora_" in n])
        gathered = accelerator.gather(flat[None])
        spread = float((gathered - gathered[0]).abs().max())
        if not main_process:
            _end_processes(accelerator)
            return 0
    try:
        _write_train_run(opts, tasks, r, learner, A, world, spread, device)
    finally:
        if world > 1:
            _end_processes(accelerator)
    return 0


def _end_processes(accelerator) -> None:
    """Every process meets here, then the process group is destroyed: a rank that simply exits while gloo's threads
    still run aborts ("terminate called without an active exception", SIGABRT) and fails the whole launch."""
    import torch.distributed as dist

    accelerator.wait_for_everyone()
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def _write_train_run(opts, tasks, r, learner, A, world, spread, device) -> None:
    from lcia.metrics import average_accuracy, bwt, forgetting

    rd = open_run_dir(METHOD.name, opts)
    rd.write_env(device=str(device))
    results = {
        "method": opts.method, "tasks": [t.name for t in tasks],
        "accuracy_matrix": [[None if v != v else float(v) for v in row] for row in A],
        "avg": average_accuracy(A), "forgetting": forgetting(A), "bwt": bwt(A),
        "stages": [asdict(s) for s in r["stages"]], "adapters": learner.adapters,
        "world_size": world, "max_weight_difference_across_processes": spread,
    }
    rd.write_config({**json.loads(json.dumps(asdict(opts), default=str))})
    rd.write_json("results.json", results)
    learner.model.save_pretrained(str(rd.path / "adapters"))
    if learner.router is not None:
        learner.router.save(rd.path / "codebook.json")
    rd.write_json("task_groups.json", learner.task_groups)
    if not opts.quiet:
        print(f"{opts.method}: Avg {results['avg']:.3f}  forgetting {results['forgetting']:.3f}  "
              f"BWT {results['bwt']:.3f}")
        print(f"written to {rd.target}")


def evaluate_command(opts: EvaluateOptions) -> int:
    from icml25.errors import read_json

    from lcia.continual import ContinualLearner, check_fits
    from lcia.grouping import InstructionRouter

    run = Path(opts.run)
    if not run.is_dir():
        raise LciaError(f"--run {str(run)!r} is not a folder written by `lcia train`")
    conf = read_json(run / "config.json", what="run config", required=("config", "method", "model", "seed"))
    res = read_json(run / "results.json", what="run results", required=("adapters", "tasks"))
    try:
        cfg = Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in conf["config"].items()})
    except TypeError as exc:
        raise LciaError(f"{run / 'config.json'}: config has unknown or missing fields ({exc})") from None
    tasks_path = opts.tasks if opts.tasks is not None else (Path(conf["tasks"]) if conf.get("tasks") else None)
    tasks = _stream(tasks_path, cfg, int(conf["seed"]))
    base, tok = _base(conf["model"], cfg, opts.quiet)
    check_fits(tasks, base, tok)
    rd = open_run_dir(METHOD.name, opts)
    from peft import PeftModel

    learner = ContinualLearner(base, tok, cfg, conf["method"], seed=int(conf["seed"]))
    adapters_dir = run / "adapters"
    for i, name in enumerate(res["adapters"]):
        path = adapters_dir if name == "default" else adapters_dir / name
        if not (path / "adapter_config.json").is_file():
            raise LciaError(f"adapter {name!r} is missing from {str(adapters_dir)!r}")
        if i == 0:
            import copy

            learner.model = PeftModel.from_pretrained(copy.deepcopy(base), str(path), adapter_name=name)
        else:
            learner.model.load_adapter(str(path), adapter_name=name)
        learner.adapters.append(name)
    if conf["method"] == "lcia":
        learner.router = InstructionRouter.load(run / "codebook.json")
        learner.task_groups = read_json(run / "task_groups.json", what="task groups")
    accs = {t.name: learner.evaluate(getattr(t, opts.split), task=t.name) for t in tasks if getattr(t, opts.split)}
    rd.write_config({**json.loads(json.dumps(asdict(opts), default=str))})
    rd.write_json("evaluate.json", {"split": opts.split, "accuracy": accs,
                                    "avg": sum(accs.values()) / max(len(accs), 1)})
    if not opts.quiet:
        for k, v in accs.items():
            print(f"{k:>12s}  {v:.3f}")
        print(f"written to {rd.target}")
    return 0


@dataclass(frozen=True)
class LciaReproduceOptions(ReproduceOptions):
    """Run LCIA and its baselines side by side and measure the paper's claims (a fixed CPU-scale protocol, so there
    is no ``--device``)."""

    task: Literal["main", "larger"] = "main"
    """'main': every claim on the tiny Llama (the committed full run); 'larger': the same stream and claims on a
    wider test-bed Llama (hidden 192, 2 layers, 3 seeds; its pre-training is cached after the first run)."""


def reproduce_cmd(opts: LciaReproduceOptions) -> int:
    return reproduce_command(METHOD, by_task="lcia.reproduce:reproduce")(opts)


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {
        "train": (TrainOptions, train_command),
        "evaluate": (EvaluateOptions, evaluate_command),
        "reproduce": (LciaReproduceOptions, reproduce_cmd),
    }, argv=argv)


__all__ = ["main", "TrainOptions", "EvaluateOptions", "replace"]
