"""Command line of string-pe: ``string-pe {train,evaluate,benchmark,reproduce}`` (also ``python -m string_pe``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from icml25.cli_helpers import BaseOptions, ReproduceOptions, method_main, open_run_dir, reproduce_command

from string_pe.registry import METHOD

PE = Literal["none", "ape", "ape-fourier", "rope-axial", "rope-mixed", "cayley", "circulant"]


@dataclass(frozen=True)
class TrainConfig(BaseOptions):
    """Train a classifier with one position encoding and save it (model.safetensors + model_config.json)."""

    task: Literal["digits", "shapes2d", "shapes3d"] = "digits"
    """digits: ViT on sklearn's 8×8 digits; shapes2d/shapes3d: point-set classifier on generated shapes."""
    pe: PE = "cayley"
    """Position encoding."""
    epochs: int = 15
    """Training epochs."""
    lr: float = 2e-3
    """AdamW learning rate."""
    dim: int = 64
    """Model width."""
    depth: int = 2
    """Transformer layers."""
    heads: int = 4
    """Attention heads (head dim = dim / heads, must be even)."""
    n_train: int = 800
    """Training point sets (shapes tasks)."""


@dataclass(frozen=True)
class EvaluateConfig(BaseOptions):
    """Evaluate a trained run directory (from ``train``) on its task, in the box and after translations."""

    run: str = ""
    """Run directory written by ``train``."""
    shift: float = 40.0
    """Global translation per axis for the shapes tasks."""


@dataclass(frozen=True)
class BenchmarkConfig(BaseOptions):
    """Time every encoding relative to RoPE (head dim, heads, tokens configurable)."""

    head_dim: int = 64
    """Head dimension d."""
    heads: int = 4
    """Heads."""
    tokens: int = 256
    """Tokens per sequence."""
    repeats: int = 10
    """Timing repeats (minimum is reported)."""


def _validate_train(cfg: TrainConfig) -> None:
    if cfg.epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {cfg.epochs}")
    if not cfg.lr > 0:
        raise ValueError(f"lr must be > 0, got {cfg.lr}")
    if cfg.dim < 2 or cfg.heads < 1 or cfg.dim % cfg.heads or (cfg.dim // cfg.heads) % 2:
        raise ValueError(f"dim must be divisible by heads with an even head dim, got dim={cfg.dim}, heads={cfg.heads}")
    if cfg.depth < 1 or cfg.n_train < 1:
        raise ValueError(f"depth and n_train must be >= 1, got depth={cfg.depth}, n_train={cfg.n_train}")


def _build(model_cfg: dict):
    from string_pe.model import PointSetClassifier, ViT

    if model_cfg["task"] == "digits":
        return ViT(image_size=(8, 8), patch_size=2, num_classes=10, dim=model_cfg["dim"], depth=model_cfg["depth"],
                   num_heads=model_cfg["heads"], pe=model_cfg["pe"])
    dc = 2 if model_cfg["task"] == "shapes2d" else 3
    return PointSetClassifier(feature_dim=4, coord_dim=dc, num_classes=4, dim=model_cfg["dim"],
                              depth=model_cfg["depth"], num_heads=model_cfg["heads"], pe=model_cfg["pe"])


def _data(task: str, split: str, n: int, seed: int):
    from string_pe.data import load_digits_images, make_shapes_2d, make_shapes_3d

    if task == "digits":
        xtr, ytr, xte, yte = load_digits_images()
        return ((xtr,), ytr) if split == "train" else ((xte,), yte)
    mk = make_shapes_2d if task == "shapes2d" else make_shapes_3d
    d = mk(n, seed=(1000 if split == "train" else 2000) + seed)
    return (d.features, d.positions), d.labels


def train(cfg: TrainConfig) -> int:
    _validate_train(cfg)
    from icml25.checkpoint import save_model
    from icml25.device import set_threads
    from icml25.seeding import seed_everything

    from string_pe.train import TrainSettings, accuracy, fit

    set_threads(2)
    rd = open_run_dir(METHOD.name, cfg)
    rd.write_config(cfg)
    rd.write_env(device="cpu")
    seed_everything(cfg.seed)
    model_cfg = {"task": cfg.task, "pe": cfg.pe, "dim": cfg.dim, "depth": cfg.depth, "heads": cfg.heads}
    model = _build(model_cfg)
    inputs, labels = _data(cfg.task, "train", cfg.n_train, cfg.seed)
    fit(model, inputs, labels, TrainSettings(epochs=cfg.epochs, lr=cfg.lr, seed=cfg.seed),
        on_epoch=lambda e, loss: rd.log(e, loss=loss))
    te_inputs, te_labels = _data(cfg.task, "test", 500, cfg.seed)
    acc = accuracy(model, te_inputs, te_labels)
    save_model(rd.path, model, model_cfg)
    rd.write_json("eval.json", {"test_accuracy": acc})
    if not cfg.quiet:
        print(f"test accuracy {acc:.4f}; saved to {rd.target}")
    return 0


def evaluate(cfg: EvaluateConfig) -> int:
    import json
    from pathlib import Path

    from icml25.checkpoint import load_config, load_model

    from string_pe.data import PointSets, translate
    from string_pe.train import accuracy

    run = Path(cfg.run)
    if not cfg.run or not (run / "model_config.json").exists():
        raise FileNotFoundError(f"run must be a directory written by `string-pe train`, got {cfg.run!r}")
    model_cfg = load_config(run, required=("task", "pe", "dim", "depth", "heads"))
    model = load_model(run, _build)
    inputs, labels = _data(model_cfg["task"], "test", 500, cfg.seed)
    res = {"test_accuracy": accuracy(model, inputs, labels)}
    if model_cfg["task"] != "digits":
        d = translate(PointSets(inputs[0], inputs[1], labels, ()), cfg.shift)
        res["translated_accuracy"] = accuracy(model, (d.features, d.positions), d.labels)
    print(json.dumps(res))
    return 0


def bench(cfg: BenchmarkConfig) -> int:
    from icml25.device import set_threads

    from string_pe.timing import benchmark

    if cfg.head_dim < 2 or cfg.head_dim % 2:
        raise ValueError(f"head_dim must be an even int >= 2, got {cfg.head_dim}")
    for name in ("heads", "tokens", "repeats"):
        if getattr(cfg, name) < 1:
            raise ValueError(f"--{name} must be an integer >= 1, got {getattr(cfg, name)}")
    set_threads(2)
    r = benchmark(head_dim=cfg.head_dim, num_heads=cfg.heads, tokens=cfg.tokens, repeats=cfg.repeats, seed=cfg.seed)
    base = r["rope-axial"]
    for name, v in r.items():
        print(name, ", ".join(f"{k} {1e3 * t:.2f} ms ({t / base[k]:.2f}x)" for k, t in v.items()))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {
        "train": (TrainConfig, train),
        "evaluate": (EvaluateConfig, evaluate),
        "benchmark": (BenchmarkConfig, bench),
        "reproduce": (ReproduceOptions, reproduce_command(METHOD)),
    }, argv=argv)
