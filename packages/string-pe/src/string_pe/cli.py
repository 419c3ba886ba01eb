"""Command line of string-pe: ``string-pe {train,evaluate,benchmark,reproduce}`` (also ``python -m string_pe``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from icml25.cli_helpers import (
    BaseOptions,
    CommonOptions,
    ReproduceOptions,
    method_main,
    open_run_dir,
    reproduce_command,
)

from string_pe import config as _config
from string_pe.registry import METHOD

PE = Literal["none", "ape", "ape-fourier", "rope-axial", "rope-mixed", "cayley", "circulant"]


@dataclass(frozen=True)
class TrainConfig(CommonOptions):
    """Train a classifier with one position encoding and save it (model.safetensors + model_config.json)."""

    PRESETS = {"cpu": _config.cpu, "paper": _config.paper}  # string_pe.config.TrainPreset: this command's own fields

    task: Literal["digits", "shapes2d", "shapes3d"] = "digits"
    """digits: ViT on sklearn's 8×8 digits; shapes2d/shapes3d: point-set classifier on generated shapes (ignored
    with --data)."""
    data: str | None = None
    """An ImageFolder (root/<class>/<images>, or root/train/<class>/... with root/test/<class>/...) to train a ViT
    on; without train/ and test/ subfolders 20% of the images (stratified) are held out for testing."""
    depth_input: Literal["none", "coords", "channel"] = "none"
    """With --data: how the depth map in the images' alpha channel is used: none (RGB only), coords (3D patch
    coordinates (col, row, height(depth)) for a rotary --pe), channel (a fourth input channel)."""
    image_size: int = 32
    """With --data: images are resized to image_size × image_size."""
    patch_size: int = 8
    """With --data: ViT patch side (divides image_size)."""
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
    attn: Literal["softmax", "linear"] = "softmax"
    """Shapes tasks: softmax attention, or Performer-style linear attention with the encoding on the features
    (the ViT paths use softmax attention)."""


@dataclass(frozen=True)
class EvaluateConfig(BaseOptions):
    """Evaluate a trained run directory (from ``train``) on its task, in the box and after translations (written to
    evaluation.json in --out)."""

    run: str = ""
    """Run directory written by ``train``."""
    shift: float = 40.0
    """Global translation per axis for the shapes tasks."""
    data: str | None = None
    """For a run trained with --data: the ImageFolder to evaluate on (every image; or its test/ subfolder)."""


@dataclass(frozen=True)
class BenchmarkConfig(BaseOptions):
    """Time every encoding relative to RoPE (head dim, heads, tokens configurable); written to benchmark.json in
    --out."""

    head_dim: int = 64
    """Head dimension d."""
    heads: int = 4
    """Heads."""
    tokens: int = 256
    """Tokens per sequence."""
    repeats: int = 10
    """Timing repeats (minimum is reported)."""


@dataclass(frozen=True)
class MakeImagesConfig(BaseOptions):
    """Write generated RGB-D scenes (two textured objects at two depths with distractors; --task decides the label) as an
    ImageFolder: OUT/train/<class>/*.png and OUT/test/<class>/*.png (RGBA, alpha = depth)."""

    n_train: int = 2000
    """Training images."""
    n_test: int = 500
    """Test images."""
    image_size: int = 32
    """Image side in pixels (16 to 128)."""
    task: Literal["shape", "relation"] = "shape"
    """shape: label = shape of the nearer object (disk, square, triangle, cross); relation: label = where the
    nearer object lies seen from the farther one (right, below, left, above)."""
    rotate: bool = False
    """Draw the objects at random rotations (harder); by default they are upright (as in `reproduce`)."""
    distractors: int = 0
    """Small distractor blobs per scene (none in `reproduce`)."""
    object_scale: float | None = None
    """Multiplies both objects' radii (0.25 to 1.5); default 1.3 for the shape task (as in `reproduce`), 1.0 for
    the relation task."""


def make_images(cfg: MakeImagesConfig) -> int:
    from string_pe.images import TASKS, render_scenes, write_image_folder

    if cfg.n_train < 1 or cfg.n_test < 1:
        raise ValueError(f"n_train and n_test must be >= 1, got n_train={cfg.n_train}, n_test={cfg.n_test}")
    if not 16 <= cfg.image_size <= 128:
        raise ValueError(f"image_size must be in [16, 128], got {cfg.image_size}")
    if cfg.distractors < 0:
        raise ValueError(f"distractors must be >= 0, got {cfg.distractors}")
    object_scale = cfg.object_scale if cfg.object_scale is not None else (1.3 if cfg.task == "shape" else 1.0)
    if not 0.25 <= object_scale <= 1.5:
        raise ValueError(f"object_scale must be in [0.25, 1.5], got {object_scale}")
    rd = open_run_dir(METHOD.name, cfg)
    for split, n, off in (("train", cfg.n_train, 10000), ("test", cfg.n_test, 12000)):
        x, d, y = render_scenes(n, size=cfg.image_size, task=cfg.task, rotate=cfg.rotate, seed=off + cfg.seed,
                                distractors=cfg.distractors, object_scale=object_scale)
        write_image_folder(rd.path / split, x, d, y, classes=TASKS[cfg.task])
    rd.write_config(cfg)
    if not cfg.quiet:
        print(f"wrote {cfg.n_train} + {cfg.n_test} scenes to {rd.target}")
    return 0


def _validate_train(cfg: TrainConfig) -> None:
    if cfg.epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {cfg.epochs}")
    if not cfg.lr > 0:
        raise ValueError(f"lr must be > 0, got {cfg.lr}")
    if cfg.dim < 2 or cfg.heads < 1 or cfg.dim % cfg.heads or (cfg.dim // cfg.heads) % 2:
        raise ValueError(f"dim must be divisible by heads with an even head dim, got dim={cfg.dim}, heads={cfg.heads}")
    if cfg.attn == "linear" and (cfg.data is not None or cfg.task == "digits"):
        raise ValueError("attn='linear' is available for the point-set tasks (shapes2d, shapes3d) only, got "
                         f"task={cfg.task!r}" + (" with --data" if cfg.data is not None else ""))
    if cfg.depth < 1 or cfg.n_train < 1:
        raise ValueError(f"depth and n_train must be >= 1, got depth={cfg.depth}, n_train={cfg.n_train}")
    if cfg.data is not None:
        from pathlib import Path

        if not Path(cfg.data).is_dir():
            raise ValueError(f"data must be an existing ImageFolder directory, got {cfg.data!r}")
        if not 16 <= cfg.image_size <= 256:
            raise ValueError(f"image_size must be in [16, 256], got {cfg.image_size}")
        if cfg.patch_size < 1 or cfg.image_size % cfg.patch_size:
            raise ValueError(f"patch_size must divide image_size={cfg.image_size}, got {cfg.patch_size}")
        if cfg.depth_input == "coords" and cfg.pe not in ("rope-axial", "rope-mixed", "cayley", "circulant"):
            raise ValueError(f"depth_input='coords' needs a rotary pe (rope-axial, rope-mixed, cayley, circulant), got "
                             f"pe={cfg.pe!r}")


def _build(model_cfg: dict):
    from string_pe.model import PointSetClassifier, ViT

    if model_cfg["task"] == "images":
        mode = model_cfg["depth_input"]
        return ViT(image_size=(model_cfg["image_size"],) * 2, patch_size=model_cfg["patch_size"],
                   in_chans=4 if mode == "channel" else 3, num_classes=model_cfg["num_classes"], dim=model_cfg["dim"],
                   depth=model_cfg["depth"], num_heads=model_cfg["heads"], pe=model_cfg["pe"],
                   coord_dim=3 if mode == "coords" else 2)
    if model_cfg["task"] == "digits":
        return ViT(image_size=(8, 8), patch_size=2, num_classes=10, dim=model_cfg["dim"], depth=model_cfg["depth"],
                   num_heads=model_cfg["heads"], pe=model_cfg["pe"])
    dc = 2 if model_cfg["task"] == "shapes2d" else 3
    return PointSetClassifier(feature_dim=4, coord_dim=dc, num_classes=4, dim=model_cfg["dim"],
                              depth=model_cfg["depth"], num_heads=model_cfg["heads"], pe=model_cfg["pe"],
                              attn=model_cfg.get("attn", "softmax"))


def _data(task: str, split: str, n: int, seed: int):
    from string_pe.data import load_digits_images, make_shapes_2d, make_shapes_3d

    if task == "digits":
        xtr, ytr, xte, yte = load_digits_images()
        return ((xtr,), ytr) if split == "train" else ((xte,), yte)
    mk = make_shapes_2d if task == "shapes2d" else make_shapes_3d
    d = mk(n, seed=(1000 if split == "train" else 2000) + seed)
    return (d.features, d.positions), d.labels


_MODES = {"none": "rgb", "coords": "rgbd-3d", "channel": "rgbd-channel"}


def _image_datasets(root: str, image_size: int, depth: bool, seed: int):
    """``(train, test, classes)`` of an ImageFolder as streaming datasets (:func:`string_pe.images.image_folder_dataset`:
    images are read from disk batch by batch, never the whole folder at once); without ``train/`` and ``test/``
    subfolders 20% of the images (stratified by class) are held out."""
    from pathlib import Path

    import numpy as np
    from torch.utils.data import Subset

    from string_pe.images import image_folder_dataset

    r = Path(root)
    if (r / "train").is_dir() and (r / "test").is_dir():
        tr = image_folder_dataset(r / "train", image_size=image_size, depth=depth)
        te = image_folder_dataset(r / "test", image_size=image_size, depth=depth)
        if te.classes != tr.classes:
            raise ValueError(f"data: train/ and test/ must have the same class folders, got {tr.classes} and "
                             f"{te.classes}")
        return tr, te, list(tr.classes)
    from sklearn.model_selection import train_test_split

    ds = image_folder_dataset(r, image_size=image_size, depth=depth)
    y = np.asarray(ds.targets)
    counts = np.bincount(y, minlength=len(ds.classes))
    strat = y if len(ds.classes) > 1 and int(counts.min()) >= 2 else None
    i_tr, i_te = train_test_split(list(range(len(y))), test_size=0.2, random_state=seed, stratify=strat)
    return Subset(ds, i_tr), Subset(ds, i_te), list(ds.classes)


def _image_batches(dataset, mode: str, *, batch_size: int = 64, seed: int | None = None):
    """``(inputs, labels)`` batches of a streaming image dataset for the ViT input ``mode`` (shuffled with a
    seeded generator when ``seed`` is given): items ``(C, H, W)`` with ``C = 4`` when the depth is in alpha."""
    import torch
    from torch.utils.data import DataLoader

    from string_pe.reproduce import image_inputs

    g = torch.Generator().manual_seed(seed) if seed is not None else None
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=seed is not None, generator=g)

    def batches(epoch: int = 0):
        for x, y in loader:  # x: (b, C, H, W)
            yield image_inputs(x[:, :3], x[:, 3:4] if x.shape[1] == 4 else None, mode), y

    return batches, len(loader)


def _train_images(cfg: TrainConfig, rd, device) -> float:
    from icml25.checkpoint import save_model

    from string_pe.train import TrainSettings, accuracy_batches, fit_batches

    tr, te, classes = _image_datasets(cfg.data, cfg.image_size, cfg.depth_input != "none", cfg.seed)
    model_cfg = {"task": "images", "pe": cfg.pe, "dim": cfg.dim, "depth": cfg.depth, "heads": cfg.heads,
                 "image_size": cfg.image_size, "patch_size": cfg.patch_size, "depth_input": cfg.depth_input,
                 "num_classes": len(classes), "classes": classes}
    model = _build(model_cfg)
    mode = _MODES[cfg.depth_input]
    settings = TrainSettings(epochs=cfg.epochs, lr=cfg.lr, seed=cfg.seed)
    batches, steps = _image_batches(tr, mode, batch_size=settings.batch_size, seed=cfg.seed)
    fit_batches(model, batches, steps, settings, on_epoch=lambda e, loss: rd.log(e, loss=loss), device=device)
    save_model(rd.path, model, model_cfg)
    return accuracy_batches(model, _image_batches(te, mode, batch_size=256)[0]())


def train(cfg: TrainConfig) -> int:
    _validate_train(cfg)
    from icml25.checkpoint import save_model
    from icml25.device import resolve_device, set_threads
    from icml25.seeding import seed_everything

    from string_pe.train import TrainSettings, accuracy, fit

    set_threads(2)
    device = resolve_device(cfg.device)
    rd = open_run_dir(METHOD.name, cfg)
    rd.write_config(cfg)
    rd.write_env(device=str(device))
    seed_everything(cfg.seed)
    if cfg.data is not None:
        acc = _train_images(cfg, rd, device)
        rd.write_json("eval.json", {"test_accuracy": acc})
        if not cfg.quiet:
            print(f"test accuracy {acc:.4f} (held-out images); saved to {rd.target}")
        return 0
    model_cfg = {"task": cfg.task, "pe": cfg.pe, "dim": cfg.dim, "depth": cfg.depth, "heads": cfg.heads,
                 "attn": cfg.attn}
    model = _build(model_cfg)
    inputs, labels = _data(cfg.task, "train", cfg.n_train, cfg.seed)
    fit(model, inputs, labels, TrainSettings(epochs=cfg.epochs, lr=cfg.lr, seed=cfg.seed),
        on_epoch=lambda e, loss: rd.log(e, loss=loss), device=device)
    te_inputs, te_labels = _data(cfg.task, "test", 500, cfg.seed)
    acc = accuracy(model, te_inputs, te_labels)
    save_model(rd.path, model, model_cfg)
    rd.write_json("eval.json", {"test_accuracy": acc})
    if not cfg.quiet:
        print(f"test accuracy {acc:.4f}; saved to {rd.target}")
    return 0


def evaluate(cfg: EvaluateConfig) -> int:
    """Score a trained run; write config.json, env.json and evaluation.json to --out (and print the scores)."""
    import json
    import math
    from pathlib import Path

    from icml25.checkpoint import load_config, load_model
    from icml25.errors import UserInputError

    from string_pe.data import PointSets, translate
    from string_pe.train import accuracy

    run = Path(cfg.run)
    if not cfg.run or not (run / "model_config.json").exists():
        raise FileNotFoundError(f"run must be a directory written by `string-pe train`, got {cfg.run!r}")
    if not math.isfinite(cfg.shift):
        raise UserInputError(f"--shift must be a finite number, got {cfg.shift}")
    model_cfg = load_config(run, required=("task", "pe", "dim", "depth", "heads"))
    tasks = ("digits", "shapes2d", "shapes3d", "images")
    if model_cfg["task"] not in tasks:
        raise UserInputError(f"--run {str(run / 'model_config.json')!r}: unknown task {model_cfg['task']!r} "
                             f"(one of {tasks})")
    if model_cfg["task"] == "images":
        model_cfg = load_config(run, required=("image_size", "patch_size", "depth_input", "num_classes"))
        if model_cfg["depth_input"] not in _MODES:
            raise UserInputError(f"--run {str(run / 'model_config.json')!r}: unknown depth_input "
                                 f"{model_cfg['depth_input']!r} (one of {tuple(_MODES)})")
        if cfg.data is None or not Path(cfg.data).is_dir():
            raise FileNotFoundError(f"data must be an ImageFolder directory for a run trained on images, got {cfg.data!r}")
    model = load_model(run, _build)
    if model_cfg["task"] == "images":
        from string_pe.images import image_folder_dataset
        from string_pe.train import accuracy_batches

        root = Path(cfg.data) / "test" if (Path(cfg.data) / "test").is_dir() else Path(cfg.data)
        ds = image_folder_dataset(root, image_size=model_cfg["image_size"], depth=model_cfg["depth_input"] != "none")
        trained = model_cfg.get("classes")
        if trained is None:
            raise UserInputError(f"--run {str(run / 'model_config.json')!r} has no class list ('classes'); "
                                 "retrain it with this version of `string-pe train --data`")
        if list(ds.classes) != list(trained):
            raise UserInputError(f"--data {str(root)!r}: its class folders {list(ds.classes)} differ from the classes "
                                 f"the run was trained on {list(trained)} (same names in the same order needed)")
        batches, _ = _image_batches(ds, _MODES[model_cfg["depth_input"]], batch_size=256)
        res = {"test_accuracy": accuracy_batches(model, batches())}
    else:
        inputs, labels = _data(model_cfg["task"], "test", 500, cfg.seed)
        res = {"test_accuracy": accuracy(model, inputs, labels)}
        if model_cfg["task"] != "digits":
            d = translate(PointSets(inputs[0], inputs[1], labels, ()), cfg.shift)
            res["translated_accuracy"] = accuracy(model, (d.features, d.positions), d.labels)
    rd = open_run_dir(METHOD.name, cfg)  # --out was checked before the work (method_main)
    rd.write_config(cfg)
    rd.write_env(device="cpu")
    rd.write_json("evaluation.json", res)
    if not cfg.quiet:
        print(json.dumps(res))
        print(f"written to {rd.target}")
    return 0


def bench(cfg: BenchmarkConfig) -> int:
    """Time every encoding; write config.json, env.json and benchmark.json (seconds, minimum of --repeats) to
    --out."""
    from icml25.device import set_threads

    from string_pe.timing import benchmark

    if cfg.head_dim < 2 or cfg.head_dim % 2:
        raise ValueError(f"--head-dim must be an even int >= 2, got {cfg.head_dim}")
    for name in ("heads", "tokens", "repeats"):
        if getattr(cfg, name) < 1:
            raise ValueError(f"--{name} must be an integer >= 1, got {getattr(cfg, name)}")
    set_threads(2)
    r = benchmark(head_dim=cfg.head_dim, num_heads=cfg.heads, tokens=cfg.tokens, repeats=cfg.repeats, seed=cfg.seed)
    rd = open_run_dir(METHOD.name, cfg)  # --out was checked before the timing (method_main)
    rd.write_config(cfg)
    rd.write_env(device="cpu")
    rd.write_json("benchmark.json", {"unit": "seconds", "baseline": "rope-axial", "times": r})
    if not cfg.quiet:
        base = r["rope-axial"]
        for name, v in r.items():
            print(name, ", ".join(f"{k} {1e3 * t:.2f} ms ({t / base[k]:.2f}x)" for k, t in v.items()))
        print(f"written to {rd.target}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {
        "train": (TrainConfig, train),
        "evaluate": (EvaluateConfig, evaluate),
        "benchmark": (BenchmarkConfig, bench),
        "make-images": (MakeImagesConfig, make_images),
        "reproduce": (ReproduceOptions, reproduce_command(METHOD)),
    }, argv=argv)
