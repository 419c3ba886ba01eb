"""Targeted augmentation: among the samples selected this epoch, the top ``aug_ratio`` share by suitability ``a``
gets a strong torchvision v2 policy, the others the standard weak augmentation (random crop with 4-pixel reflect
padding + horizontal flip). Yang et al. (ICML 2025) [derived, unverified reconstruction].

Modes: ``"replace"`` (the strong view replaces the sample; cost unchanged) and ``"extra-view"`` (the weak view plus
one extra strong copy; each extra view costs one more sample-step). Images are uint8 ``[N, H, W, 3]``; batches are
float32 ``[B, 3, H, W]`` normalised as ``(x / 255 - 0.5) / 0.25``.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import torch

from select_augment.errors import SelectAugmentError

POLICIES = ("trivialaugment", "randaugment", "autoaugment", "none")
MIXES = ("none", "mixup", "cutmix")
TARGETINGS = ("top", "uniform", "none")


GEOMETRIC_OPS = ("Rotate", "ShearX", "ShearY")


def _blend(x: torch.Tensor, other: torch.Tensor, ratio: torch.Tensor) -> torch.Tensor:
    """torchvision's ``_blend`` for uint8 with one ratio per image: ``x r + other (1 - r)``, clamped, truncated."""
    r = ratio.float().view(-1, 1, 1, 1)
    return (x.float() * r + other * (1.0 - r)).clamp_(0, 255).to(torch.uint8)


def _gray(x: torch.Tensor) -> torch.Tensor:
    """Float grayscale ``[B, 1, H, W]`` (ITU-R 601-2 weights, floored as torchvision does for uint8)."""
    if x.shape[1] == 1:
        return x.float()
    r, g, b = x.float().unbind(1)
    return (0.2989 * r + 0.587 * g + 0.114 * b).floor_().unsqueeze(1)


def _translate(x: torch.Tensor, shift: torch.Tensor, dim: int) -> torch.Tensor:
    """Shift each image by ``shift[b]`` whole pixels along ``dim`` (-1: x, -2: y), zero fill (torchvision's
    ``affine(translate=...)`` with nearest interpolation)."""
    size = x.shape[dim]
    src = torch.arange(size)[None, :] - shift.long()[:, None]  # [B, size]: source index of each target index
    valid = (src >= 0) & (src < size)
    src = src.clamp(0, size - 1)
    if dim == -1:
        idx = src[:, None, None, :].expand(x.shape)
        mask = valid[:, None, None, :]
    else:
        idx = src[:, None, :, None].expand(x.shape)
        mask = valid[:, None, :, None]
    return torch.where(mask, torch.gather(x, dim, idx), torch.zeros((), dtype=x.dtype))


def apply_op(name: str, x: torch.Tensor, magnitude: torch.Tensor | None) -> torch.Tensor:
    """One TrivialAugment operation on uint8 ``x [B, C, H, W]`` with one magnitude per image (``[B]``, signed), as
    torchvision v2 applies it to a single image (``_apply_image_or_video_transform``), vectorised over the batch."""
    from torchvision.transforms.v2 import functional as F

    if name == "Identity" or len(x) == 0:
        return x
    if name == "Brightness":
        return _blend(x, torch.zeros(()), 1.0 + magnitude)
    if name == "Color":
        return _blend(x, _gray(x), 1.0 + magnitude)
    if name == "Contrast":
        return _blend(x, _gray(x).mean(dim=(-3, -2, -1), keepdim=True), 1.0 + magnitude)
    if name == "Sharpness":
        b, c, h, w = x.shape
        if h <= 2 or w <= 2:
            return x
        kernel = torch.full((3, 3), 1.0 / 13.0)
        kernel[1, 1] = 5.0 / 13.0
        out = x.float()
        blurred = torch.nn.functional.conv2d(out, kernel.expand(c, 1, 3, 3), groups=c).round_()  # [B, C, H-2, W-2]
        view = out[..., 1:-1, 1:-1]
        view.add_((blurred - view) * (1.0 - (1.0 + magnitude)).view(-1, 1, 1, 1))
        return out.clamp_(0, 255).to(torch.uint8)
    if name == "Posterize":
        bits = magnitude.int()
        mask = (((1 << bits) - 1) << (8 - bits)).to(torch.uint8)
        return x & mask.view(-1, 1, 1, 1)
    if name == "Solarize":
        thr = (255.0 * magnitude).view(-1, 1, 1, 1)
        return torch.where(x >= thr, 255 - x, x)
    if name == "AutoContrast":
        return F.autocontrast(x)
    if name == "Equalize":
        return F.equalize(x)
    if name == "TranslateX":
        return _translate(x, magnitude.trunc(), -1)
    if name == "TranslateY":
        return _translate(x, magnitude.trunc(), -2)
    # rotations and shears: torchvision's kernel, image by image
    from torchvision.transforms import v2

    ta = v2.TrivialAugmentWide()
    return torch.stack([ta._apply_image_or_video_transform(img, name, float(m), interpolation=ta.interpolation,
                                                           fill=ta._fill) for img, m in zip(x, magnitude)])


class BatchedTrivialAugment:
    """TrivialAugmentWide (Müller & Hutter, 2021) drawn per image and applied op by op to the whole batch.

    Same op space, 31 magnitude bins and signs as ``torchvision.transforms.v2.TrivialAugmentWide`` (each image: one
    op uniformly, one magnitude bin uniformly, a random sign for signed ops); the images that drew the same op are
    transformed together with their own magnitudes (:func:`apply_op`), which is several times faster than calling
    the torchvision transform once per image. ``x [B, 3, H, W]`` uint8 in and out; draws from ``generator``.
    """

    def __init__(self, *, exclude_ops: tuple[str, ...] = (), num_magnitude_bins: int = 31):
        from torchvision.transforms import v2

        base = v2.TrivialAugmentWide._AUGMENTATION_SPACE
        self._AUGMENTATION_SPACE = {k: v for k, v in base.items() if k not in exclude_ops}
        if not self._AUGMENTATION_SPACE:
            raise SelectAugmentError("exclude_ops removes every operation of the policy")
        self.ops = tuple(self._AUGMENTATION_SPACE)
        self.bins = int(num_magnitude_bins)

    def draw(self, b: int, h: int, w: int, generator: torch.Generator | None = None
             ) -> tuple[torch.Tensor, list[torch.Tensor | None]]:
        """Per-image op index ``[b]`` and per-op signed magnitudes (``[b]`` each, None for magnitude-free ops)."""
        op = torch.randint(len(self.ops), (b,), generator=generator)
        idx = torch.randint(self.bins, (b,), generator=generator)
        sign = torch.where(torch.rand(b, generator=generator) <= 0.5, -1.0, 1.0)
        mags = []
        for name in self.ops:
            fn, signed = self._AUGMENTATION_SPACE[name]
            values = fn(self.bins, h, w)
            if values is None:
                mags.append(None)
            else:
                m = values[idx].float()
                mags.append(m * sign if signed else m)
        return op, mags

    def __call__(self, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        single = x.ndim == 3
        xb = x[None] if single else x
        op, mags = self.draw(len(xb), xb.shape[-2], xb.shape[-1], generator)
        out = xb.clone()
        for k, name in enumerate(self.ops):
            rows = torch.nonzero(op == k).flatten()
            if len(rows):
                out[rows] = apply_op(name, xb[rows], None if mags[k] is None else mags[k][rows])
        return out[0] if single else out


def strong_policy(name: str, *, exclude_ops: tuple[str, ...] = (), batched: bool = True) -> Any:
    """The strong torchvision v2 transform of a policy name (uint8 ``[3, H, W]`` or ``[B, 3, H, W]`` in and out).

    ``exclude_ops`` removes operations from TrivialAugmentWide's / RandAugment's op space (e.g.
    :data:`GEOMETRIC_OPS` where a rotation or shear changes the class, as square vs diamond in the shapes set).
    ``batched=True`` gives :class:`BatchedTrivialAugment` for ``"trivialaugment"`` (the same distribution, drawn per
    image, applied per op group); ``False`` torchvision's transform, called once per image."""
    from torchvision.transforms import v2

    if name not in POLICIES:
        raise SelectAugmentError(f"policy must be one of {POLICIES}, got {name!r}")
    if name == "none":
        return None
    if name == "trivialaugment" and batched:
        unknown = [op for op in exclude_ops if op not in v2.TrivialAugmentWide._AUGMENTATION_SPACE]
        if unknown:
            raise SelectAugmentError(f"exclude_ops: unknown operations {unknown}; known: "
                                     f"{sorted(v2.TrivialAugmentWide._AUGMENTATION_SPACE)}")
        return BatchedTrivialAugment(exclude_ops=tuple(exclude_ops))
    if name == "autoaugment":
        if exclude_ops:
            raise SelectAugmentError("exclude_ops is supported for trivialaugment and randaugment only")
        return v2.AutoAugment(v2.AutoAugmentPolicy.CIFAR10)
    base = v2.TrivialAugmentWide if name == "trivialaugment" else v2.RandAugment
    unknown = [op for op in exclude_ops if op not in base._AUGMENTATION_SPACE]
    if unknown:
        raise SelectAugmentError(f"exclude_ops: unknown operations {unknown}; known: "
                                 f"{sorted(base._AUGMENTATION_SPACE)}")
    cls = base
    if exclude_ops:
        space = {k: v for k, v in base._AUGMENTATION_SPACE.items() if k not in exclude_ops}
        cls = type(f"{base.__name__}Without", (base,), {"_AUGMENTATION_SPACE": space})
    return cls() if name == "trivialaugment" else cls(num_ops=2, magnitude=9)


def weak_augment(x: torch.Tensor, generator: torch.Generator, *, pad: int = 4, flip: bool = True) -> torch.Tensor:
    """Random crop after ``pad``-pixel reflect padding, and a horizontal flip with probability 1/2 (``flip``), batched.
    ``x [B, C, H, W]`` (any dtype) -> same shape."""
    b, _, h, w = x.shape
    if b == 0:
        return x
    xp = torch.nn.functional.pad(x.float(), (pad, pad, pad, pad), mode="reflect").to(x.dtype)  # [B, C, H+2p, W+2p]
    oy = torch.randint(0, 2 * pad + 1, (b,), generator=generator)
    ox = torch.randint(0, 2 * pad + 1, (b,), generator=generator)
    rows = (oy[:, None] + torch.arange(h))[:, None, :, None]  # [B, 1, H, 1]
    cols = (ox[:, None] + torch.arange(w))[:, None, None, :]  # [B, 1, 1, W]
    out = xp[torch.arange(b)[:, None, None, None], torch.arange(x.shape[1])[None, :, None, None], rows, cols]
    flips = torch.rand(b, generator=generator) < 0.5
    if not flip:
        return out
    return torch.where(flips[:, None, None, None], out.flip(-1), out)


def to_input(x_uint8: torch.Tensor) -> torch.Tensor:
    """uint8 ``[B, 3, H, W]`` -> normalised float32 ``[B, 3, H, W]``."""
    return (x_uint8.float() / 255.0 - 0.5) / 0.25


class TargetedAugment(torch.utils.data.Dataset):
    """Wraps ``dataset`` (``(images uint8 [N, H, W, 3], labels [N])`` or an object with ``.images``/``.labels``)
    and a selector; after :meth:`set_epoch`, ``self.strong`` marks the samples that get the strong policy.

    Args:
        dataset: the training images and labels.
        selector: a :class:`~select_augment.DynamicSelector`, :class:`~select_augment.InfoBatch` or any sampler with
            ``set_epoch`` and ``selected``.
        policy: ``"trivialaugment"`` (default), ``"randaugment"`` (2 ops, magnitude 9), ``"autoaugment"`` (CIFAR-10
            policy) or ``"none"``.
        aug_ratio: share of ``S_t`` that gets the strong policy: exactly ``round(aug_ratio |S_t|)`` samples.
        mode: ``"replace"`` or ``"extra-view"``.
        mix: ``"none"``, ``"mixup"`` or ``"cutmix"`` (torchvision v2, applied among the strong views of a batch;
            targets become soft).
        targeting: ``"top"`` (the top by ``a``, ties to the smaller id), ``"uniform"`` (a uniformly random subset of
            the same size: the ablation) or ``"none"`` (no strong augmentation).
        suitability: ``a [N]``; default ``selector.scores.suitability``.
        num_classes: for soft targets; default ``labels.max() + 1``.
        exclude_ops: operations removed from the policy's op space (see :func:`strong_policy`).
        seed: RNG seed of the augmentation draws.
        pad: reflect padding of the weak random crop (default ``max(1, H // 8)``: 4 pixels at 32x32).
        flip: random horizontal flips in the weak augmentation (off for digits, where a flip can change the class).
        batched: TrivialAugment drawn per image but applied per op group on the batch (:class:`BatchedTrivialAugment`,
            the default) or torchvision's transform called per image.
    """

    def __init__(self, dataset: Any, selector: Any, *, policy: str = "trivialaugment", aug_ratio: float = 0.5,
                 mode: Literal["replace", "extra-view"] = "replace", mix: str = "none",
                 targeting: Literal["top", "uniform", "none"] = "top", suitability: Any = None,
                 num_classes: int | None = None, exclude_ops: tuple[str, ...] = (), seed: int = 0,
                 pad: int | None = None, flip: bool = True, batched: bool = True):
        images, labels = (dataset if isinstance(dataset, tuple) else (dataset.images, dataset.labels))
        images = np.asarray(images)
        if images.dtype != np.uint8 or images.ndim != 4 or images.shape[-1] != 3:
            raise SelectAugmentError(f"images must be uint8 [N, H, W, 3], got {images.dtype} {images.shape}")
        labels = np.asarray(labels, dtype=np.int64)
        if labels.shape != (len(images),):
            raise SelectAugmentError(f"labels must be [N] with N = {len(images)} images, got {labels.shape}")
        self.policy_name = policy
        self.policy = strong_policy(policy, exclude_ops=tuple(exclude_ops), batched=batched)
        if pad is not None and (isinstance(pad, bool) or not isinstance(pad, int) or not 0 <= pad < images.shape[1]):
            raise SelectAugmentError(f"pad must be an integer in [0, {images.shape[1]}), got {pad!r}")
        self.pad = max(1, images.shape[1] // 8) if pad is None else int(pad)
        self.flip = bool(flip)
        if not (isinstance(aug_ratio, (int, float)) and 0.0 <= aug_ratio <= 1.0):
            raise SelectAugmentError(f"aug_ratio must be in [0, 1], got {aug_ratio!r}")
        if mode not in ("replace", "extra-view"):
            raise SelectAugmentError(f"mode must be 'replace' or 'extra-view', got {mode!r}")
        if mix not in MIXES:
            raise SelectAugmentError(f"mix must be one of {MIXES}, got {mix!r}")
        if targeting not in TARGETINGS:
            raise SelectAugmentError(f"targeting must be one of {TARGETINGS}, got {targeting!r}")
        if suitability is None and targeting == "top":
            scores = getattr(selector, "scores", None)
            if scores is None:
                raise SelectAugmentError("targeting='top' needs suitability scores: pass suitability= or a "
                                         "DynamicSelector")
            suitability = scores.suitability
        if suitability is not None:
            suitability = np.asarray(suitability, dtype=np.float64)
            if suitability.shape != labels.shape:
                raise SelectAugmentError(f"suitability must be [N] = [{len(labels)}], got {suitability.shape}")
        self.images = torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2)))  # [N, 3, H, W] uint8
        self.labels = torch.from_numpy(labels)
        self.num_classes = int(labels.max()) + 1 if num_classes is None else int(num_classes)
        self.selector, self.aug_ratio, self.mode, self.mix, self.targeting = selector, float(aug_ratio), mode, mix, \
            targeting
        self.suitability = suitability
        self.seed = int(seed)
        self.strong = np.zeros(len(labels), dtype=bool)
        self.generator = torch.Generator().manual_seed(self.seed)
        self.epoch = -1

    def __len__(self) -> int:
        return len(self.labels)

    def set_epoch(self, epoch: int) -> None:
        """Select ``S_t`` (``selector.set_epoch``) and mark the ``round(aug_ratio |S_t|)`` strong samples."""
        self.selector.set_epoch(epoch)
        self.epoch = int(epoch)
        sel = np.asarray(self.selector.selected, dtype=np.int64)
        self.strong = np.zeros(len(self.labels), dtype=bool)
        n_strong = int(round(self.aug_ratio * len(sel))) if self.targeting != "none" and self.policy else 0
        if n_strong:
            if self.targeting == "top":
                order = np.lexsort((sel, -self.suitability[sel]))  # a descending, then id ascending
                self.strong[sel[order[:n_strong]]] = True
            else:
                rng = np.random.default_rng([self.seed, self.epoch, 3])
                self.strong[rng.choice(sel, size=n_strong, replace=False)] = True
        self.generator = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)

    def _strong(self, x: torch.Tensor) -> torch.Tensor:
        if not len(x):
            return x
        if isinstance(self.policy, BatchedTrivialAugment):
            return self.policy(x, self.generator)
        return torch.stack([self.policy(img) for img in x])

    def batch(self, ids: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A training batch for the sample ids ``[B]``: ``(x [B', 3, H, W] float32, targets, view_ids [B'])``.

        ``replace``: ``B' = B``; ``extra-view``: ``B' = B + #strong``, the extra views appended (their ids repeat
        the originals'). ``targets`` are long ``[B']`` labels, or float ``[B', C]`` probabilities with mixing."""
        ids = torch.as_tensor(np.asarray(ids, dtype=np.int64))
        x = self.images[ids]
        y = self.labels[ids]
        strong = torch.from_numpy(self.strong[ids.numpy()])
        if self.mode == "replace":
            x = weak_augment(x, self.generator, pad=self.pad, flip=self.flip)
            if strong.any():
                x[strong] = self._strong(x[strong])
            view_ids = ids
            mixed_rows = strong
        else:
            extra = self._strong(weak_augment(x[strong], self.generator, pad=self.pad, flip=self.flip))
            x = torch.cat([weak_augment(x, self.generator, pad=self.pad, flip=self.flip), extra])
            y = torch.cat([y, y[strong]])
            view_ids = torch.cat([ids, ids[strong]])
            mixed_rows = torch.cat([torch.zeros(len(ids), dtype=torch.bool), torch.ones(len(extra), dtype=torch.bool)])
        xf = to_input(x)
        if self.mix == "none":
            return xf, y, view_ids
        from torchvision.transforms import v2

        soft = torch.nn.functional.one_hot(y, self.num_classes).float()
        if int(mixed_rows.sum()) >= 2:
            mixer = v2.MixUp(num_classes=self.num_classes) if self.mix == "mixup" else v2.CutMix(
                num_classes=self.num_classes)
            xm, ym = mixer(xf[mixed_rows], y[mixed_rows])
            xf[mixed_rows], soft[mixed_rows] = xm, ym
        return xf, soft, view_ids

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int, int]:
        """One sample ``(x [3, H, W] float32, label, id)`` for a ``DataLoader`` over the selector (``replace`` view;
        use :meth:`batch` for ``extra-view`` and mixing)."""
        x = weak_augment(self.images[i : i + 1], self.generator, pad=self.pad, flip=self.flip)
        if self.strong[i] and self.policy is not None:
            x = self._strong(x)
        return to_input(x)[0], int(self.labels[i]), int(i)

    @property
    def extra_views(self) -> int:
        """Extra sample-steps this epoch (``#strong`` in extra-view mode, else 0)."""
        return int(self.strong.sum()) if self.mode == "extra-view" else 0
