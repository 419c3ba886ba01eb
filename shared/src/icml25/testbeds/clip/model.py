"""Tiny CLIP test bed: the tiny open_clip CLIP, preprocessing, encoders and zero-shot scoring."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import torch
from icml25.testbeds.clip.tokenizer import VOCAB, WordTokenizer

# ====================================================================================================== model
_VISION_DEFAULTS = {
    "resnet": {"vision_width": 8, "vision_layers": 1, "vision_head_width": 16},
    "vit": {"vision_width": 64, "vision_layers": 2, "vision_head_width": 32},
}


def clip_config(
    *,
    vision: str = "resnet",
    embed_dim: int = 64,
    image_size: int = 32,
    patch_size: int = 8,
    vision_width: int | None = None,
    vision_layers: int | None = None,
    vision_head_width: int | None = None,
    context_length: int = 16,
    text_width: int = 64,
    text_heads: int = 2,
    text_layers: int = 2,
    vocab_size: int = len(VOCAB),
    vision_pool: str = "avg",
) -> dict[str, Any]:
    """The validated, JSON-able configuration of the tiny CLIP.

    ``vision="resnet"`` (default): open_clip's ``ModifiedResNet`` (the CLIP RN tower: 3-conv stem, 4 stages of
    ``vision_layers`` bottleneck blocks each, attention pooling with ``vision_width * 32 // vision_head_width``
    heads; width 8, 1 block per stage). ``vision="vit"``: open_clip's ``VisionTransformer`` (``patch_size``, width 64,
    2 layers, ``vision_pool`` "avg" = mean of patch tokens or "tok" = class token). ``vision_width``,
    ``vision_layers`` and ``vision_head_width`` default per tower. ``patch_size`` and ``vision_pool`` only apply to
    the ViT (they are left out of a ResNet config, so they do not change its cache key).
    """
    if vision not in _VISION_DEFAULTS:
        raise ValueError(f"vision must be one of {sorted(_VISION_DEFAULTS)}, got {vision!r}")
    d = _VISION_DEFAULTS[vision]
    cfg: dict[str, Any] = dict(
        embed_dim=embed_dim,
        image_size=image_size,
        patch_size=patch_size,
        vision_width=d["vision_width"] if vision_width is None else vision_width,
        vision_layers=d["vision_layers"] if vision_layers is None else vision_layers,
        vision_head_width=d["vision_head_width"] if vision_head_width is None else vision_head_width,
        context_length=context_length,
        text_width=text_width,
        text_heads=text_heads,
        text_layers=text_layers,
        vocab_size=vocab_size,
    )
    for k, v in cfg.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{k} must be a positive int, got {v!r}")
    if vision == "vit":
        if vision_pool not in ("tok", "avg"):
            raise ValueError(
                f"vision_pool must be 'tok' (class token) or 'avg' (mean of patch tokens), got {vision_pool!r}"
            )
        cfg = {"vision": "vit", **cfg, "vision_pool": vision_pool}
        if image_size % patch_size:
            raise ValueError(f"image_size={image_size} must be divisible by patch_size={patch_size}")
        if cfg["vision_width"] % cfg["vision_head_width"]:
            raise ValueError(
                f"vision_head_width={cfg['vision_head_width']} must divide vision_width={cfg['vision_width']}"
            )
    else:
        del cfg["patch_size"]
        cfg = {"vision": "resnet", **cfg}
        if image_size % 32:
            raise ValueError(f"image_size={image_size} must be a multiple of 32 for the ResNet tower (stride 32)")
        if (cfg["vision_width"] * 32) % cfg["vision_head_width"] or cfg["vision_width"] % 2:
            raise ValueError(
                f"vision_width={cfg['vision_width']} must be even and vision_head_width={cfg['vision_head_width']} "
                f"must divide vision_width * 32 (the ResNet feature size)"
            )
    if text_width % text_heads:
        raise ValueError(f"text_heads={text_heads} must divide text_width={text_width}")
    if vocab_size != len(VOCAB):
        raise ValueError(
            f"vocab_size={vocab_size} does not match the tokenizer's vocabulary ({len(VOCAB)} tokens)"
        )
    return cfg


def build_tiny_clip(*, seed: int = 0, **cfg: Any) -> Any:
    """A freshly initialised tiny ``open_clip.CLIP`` from ``CLIPVisionCfg``/``CLIPTextCfg`` (see :func:`clip_config`
    for the keys), seeded without touching the global RNG; no hub access."""
    import open_clip
    import torch
    from open_clip.model import CLIPTextCfg, CLIPVisionCfg

    c = clip_config(**cfg)
    if c["vision"] == "resnet":
        vision = CLIPVisionCfg(
            image_size=c["image_size"],
            layers=(c["vision_layers"],) * 4,  # a tuple selects open_clip's ModifiedResNet
            width=c["vision_width"],
            head_width=c["vision_head_width"],
        )
    else:
        vision = CLIPVisionCfg(
            image_size=c["image_size"],
            patch_size=c["patch_size"],
            width=c["vision_width"],
            layers=c["vision_layers"],
            head_width=c["vision_head_width"],
            pool_type=c["vision_pool"],
        )
    text = CLIPTextCfg(
        context_length=c["context_length"],
        vocab_size=c["vocab_size"],
        width=c["text_width"],
        heads=c["text_heads"],
        layers=c["text_layers"],
        pool_type="argmax",
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = open_clip.CLIP(embed_dim=c["embed_dim"], vision_cfg=vision, text_cfg=text)
    return model.eval()


_MEAN = np.array([0.5, 0.5, 0.5], dtype=np.float32)
_STD = np.array([0.25, 0.25, 0.25], dtype=np.float32)


def preprocess(images: np.ndarray) -> torch.Tensor:
    """uint8 ``(n, H, W, 3)`` -> float32 ``(n, 3, H, W)``, ``(x / 255 - 0.5) / 0.25``."""
    import torch

    images = np.asarray(images)
    if images.dtype != np.uint8 or images.ndim != 4 or images.shape[-1] != 3:
        raise ValueError(f"images must be uint8 (n, H, W, 3), got {images.dtype} {images.shape}")
    x = (images.astype(np.float32) / 255.0 - _MEAN) / _STD
    return torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))  # (n, H, W, 3) -> (n, 3, H, W)


@dataclass
class TinyCLIP:
    """A pretrained tiny CLIP and what is needed to use it.

    Attributes:
        model: the ``open_clip.CLIP`` (eval mode).
        tokenize: :class:`WordTokenizer`; ``bundle.tokenize(texts) -> LongTensor (n, context_length)``.
        classnames: the shape classes seen in pretraining.
        context_length: text context length.
        config: :func:`clip_config` dict.
        heldout_combos: ``(shape, colour)`` pairs kept out of pretraining.
        info: cache entry and training record (``losses``, ``seconds``, ``zero_shot``).
    """

    model: Any
    tokenize: WordTokenizer
    classnames: tuple[str, ...]
    context_length: int
    config: dict[str, Any]
    heldout_combos: frozenset[tuple[str, str]] = frozenset()
    info: dict[str, Any] = field(default_factory=dict)
    transform: Any = None
    """uint8 ``(n, H, W, 3)`` -> model input ``(n, 3, H', W')``; ``None`` = :func:`preprocess` (the tiny model's)."""

    def preprocess(self, images: np.ndarray) -> torch.Tensor:
        """uint8 ``(n, H, W, 3)`` -> normalised float ``(n, 3, H', W')`` for this model."""
        return preprocess(images) if self.transform is None else self.transform(images)


def _model_of(bundle: Any) -> Any:
    return bundle.model if isinstance(bundle, TinyCLIP) else bundle


def encode_images(bundle: TinyCLIP | Any, images: np.ndarray, *, batch_size: int = 256) -> torch.Tensor:
    """L2-normalised image features ``(n, embed_dim)`` of uint8 ``images`` (no grad)."""
    import torch

    model = _model_of(bundle)
    prep = bundle.preprocess if isinstance(bundle, TinyCLIP) else preprocess
    device = next(model.parameters()).device
    feats = []
    with torch.no_grad():
        for s in range(0, len(images), batch_size):
            x = prep(images[s : s + batch_size]).to(device)
            feats.append(model.encode_image(x, normalize=True).float().cpu())
    return torch.cat(feats) if feats else torch.zeros((0, model.text_projection.shape[1]))


def encode_text(bundle: TinyCLIP | Any, texts: str | Sequence[str]) -> torch.Tensor:
    """L2-normalised text features ``(m, embed_dim)`` (no grad)."""
    import torch

    model = _model_of(bundle)
    tok = (
        bundle.tokenize
        if isinstance(bundle, TinyCLIP)
        else WordTokenizer(context_length=model.context_length)
    )
    device = next(model.parameters()).device
    with torch.no_grad():
        return model.encode_text(tok(texts).to(device), normalize=True).float().cpu()


def zero_shot_logits(
    bundle: TinyCLIP | Any,
    images: np.ndarray,
    classnames: Sequence[str],
    template: str | Sequence[str] = "a photo of a {}",
) -> torch.Tensor:
    """Cosine similarities ``(n, C)`` between images and ``template.format(c)`` for each class name. With several
    templates, the class embedding is the renormalised mean of the normalised template embeddings (CLIP's prompt
    ensembling)."""
    import torch

    if not classnames or len(set(classnames)) != len(classnames):
        raise ValueError(f"classnames must be non-empty and distinct, got {list(classnames)}")
    templates = [template] if isinstance(template, str) else list(template)
    if not templates or any(not isinstance(t, str) or "{}" not in t for t in templates):
        raise ValueError(f"template must be a string (or non-empty list of strings) containing '{{}}', got {template!r}")
    text = torch.stack([encode_text(bundle, [t.format(c) for c in classnames]) for t in templates]).mean(0)
    text = text / text.norm(dim=-1, keepdim=True)  # (C, d)
    return encode_images(bundle, images) @ text.T


def zero_shot_accuracy(
    bundle: TinyCLIP | Any,
    images: np.ndarray,
    labels: np.ndarray,
    classnames: Sequence[str],
    template: str | Sequence[str] = "a photo of a {}",
) -> float:
    """Top-1 zero-shot accuracy: ``mean(argmax_c cos(f(x), g(template(c))) == y)``."""
    labels = np.asarray(labels)
    if len(labels) != len(images):
        raise ValueError(f"labels ({len(labels)}) and images ({len(images)}) differ in length")
    pred = zero_shot_logits(bundle, images, classnames, template).argmax(1).numpy()
    return float(np.mean(pred == labels))


