"""Data: the tiny-CLIP test bed's shapes in four regimes with ground-truth flags, sklearn's digits, a user's image
folder, and CLIP features for scoring. Nothing is downloaded.

Seeds: the shared tiny CLIP is pretrained on generator seeds 0, 1 (textures), 7919 and 7920 (its zero-shot check);
downstream sets use ``10_000 + 10 * seed + {0: train, 1: validation, 2: test}``, disjoint from those.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from select_augment.errors import SelectAugmentError

Regime = Literal["clean", "noisy", "ambiguous", "duplicates"]
REGIMES = ("clean", "noisy", "ambiguous", "duplicates")
DIGIT_NAMES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


@dataclass
class ImageSet:
    """uint8 images ``[N, H, W, 3]``, labels ``[N]``, class names and ground-truth flags (boolean ``[N]`` each)."""

    images: np.ndarray
    labels: np.ndarray
    classnames: tuple[str, ...]
    flags: dict[str, np.ndarray] = field(default_factory=dict)
    prompt: str = "a photo of a {}"

    def __len__(self) -> int:
        return len(self.labels)


def data_seed(seed: int, split: str) -> int:
    return 10_000 + 10 * int(seed) + {"train": 0, "val": 1, "test": 2}[split]


def shapes(n: int, *, regime: Regime = "clean", seed: int, split: str = "train", num_classes: int = 8,
           label_noise: float = 0.3, ambiguous_frac: float = 0.1, duplicate_frac: float = 0.3) -> ImageSet:
    """Shapes of the tiny-CLIP test bed (its first ``num_classes`` classes, the ones the cached CLIP saw) in one
    regime: ``clean``; ``noisy`` (``label_noise`` symmetric label noise); ``ambiguous`` (``ambiguous_frac`` with a
    second shape overlaid); ``duplicates`` (``duplicate_frac`` jittered near-duplicates in groups of 8). Only the
    training split is corrupted; validation and test splits are clean."""
    from icml25.testbeds.clip import CLASSES, make_shapes

    if regime not in REGIMES:
        raise SelectAugmentError(f"regime must be one of {REGIMES}, got {regime!r}")
    if not 2 <= num_classes <= 8:
        raise SelectAugmentError(f"num_classes must be in [2, 8] (the classes the tiny CLIP saw), got {num_classes}")
    corrupt = split == "train"
    d = make_shapes(int(n), seed=data_seed(seed, split), classes=CLASSES[:num_classes],
                    label_noise=label_noise if corrupt and regime == "noisy" else 0.0,
                    ambiguous_frac=ambiguous_frac if corrupt and regime == "ambiguous" else 0.0,
                    near_duplicate_frac=duplicate_frac if corrupt and regime == "duplicates" else 0.0)
    flags = {k: np.asarray(getattr(d, k), bool) for k in ("label_noisy", "ambiguous", "near_duplicate", "rare_mode")
             if getattr(d, k) is not None}
    return ImageSet(d.images, np.asarray(d.labels, np.int64), tuple(d.classnames), flags)


def digits(*, seed: int = 0, split: str = "train", val_frac: float = 0.2, test_frac: float = 0.3,
           image_size: int = 32, label_noise: float = 0.0) -> ImageSet:
    """sklearn's bundled digits (1797 images, 8x8) as ``image_size`` RGB uint8 (8: the native images; 32: each pixel
    a 4x4 block), class names "zero".."nine", prompt "a photo of the digit {}"; a seeded split (scikit-learn's bundled
    copy; nothing is downloaded). ``label_noise`` (training split only): that share of the labels, drawn with the
    seed, is replaced by another class drawn uniformly (flag ``label_noisy``); validation and test stay clean."""
    if not (isinstance(label_noise, (int, float)) and 0.0 <= label_noise <= 1.0):
        raise SelectAugmentError(f"label_noise must be in [0, 1], got {label_noise!r}")
    if image_size not in (8, 16, 32):
        raise SelectAugmentError(f"image_size must be 8, 16 or 32 for digits, got {image_size!r}")
    if split not in ("train", "val", "test"):
        raise SelectAugmentError(f"split must be 'train', 'val' or 'test', got {split!r}")
    try:
        from sklearn.datasets import load_digits
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SelectAugmentError("--dataset digits needs scikit-learn: pip install scikit-learn") from exc
    d = load_digits()
    x = (d.images / 16.0 * 255.0).clip(0, 255).astype(np.uint8)  # [N, 8, 8]
    f = image_size // 8
    x = np.kron(x, np.ones((1, f, f), dtype=np.uint8))  # [N, 8f, 8f]: each pixel an f x f block
    x = np.repeat(x[..., None], 3, axis=-1)  # [N, 32, 32, 3]
    perm = np.random.default_rng(seed).permutation(len(x))
    n_test, n_val = int(test_frac * len(x)), int(val_frac * len(x))
    parts = {"test": perm[:n_test], "val": perm[n_test:n_test + n_val], "train": perm[n_test + n_val:]}
    idx = parts[split]
    y = d.target[idx].astype(np.int64)
    flags: dict[str, np.ndarray] = {}
    if split == "train" and label_noise > 0:
        rng = np.random.default_rng([seed, 7])  # its own stream: the split does not depend on the noise
        noisy = rng.random(len(y)) < label_noise
        y = y.copy()
        y[noisy] = (y[noisy] + rng.integers(1, 10, size=int(noisy.sum()))) % 10  # another class, uniformly
        flags["label_noisy"] = noisy
    return ImageSet(x[idx], y, DIGIT_NAMES, flags, prompt="a photo of the digit {}")


def image_folder(path: str | Path, *, image_size: int = 32) -> ImageSet:
    """A user's ``torchvision.datasets.ImageFolder`` (one sub-folder per class), resized to ``image_size``."""
    from torchvision.datasets import ImageFolder
    from torchvision.transforms import v2

    root = Path(path)
    if not root.is_dir():
        raise SelectAugmentError(f"--folder {str(root)!r} is not a directory of class sub-folders")
    ds = ImageFolder(str(root))
    if len(ds) == 0:
        raise SelectAugmentError(f"--folder {str(root)!r} holds no images")
    tf = v2.Compose([v2.PILToTensor(), v2.Resize((image_size, image_size), antialias=True)])
    imgs = np.stack([tf(ds[i][0].convert("RGB")).permute(1, 2, 0).numpy() for i in range(len(ds))])
    return ImageSet(imgs.astype(np.uint8), np.asarray(ds.targets, np.int64), tuple(ds.classes), {})


def check_classnames(classnames: Any, num_classes: int) -> tuple[str, ...]:
    names = tuple(classnames)
    if not names or any(not isinstance(c, str) or not c.strip() for c in names):
        raise SelectAugmentError(f"class names must be non-empty strings, got {list(names)}")
    if len(set(names)) != len(names):
        raise SelectAugmentError(f"class names must be distinct, got {list(names)}")
    if len(names) != num_classes:
        raise SelectAugmentError(f"there must be one class name per class ({num_classes}), got {len(names)}")
    return names


def check_vocabulary(bundle_or_none: Any, classnames: Any, prompts: Any) -> None:
    """Fail fast, before any CLIP model is built or loaded, when the shared tiny CLIP (``bundle_or_none`` None) cannot
    read the prompts of these class names: its word-level vocabulary knows only the shape, colour and texture words
    it was pretrained on. A user's open_clip model (BPE tokenizer) reads any text, so nothing is checked for it."""
    if bundle_or_none is not None:
        return
    from icml25.testbeds.clip.tokenizer import WordTokenizer

    tok = WordTokenizer()
    bad = []
    for c in classnames:
        for p in prompts:
            try:
                tok.words(p.format(c))
            except ValueError:
                bad.append(c)
                break
    if bad:
        raise SelectAugmentError(
            f"class name(s) {bad} are outside the tiny CLIP's word vocabulary (it knows only the shapes it was "
            "pretrained on); pass your own open_clip model with --clip-arch NAME --clip-checkpoint FILE, or "
            "--text-features prototypes to score against class prototypes of the image features")


def clip_features(bundle: Any, images: np.ndarray, classnames: Any, *,
                  templates: Any = ("a photo of a {}", "a picture of a {}", "an image of a {}")
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Image features ``[N, d]`` and prompt-ensembled class text features ``[C, d]`` (both L2-normalised) from an
    open_clip bundle (the shared tiny CLIP or :func:`icml25.testbeds.clip.load_open_clip`)."""
    import torch
    from icml25.testbeds.clip import encode_images, encode_text

    names = check_classnames(classnames, len(classnames))
    text = torch.stack([encode_text(bundle, [t.format(c) for c in names]) for t in templates]).mean(0)
    text = text / text.norm(dim=-1, keepdim=True)  # [C, d]
    return encode_images(bundle, images).double().numpy(), text.double().numpy()


def upsample(images: np.ndarray, size: int = 32) -> np.ndarray:
    """Nearest-neighbour upsampling of uint8 ``[N, h, w, 3]`` to ``[N, size, size, 3]`` (``size`` a multiple of h)."""
    f = size // images.shape[1]
    if f < 1 or f * images.shape[1] != size:
        raise SelectAugmentError(f"size {size} must be a multiple of the image size {images.shape[1]}")
    return images.repeat(f, axis=1).repeat(f, axis=2) if f > 1 else images


def prototype_text_features(features: np.ndarray, labels: np.ndarray, num_classes: int) -> np.ndarray:
    """Class prototypes ``t_c = normalize(mean_{y_i = c} z_i)`` ``[C, d]``: the stand-in for class text features when
    the CLIP model has no words for the classes (the tiny CLIP and the digits)."""
    z = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    missing = sorted(set(range(num_classes)) - set(y.tolist()))
    if missing:
        raise SelectAugmentError(f"every class needs at least one sample for its prototype; missing {missing}")
    t = np.stack([z[y == c].mean(0) for c in range(num_classes)])
    return t / np.linalg.norm(t, axis=1, keepdims=True)


def load_clip(checkpoint: str | None = None, *, arch: str | None = None) -> Any:
    """The cached, pretrained shared tiny CLIP (built offline in ~3 minutes on first use), or a user's open_clip
    model from local files (``arch`` + ``checkpoint``)."""
    from icml25.testbeds import clip as tb

    if checkpoint:
        if not arch:
            raise SelectAugmentError("--clip-checkpoint needs --clip-arch (an open_clip architecture name)")
        return tb.load_open_clip(arch, checkpoint)
    return tb.pretrained_tiny_clip()
