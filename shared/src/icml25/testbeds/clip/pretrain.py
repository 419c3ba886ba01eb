"""Tiny CLIP test bed: pretraining with open_clip.ClipLoss and the cached pretrained model."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    pass
from icml25.testbeds.clip.data import (
    CLASSES,
    COLORS,
    FORMAT_VERSION,
    SIZES,
    TEMPLATES,
    ShapesData,
    _check_classes,
    heldout_combos,
    make_shapes,
    make_textures,
)
from icml25.testbeds.clip.model import TinyCLIP, build_tiny_clip, clip_config, preprocess, zero_shot_accuracy
from icml25.testbeds.clip.tokenizer import VOCAB, WordTokenizer


# ================================================================================================ pretraining
def _varied_captions(data: ShapesData, rng: np.random.Generator) -> list[str]:
    """Captions with a random template and each attribute dropped with probability 1/2 (so that
    ``"a photo of a circle"`` and ``"a red circle"`` are seen as well as the full caption)."""
    color_list = list(COLORS)
    out = []
    for i in range(len(data)):
        words = []
        if rng.random() < 0.5:
            words.append(SIZES[data.attrs["size"][i]])
        if rng.random() < 0.5:
            words.append(color_list[data.attrs["color"][i]])
        words.append(data.classnames[data.labels[i]])
        template = TEMPLATES[rng.integers(0, len(TEMPLATES))]
        out.append(template.format(" ".join(words)))
    return out


def pretrain_clip(
    model: Any,
    *,
    classes: Sequence[str],
    steps: int,
    seed: int,
    batch_size: int = 128,
    lr: float = 3e-3,
    warmup: int = 50,
    pool_size: int = 10000,
    texture_frac: float = 0.1,
    exclude_combos: Iterable[tuple[str, str]] | None = None,
    captions: str = "varied",
    callback: Any = None,
    progress: bool = False,
) -> list[float]:
    """Contrastive pretraining with ``open_clip.ClipLoss`` (symmetric InfoNCE over the batch, learnable
    temperature) on a fixed pool of generated shape images (and ``texture_frac`` texture images) whose captions are
    re-drawn with random templates and attribute dropout every epoch (``captions="varied"``; ``"full"`` keeps
    the generator's ``"a photo of a {size} {colour} {shape}"``). ``callback(step, model)`` is called every 100
    steps and at the end. AdamW (weight decay 0.05 on matrices),
    linear warm-up then cosine decay. Returns the per-step losses."""
    import open_clip
    import torch

    classes = _check_classes(classes)
    if captions not in ("varied", "full"):
        raise ValueError(f"captions must be 'varied' or 'full', got {captions!r}")
    tok = WordTokenizer(context_length=model.context_length)
    image_size = (
        model.visual.image_size[0] if isinstance(model.visual.image_size, tuple) else model.visual.image_size
    )
    rng = np.random.default_rng(seed)
    n_tex = int(round(pool_size * texture_frac))
    shapes = make_shapes(pool_size - n_tex, seed=seed, classes=classes, image_size=image_size,
                         exclude_combos=exclude_combos)  # fmt: skip
    images = shapes.images
    tex_caps: list[str] = []
    if n_tex:
        tex = make_textures(n_tex, seed=seed + 1, image_size=image_size)
        images = np.concatenate([images, tex.images])
        tex_caps = tex.captions
    pixels = preprocess(images)  # (N, 3, H, W)
    N = len(pixels)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "embedding" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "embedding" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.98))  # fmt: skip
    loss_fn = open_clip.ClipLoss()
    from icml25.train import batch_stream, check_finite
    from icml25.train import progress as bar

    gen = torch.Generator().manual_seed(seed)
    torch.randperm(N, generator=gen)  # an unused first draw, kept so the cached weights stay those of earlier versions
    tokens = None
    losses: list[float] = []
    model.train()
    steps_bar = bar(enumerate(batch_stream(N, batch_size, generator=gen, steps=steps)), desc="pretrain tiny CLIP",
                    total=steps, disable=not progress)
    for step, (new_epoch, idx) in steps_bar:
        if new_epoch:  # captions re-drawn every epoch
            caps = _varied_captions(shapes, rng) if captions == "varied" else shapes.captions
            tokens = tok(caps + tex_caps)
        scale = (
            (step + 1) / warmup
            if step < warmup
            else 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))
        )
        for g in opt.param_groups:
            g["lr"] = lr * scale
        img_f = model.encode_image(pixels[idx], normalize=True)
        txt_f = model.encode_text(tokens[idx], normalize=True)
        loss = loss_fn(img_f, txt_f, model.logit_scale.exp())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            model.logit_scale.clamp_(0, math.log(100))
        value = check_finite(loss, step=step, what="pretrain_clip: loss")
        losses.append(value)
        steps_bar.set_postfix(loss=f"{value:.3f}")
        if callback is not None and ((step + 1) % 100 == 0 or step + 1 == steps):
            model.eval()
            callback(step + 1, model)
            model.train()
    steps_bar.close()
    model.eval()
    return losses


def pretrained_tiny_clip(
    *,
    classes: Sequence[str] | None = None,
    steps: int = 1200,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    batch_size: int = 128,
    lr: float = 3e-3,
    pool_size: int = 10000,
    texture_frac: float = 0.1,
    hold_out_combos: bool = True,
    eval_n: int = 2000,
    progress: bool = False,
    **model_cfg: Any,
) -> TinyCLIP:
    """A tiny CLIP pretrained with :func:`pretrain_clip` on ``classes`` (default: the first 8 of :data:`CLASSES`,
    leaving 4 as near-OOD) and cached under ``<cache>/tiny-clip/<hash>/`` keyed by every argument that determines
    the weights. With ``hold_out_combos`` the pairs :func:`heldout_combos` are never shown in pretraining.

    Generator seeds used: ``seed`` (shapes) and ``seed + 1`` (textures); draw downstream data with other seeds.
    ``bundle.info["zero_shot"]`` holds the zero-shot accuracy measured after pretraining on ``eval_n`` fresh images of
    the held-out combinations (seed ``seed + 7919``) and on ``eval_n`` images of all combinations (``seed + 7920``).
    """
    import json

    from icml25.checkpoint import CheckpointError, load_weights_into, save_tensors
    from icml25.io import atomic_write_json
    from icml25.testbeds.cache import load_or_build

    classes = _check_classes(CLASSES[:8] if classes is None else classes)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be an int >= 0, got {steps!r}")
    cfg = clip_config(**model_cfg)
    held = heldout_combos(classes) if hold_out_combos else frozenset()
    material = {
        "format": FORMAT_VERSION,
        "classes": list(classes),
        "steps": steps,
        "seed": seed,
        "batch_size": batch_size,
        "lr": lr,
        "pool_size": pool_size,
        "texture_frac": texture_frac,
        "heldout": sorted(held),
        "eval_n": eval_n,
        "model": cfg,
        "vocab": list(VOCAB),
    }

    def evaluate(bundle: TinyCLIP) -> dict[str, float]:
        out = {}
        if held:
            d = make_shapes(
                eval_n, seed=seed + 7919, classes=classes, image_size=cfg["image_size"], only_combos=held
            )
            out["heldout_combos"] = zero_shot_accuracy(bundle, d.images, d.labels, classes)
        d = make_shapes(eval_n, seed=seed + 7920, classes=classes, image_size=cfg["image_size"])
        out["all_combos"] = zero_shot_accuracy(bundle, d.images, d.labels, classes)
        return out

    def build(folder: Path) -> None:
        model = build_tiny_clip(seed=seed, **cfg)
        t0 = time.perf_counter()
        losses = pretrain_clip(model, classes=classes, steps=steps, seed=seed, batch_size=batch_size, lr=lr,
                               pool_size=pool_size, texture_frac=texture_frac, exclude_combos=held,
                               progress=progress)  # fmt: skip
        seconds = time.perf_counter() - t0
        bundle = TinyCLIP(model, WordTokenizer(context_length=cfg["context_length"]), classes,
                          cfg["context_length"], cfg, held)  # fmt: skip
        zs = evaluate(bundle)
        save_tensors(folder / "model.safetensors", model.state_dict())
        atomic_write_json(folder / "model_config.json", cfg)
        atomic_write_json(folder / "train.json", {"losses": losses, "seconds": seconds, "zero_shot": zs})

    def load(folder: Path) -> TinyCLIP:
        if json.loads((folder / "model_config.json").read_text()) != cfg:
            raise CheckpointError("model_config.json does not match the requested config")
        model = build_tiny_clip(seed=0, **cfg)
        load_weights_into(model, folder / "model.safetensors")
        record = json.loads((folder / "train.json").read_text())
        return TinyCLIP(
            model=model.eval(),
            tokenize=WordTokenizer(context_length=cfg["context_length"]),
            classnames=classes,
            context_length=cfg["context_length"],
            config=cfg,
            heldout_combos=held,
            info={"losses": record["losses"], "seconds": record["seconds"], "zero_shot": record["zero_shot"]},
        )

    bundle, info = load_or_build("tiny-clip", material, build=build, load=load, cache_dir=cache_dir)
    bundle.info["cache"] = info
    return bundle


def random_clip(*, seed: int = 0, **cfg: Any) -> TinyCLIP:
    """An untrained tiny CLIP bundle: a negative control whose scores carry no class semantics."""
    c = clip_config(**cfg)
    model = build_tiny_clip(seed=seed, **c)
    return TinyCLIP(
        model, WordTokenizer(context_length=c["context_length"]), CLASSES[:8], c["context_length"], c
    )


