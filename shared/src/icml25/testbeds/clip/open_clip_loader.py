"""Tiny CLIP test bed: a user's own open_clip checkpoint from local files, never a download."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import torch
from icml25.testbeds.clip.data import CLASSES
from icml25.testbeds.clip.model import TinyCLIP


# ============================================================================================ real checkpoints
class _OpenClipTokenizer:
    """open_clip's own tokenizer behind the :class:`WordTokenizer` call signature, refusing silent truncation."""

    def __init__(self, tokenizer: Any, context_length: int):
        self._tok = tokenizer
        self.context_length = context_length

    def __call__(self, texts: str | Sequence[str], context_length: int | None = None) -> torch.Tensor:
        texts = [texts] if isinstance(texts, str) else list(texts)
        L = self.context_length if context_length is None else context_length
        ids = self._tok(texts, context_length=L)
        inner = getattr(self._tok, "encode", None)
        if inner is not None:  # SimpleTokenizer: + <start_of_text> and <end_of_text>
            for t in texts:
                n = len(inner(t)) + 2
                if n > L:
                    raise ValueError(f"prompt {t!r} needs {n} tokens; the model's context_length is {L}")
        return ids


def load_open_clip(
    model_name: str,
    checkpoint: str | os.PathLike | None = None,
    *,
    classnames: Sequence[str] | None = None,
    device: str = "cpu",
) -> TinyCLIP:
    """A user's real open_clip model from local files, in the same bundle as the tiny CLIP, so that every package
    that takes a :class:`TinyCLIP` also takes it.

    Args:
        model_name: an open_clip architecture (``open_clip.list_models()``, e.g. ``"ViT-B-32"``, or one registered
            with ``open_clip.add_model_config``) together with ``checkpoint``; or ``"local-dir:/path"``, a folder
            with ``open_clip_config.json`` and the weights (then ``checkpoint`` must be ``None``).
        checkpoint: path of a local weight file (``.safetensors``/``.bin``/``.pt``) for ``model_name``. Pretrained
            *tags* (``"openai"``, ``"laion2b_s34b_b79k"``) and ``hf-hub:`` names are refused: nothing is downloaded.
        classnames: the class names the bundle carries (default: the first 8 of :data:`CLASSES`).
        device: where the model goes.

    Images given to :func:`encode_images` are resized to the model's input size (bicubic) and normalised with the
    model's mean/std (open_clip's ``preprocess_cfg``); text goes through open_clip's tokenizer (the BPE vocabulary
    ships inside open_clip_torch).
    """
    import open_clip
    import torch

    if not isinstance(model_name, str) or not model_name:
        raise ValueError(f"model_name must be a non-empty string, got {model_name!r}")
    if model_name.startswith("hf-hub:"):
        raise ValueError(
            f"model_name={model_name!r}: hf-hub models are downloaded, which this offline test bed never does; "
            "download the weights yourself and pass model_name='local-dir:/path' or an architecture + checkpoint"
        )
    if model_name.startswith("local-dir:"):
        if checkpoint is not None:
            raise ValueError("checkpoint must be None with a 'local-dir:' model_name (the folder holds the weights)")
        folder = Path(model_name[len("local-dir:") :]).expanduser()
        if not (folder / "open_clip_config.json").is_file():
            raise ValueError(f"model_name={model_name!r}: {folder}/open_clip_config.json does not exist")
        import json

        cfg = json.loads((folder / "open_clip_config.json").read_text())
        text_cfg = cfg.get("model_cfg", cfg).get("text_cfg", {})
        kwargs: dict[str, Any] = {}
    else:
        cfg = open_clip.get_model_config(model_name)
        if cfg is None:
            known = open_clip.list_models()
            raise ValueError(
                f"model_name={model_name!r} is not an open_clip architecture; known: {known[:12]} ... "
                f"({len(known)} in all; register your own with open_clip.add_model_config)"
            )
        if checkpoint is None or not Path(checkpoint).is_file():
            raise ValueError(
                f"checkpoint={checkpoint!r} must be the path of an existing local weight file for {model_name!r} "
                "(pretrained tags such as 'openai' would download, which this offline test bed never does)"
            )
        text_cfg = cfg.get("text_cfg", {})
        kwargs = {"pretrained": str(checkpoint)}
    for key in ("hf_tokenizer_name", "hf_model_name"):
        if text_cfg.get(key):
            raise ValueError(
                f"model_name={model_name!r} uses {key}={text_cfg[key]!r}, which is fetched from the HF hub; "
                "only models with open_clip's built-in tokenizer are supported offline"
            )
    try:
        model = open_clip.create_model(model_name, device=device, **kwargs).eval()
    except Exception as exc:  # a text file, a truncated or foreign weight file: name it instead of a traceback
        if "pretrained" not in kwargs:
            raise
        raise ValueError(f"checkpoint {str(checkpoint)!r} could not be loaded as weights of {model_name!r} "
                         f"({type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else 'no message'})"
                         ) from exc
    tokenizer = open_clip.get_tokenizer(model_name)
    pp = getattr(model.visual, "preprocess_cfg", {}) or {}
    size = model.visual.image_size
    size = tuple(size) if isinstance(size, (tuple, list)) else (size, size)
    mean = torch.tensor(pp.get("mean", open_clip.OPENAI_DATASET_MEAN), dtype=torch.float32).view(1, 3, 1, 1)
    std = torch.tensor(pp.get("std", open_clip.OPENAI_DATASET_STD), dtype=torch.float32).view(1, 3, 1, 1)

    def transform(images: np.ndarray) -> torch.Tensor:
        images = np.asarray(images)
        if images.dtype != np.uint8 or images.ndim != 4 or images.shape[-1] != 3:
            raise ValueError(f"images must be uint8 (n, H, W, 3), got {images.dtype} {images.shape}")
        x = torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2))).float() / 255.0  # (n, 3, H, W)
        if tuple(x.shape[-2:]) != size:
            x = torch.nn.functional.interpolate(x, size=size, mode="bicubic", align_corners=False).clamp_(0, 1)
        return (x - mean) / std

    context_length = int(model.context_length)
    classes = tuple(CLASSES[:8] if classnames is None else classnames)
    if not classes or len(set(classes)) != len(classes) or not all(isinstance(c, str) and c for c in classes):
        raise ValueError(f"classnames must be distinct non-empty strings, got {classnames!r}")
    return TinyCLIP(
        model=model,
        tokenize=_OpenClipTokenizer(tokenizer, context_length),  # type: ignore[arg-type]
        classnames=classes,
        context_length=context_length,
        config={"model_name": model_name, "checkpoint": None if checkpoint is None else str(checkpoint)},
        transform=transform,
    )
