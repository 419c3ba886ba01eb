"""Command line of relgnn: ``relgnn train | evaluate | reproduce [--quick]``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
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

from relgnn.config import FitConfig
from relgnn.registry import METHOD

_FIT, _FIT_DEFAULT = nested_config(FitConfig, FitConfig.cpu(), hide=("seed",))


@dataclass(frozen=True)
class TrainConfig(CommonOptions):
    """Train RelGNN (or a baseline) on a RelBench task and save the best-validation model."""

    PRESETS = {"cpu": FitConfig.cpu, "paper": FitConfig.paper}
    PRESET_FIELD = "fit"

    dataset: str = "synthetic"
    """'synthetic' (generated locally), a RelBench dataset name such as 'rel-f1' (hosted: needs the network), a Hub
    'org/repo/subdir', or a local folder with manifest.yaml + parquet."""
    task: str = "user-churn"
    """Task name (synthetic: user-churn, user-ltv, user-item-purchase, post-reply; rel-f1: driver-top3, ...)."""
    num_users: int = 200
    """Synthetic database: number of users."""
    num_items: int = 80
    """Synthetic database: number of items."""
    num_windows: int = 16
    """Synthetic database: number of 30-day windows."""
    threads: int = 1
    """torch threads (at most 2 on the shared machine)."""
    text_model: Path | None = None
    """A local sentence-transformers model folder that embeds --text-columns (RelBench's text_embedded columns;
    needs relgnn[text]; nothing is downloaded)."""
    text_columns: tuple[str, ...] = ()
    """Text columns to embed with --text-model, as table.column (e.g. review.text)."""
    dangling_fk: Literal["drop", "error"] = "drop"
    """A non-null foreign key that is not a key of its parent table: 'drop' its edge with a warning naming table
    and column (RelBench drops them too), or 'error'."""
    nonfinite: Literal["error", "missing"] = "error"
    """An infinite numeric feature value: 'error' (naming table and column) or 'missing' (imputed like NaN with the
    fitting mean)."""
    ddp: bool = False
    """Data-parallel training, torch DDP with gloo on CPU (relgnn.distributed): under `torchrun --nproc-per-node N
    -m relgnn train --ddp ...` the process group comes from torchrun; otherwise --ddp-procs local processes are
    started. Each process samples its shard of every global batch; process 0 evaluates and writes the run."""
    ddp_procs: int = 2
    """Local processes started by --ddp when not under torchrun."""
    fit: _FIT = _FIT_DEFAULT
    """The model and its training (relgnn.config.FitConfig; defaults: FitConfig.cpu(), --preset paper:
    FitConfig.paper())."""


@dataclass(frozen=True)
class EvaluateConfig(BaseOptions):
    """Evaluate a model saved by ``relgnn train`` on a split of its task; written to evaluation.json in --out."""

    run: Path = Path("runs/relgnn/latest")
    """Run directory written by ``relgnn train`` (holds model.safetensors + model_config.json)."""
    split: Literal["val", "test"] = "test"
    """Split to evaluate."""


_DATA_KEYS = ("dataset", "task", "num_users", "num_items", "num_windows", "seed")


def _fit_cfg(conf: dict) -> FitConfig:
    """The FitConfig saved in a run's model_config.json (the keys of ``FitConfig``, flat beside the data keys)."""
    kw = {f.name: conf[f.name] for f in fields(FitConfig) if f.name in conf}
    kw["num_neighbors"] = tuple(int(x) for x in kw.get("num_neighbors", FitConfig.num_neighbors))
    return FitConfig(**kw)


def _prepare(cfg: dict):
    from relgnn.data import load_task
    from relgnn.graph import build_graph
    from relgnn.train import prepare_task

    task, _ = load_task(cfg["dataset"], cfg["task"], num_users=cfg["num_users"], num_items=cfg["num_items"],
                        num_windows=cfg["num_windows"], data_seed=cfg["seed"])
    text = {}
    for tc in cfg.get("text_columns") or ():
        table, col = tc.split(".", 1)
        text.setdefault(table, []).append(col)
    embed = None
    if cfg.get("text_model"):
        from relgnn.text import sentence_transformer_embedder

        embed = sentence_transformer_embedder(cfg["text_model"])
    graph = build_graph(task.get_db(), text_columns=text, text_embedder=embed,
                        dangling_fk=cfg.get("dangling_fk", "drop"), nonfinite=cfg.get("nonfinite", "error"))
    return graph, prepare_task(task, graph)


def train(cfg: TrainConfig) -> int:
    from icml25.errors import check_positive

    # every argument is checked before the heavy imports (torch, torch_geometric, relbench)
    check_positive(cfg, "num_users", "num_items", "num_windows", "threads", prefix="--")
    fc = cfg.fit.resolve(seed=cfg.seed).validate(flags=True)
    if cfg.dataset == "synthetic":
        from relgnn.synthetic import TASKS

        if cfg.task not in TASKS:
            raise ValueError(f"--task must be one of {sorted(TASKS)} for the synthetic dataset, got {cfg.task!r}")

    if bool(cfg.text_columns) != (cfg.text_model is not None):
        raise ValueError("--text-model and --text-columns go together (a local sentence-transformers folder and the "
                         "table.column names it embeds)")
    bad = [tc for tc in cfg.text_columns if tc.count(".") < 1 or tc.startswith(".") or tc.endswith(".")]
    if bad:
        raise ValueError(f"--text-columns must be table.column names, got {bad}")
    if cfg.text_model is not None and not cfg.text_model.is_dir():
        raise ValueError(f"--text-model {str(cfg.text_model)!r} is not a local folder (nothing is downloaded)")
    if cfg.ddp:
        check_positive(cfg, "ddp_procs", prefix="--")
        if cfg.device not in ("auto", "cpu"):
            raise ValueError(f"--ddp trains on the CPU (gloo); it does not take --device {cfg.device}")
        if fc.simplified_mp or fc.sampling != "sampled":
            raise ValueError("--ddp needs --sampling sampled and no --simplified-mp (a sharded batch must equal the "
                             "global one)")
    torchrun = cfg.ddp and "WORLD_SIZE" in os.environ
    rank = int(os.environ.get("RANK", "0")) if torchrun else 0

    import torch
    from icml25.checkpoint import save_model
    from icml25.device import resolve_device

    from relgnn.train import fit
    device = resolve_device("cpu" if cfg.ddp else cfg.device)
    torch.set_num_threads(min(cfg.threads, 2))
    # model_config.json: the data keys and FitConfig's fields side by side (flat, as `relgnn evaluate` reads them)
    conf = {k: getattr(cfg, k) for k in _DATA_KEYS} | asdict(fc) | {
        "threads": cfg.threads, "text_model": str(cfg.text_model) if cfg.text_model else None,
        "text_columns": list(cfg.text_columns), "dangling_fk": cfg.dangling_fk, "nonfinite": cfg.nonfinite}
    rd = open_run_dir("relgnn", cfg) if rank == 0 else None  # under torchrun only process 0 writes
    if rd is not None:
        rd.write_config(conf | {"ddp": cfg.ddp, "ddp_procs": cfg.ddp_procs})
        rd.write_env(device=str(device))
    graph, td = _prepare(conf)
    if torchrun:
        import torch.distributed as dist

        from relgnn.distributed import fit_distributed

        dist.init_process_group("gloo")
        try:
            res = fit_distributed(graph, td, fc)
        finally:
            dist.destroy_process_group()
        if rd is None:
            return 0
    elif cfg.ddp:
        import tempfile

        from relgnn.distributed import spawn_fit

        with tempfile.TemporaryDirectory() as tmp:
            res = spawn_fit(graph, td, fc, world_size=cfg.ddp_procs, workdir=tmp)
    else:
        res = fit(graph, td, fc, device=device)
    for epoch, v in enumerate(res.val_curve):
        rd.log(epoch, **{f"val_{td.metric}": v})
    save_model(rd.path, res.model.cpu(), conf)
    summary = {"metric": res.metric, "val": res.val, "test": res.test, "best_epoch": res.best_epoch,
               "seconds_per_epoch": sum(res.epoch_seconds) / len(res.epoch_seconds),
               "train_rows_per_s": res.train_rows_per_s, "infer_rows_per_s": res.infer_rows_per_s}
    val, test = res.val, res.test
    rd.write_json("summary.json", summary)
    if not cfg.quiet:
        print(f"{fc.gnn} L={fc.num_layers} on {cfg.dataset}/{cfg.task}: val {td.metric} {val:.4f}, "
              f"test {test:.4f}  -> {rd.target}")
    return 0


def evaluate(cfg: EvaluateConfig) -> int:
    import json

    from icml25.checkpoint import load_config

    if not (cfg.run / "model_config.json").exists():
        raise FileNotFoundError(f"--run {cfg.run}: no model_config.json there (write one with `relgnn train`)")
    conf = load_config(cfg.run, required=_DATA_KEYS + ("gnn", "channels", "num_layers"))  # checked before the heavy imports

    import torch
    from icml25.checkpoint import load_model

    from relgnn.train import build_model, evaluate_predictions, predict_split

    torch.set_num_threads(1)
    graph, td = _prepare(conf)
    fc = _fit_cfg(conf)
    model = load_model(cfg.run, lambda c: build_model(fc, graph, td)).eval()
    pred = predict_split(model, graph, td, cfg.split, fc)
    score = evaluate_predictions(td, cfg.split, pred, num_dst=graph.num_nodes(td.dst) if td.dst else None)
    out = {"split": cfg.split, "metric": td.metric, "value": score, "run": str(cfg.run)}
    rd = open_run_dir("relgnn", cfg)  # --out was checked before the work (method_main)
    rd.write_config(cfg)
    rd.write_env(device="cpu")
    rd.write_json("evaluation.json", out)
    if not cfg.quiet:
        print(json.dumps(out))
        print(f"written to {rd.target}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {"train": (TrainConfig, train), "evaluate": (EvaluateConfig, evaluate),
                                "reproduce": (ReproduceOptions, reproduce_command(METHOD))}, argv=argv)
