"""Command line of relgnn: ``relgnn train | evaluate | reproduce [--quick]``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from icml25.cli_helpers import BaseOptions, ReproduceOptions, method_main, open_run_dir, reproduce_command

from relgnn.registry import METHOD


@dataclass(frozen=True)
class TrainConfig(BaseOptions):
    """Train RelGNN (or a baseline) on a RelBench task and save the best-validation model."""

    dataset: str = "synthetic"
    """'synthetic' (generated locally), a RelBench dataset name such as 'rel-f1' (hosted: needs the network), a Hub
    'org/repo/subdir', or a local folder with manifest.yaml + parquet."""
    task: str = "user-churn"
    """Task name (synthetic: user-churn, user-ltv, user-item-purchase, post-reply; rel-f1: driver-top3, ...)."""
    gnn: Literal["relgnn", "relgnn-mean", "sage", "sage-mean"] = "relgnn"
    """Model: RelGNN, its mean-instead-of-attention ablation, or RelBench's HeteroGraphSAGE (sum / mean)."""
    channels: int = 32
    """Hidden width C."""
    num_layers: int = 1
    """Number of message-passing layers L."""
    num_heads: int = 2
    """Attention heads H (RelGNN)."""
    epochs: int = 8
    """Training epochs."""
    lr: float = 0.01
    """Adam learning rate."""
    simplified_mp: bool = False
    """The official code's graph-level skip rule for empty routes (default: per-node semantics)."""
    route_aggr: Literal["sum", "mean"] = "sum"
    """How a node type combines the updates of its routes."""
    sampling: Literal["sampled", "full"] = "sampled"
    """'sampled': mini-batches of seed rows on temporal neighbour samples (RelBench's recipe, the default);
    'full': full-graph time snapshots, one step per training seed time (entity tasks only)."""
    num_neighbors: tuple[int, ...] = (128, 64)
    """Per-hop fan-out of the temporal sampler (one value per hop; RelBench / RelGNN default 128, 64)."""
    temporal_strategy: Literal["uniform", "last"] = "uniform"
    """Which visible neighbours the sampler keeps when there are more than the fan-out."""
    batch_size: int = 512
    """Seed rows per mini-batch."""
    max_steps_per_epoch: int = 2000
    """At most this many mini-batches per epoch (RelBench's cap)."""
    num_users: int = 200
    """Synthetic database: number of users."""
    num_items: int = 80
    """Synthetic database: number of items."""
    num_windows: int = 16
    """Synthetic database: number of 30-day windows."""
    threads: int = 1
    """torch threads (at most 2 on the shared machine)."""


@dataclass(frozen=True)
class EvaluateConfig(BaseOptions):
    """Evaluate a model saved by ``relgnn train`` on a split of its task."""

    run: Path = Path("runs/relgnn/latest")
    """Run directory written by ``relgnn train`` (holds model.safetensors + model_config.json)."""
    split: Literal["val", "test"] = "test"
    """Split to evaluate."""


_FIT_KEYS = ("gnn", "channels", "num_layers", "num_heads", "epochs", "lr", "simplified_mp", "route_aggr", "seed",
             "sampling", "num_neighbors", "temporal_strategy", "batch_size", "max_steps_per_epoch")
_CONFIG_KEYS = _FIT_KEYS + ("dataset", "task", "num_users", "num_items", "num_windows")


def _fit_cfg(cfg: dict):
    from relgnn.train import FitConfig

    kw = {k: cfg[k] for k in _FIT_KEYS}
    kw["num_neighbors"] = tuple(int(x) for x in kw["num_neighbors"])
    return FitConfig(**kw)


def _prepare(cfg: dict):
    from relgnn.data import load_task
    from relgnn.graph import build_graph
    from relgnn.train import prepare_task

    task, _ = load_task(cfg["dataset"], cfg["task"], num_users=cfg["num_users"], num_items=cfg["num_items"],
                        num_windows=cfg["num_windows"], data_seed=cfg["seed"])
    graph = build_graph(task.get_db())
    return graph, prepare_task(task, graph)


def train(cfg: TrainConfig) -> int:
    from icml25.errors import check_positive

    # every argument is checked before the heavy imports (torch, torch_geometric, relbench)
    check_positive(cfg, "channels", "num_layers", "num_heads", "epochs", "num_users", "num_items", "num_windows",
                   "threads", "batch_size", "max_steps_per_epoch", prefix="--")
    if not cfg.num_neighbors or any(int(k) <= 0 for k in cfg.num_neighbors):
        raise ValueError(f"--num-neighbors must be one or more positive ints (one per hop), got {list(cfg.num_neighbors)}")
    check_positive(cfg, "lr", integer=False, prefix="--")
    if cfg.dataset == "synthetic":
        from relgnn.synthetic import TASKS

        if cfg.task not in TASKS:
            raise ValueError(f"--task must be one of {sorted(TASKS)} for the synthetic dataset, got {cfg.task!r}")

    import torch
    from icml25.checkpoint import save_model

    from relgnn.train import fit
    torch.set_num_threads(min(cfg.threads, 2))
    conf = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()}
    rd = open_run_dir("relgnn", cfg)
    rd.write_config(conf)
    rd.write_env(device="cpu")
    graph, td = _prepare(conf)
    res = fit(graph, td, _fit_cfg(conf), progress=lambda e, v: rd.log(e, **{f"val_{td.metric}": v}))
    save_model(rd.path, res.model, conf)
    summary = {"metric": res.metric, "val": res.val, "test": res.test, "best_epoch": res.best_epoch,
               "seconds_per_epoch": sum(res.epoch_seconds) / len(res.epoch_seconds),
               "train_rows_per_s": res.train_rows_per_s, "infer_rows_per_s": res.infer_rows_per_s}
    val, test = res.val, res.test
    rd.write_json("summary.json", summary)
    if not cfg.quiet:
        print(f"{cfg.gnn} L={cfg.num_layers} on {cfg.dataset}/{cfg.task}: val {td.metric} {val:.4f}, "
              f"test {test:.4f}  -> {rd.target}")
    return 0


def evaluate(cfg: EvaluateConfig) -> int:
    import json

    from icml25.checkpoint import load_config

    if not (cfg.run / "model_config.json").exists():
        raise FileNotFoundError(f"--run {cfg.run}: no model_config.json there (write one with `relgnn train`)")
    conf = load_config(cfg.run, required=_CONFIG_KEYS)  # checked before the heavy imports

    import torch
    from icml25.checkpoint import load_model

    from relgnn.train import build_model, evaluate_predictions, predict_split

    torch.set_num_threads(1)
    graph, td = _prepare(conf)
    fc = _fit_cfg(conf)
    model = load_model(cfg.run, lambda c: build_model(fc, graph, td)).eval()
    pred = predict_split(model, graph, td, cfg.split, fc)
    score = evaluate_predictions(td, cfg.split, pred, num_dst=graph.num_nodes(td.dst) if td.dst else None)
    out = {"split": cfg.split, "metric": td.metric, "value": score}
    print(json.dumps(out))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {"train": (TrainConfig, train), "evaluate": (EvaluateConfig, evaluate),
                                "reproduce": (ReproduceOptions, reproduce_command(METHOD))}, argv=argv)
