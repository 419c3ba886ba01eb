"""Tiny CLIP test bed: procedurally generated captioned shapes, textures and corruptions."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    pass


FORMAT_VERSION = 1
CLASSES = (
    "circle",
    "square",
    "triangle",
    "diamond",
    "ring",
    "plus",
    "cross",
    "ellipse",
    "hexagon",
    "star",
    "heart",
    "bar",
)
COLORS = {
    "red": (220, 40, 40),
    "green": (40, 180, 60),
    "blue": (50, 90, 230),
    "yellow": (230, 215, 40),
    "magenta": (210, 50, 210),
    "cyan": (40, 205, 215),
    "orange": (245, 140, 30),
    "white": (240, 240, 240),
}
SIZES = ("small", "medium", "large")
_SIZE_RANGE = {"small": (0.20, 0.26), "medium": (0.26, 0.33), "large": (0.33, 0.40)}  # radius / image side
TEXTURES = ("striped", "checkered", "dotted", "noisy", "wavy")
TEMPLATES = (
    "a photo of a {}",
    "a picture of a {}",
    "a drawing of a {}",
    "an image of a {}",
    "a {}",
    "a photo of the {}",
)



# ======================================================================================================= data
@dataclass
class ShapesData:
    """Generated images and their ground truth.

    Attributes:
        images: uint8 ``(n, H, W, 3)``.
        labels: int64 ``(n,)`` index into ``classnames`` (after label noise, see ``attrs["true_label"]``).
        captions: ``n`` strings, e.g. ``"a photo of a small red circle"`` (they name ``labels``).
        classnames: the class names ``labels`` index.
        attrs: per-sample nuisance factors, arrays of length n: ``true_label``, ``color`` (index into
            ``list(COLORS)``), ``size`` (index into :data:`SIZES`), ``cx``, ``cy``, ``radius`` (pixels),
            ``rotation`` (radians), ``noise_std``, ``background``, ``duplicate_of`` (prototype index or -1),
            ``second_label`` (overlaid class or -1).
        label_noisy, ambiguous, near_duplicate, rare_mode: bool ``(n,)`` ground-truth flags.
    """

    images: np.ndarray
    labels: np.ndarray
    captions: list[str]
    classnames: tuple[str, ...]
    attrs: dict[str, np.ndarray] = field(default_factory=dict)
    label_noisy: np.ndarray | None = None
    ambiguous: np.ndarray | None = None
    near_duplicate: np.ndarray | None = None
    rare_mode: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, idx: Any) -> ShapesData:
        """The samples at ``idx`` (an index array or boolean mask)."""
        idx = np.asarray(idx)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)

        def take(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[idx]

        return ShapesData(
            images=self.images[idx],
            labels=self.labels[idx],
            captions=[self.captions[i] for i in idx],
            classnames=self.classnames,
            attrs={k: v[idx] for k, v in self.attrs.items()},
            label_noisy=take(self.label_noisy),
            ambiguous=take(self.ambiguous),
            near_duplicate=take(self.near_duplicate),
            rare_mode=take(self.rare_mode),
        )


def _check_classes(classes: Sequence[str] | None) -> tuple[str, ...]:
    if classes is None:
        return CLASSES
    if isinstance(classes, str):
        raise ValueError(f"classes must be a sequence of class names, got the string {classes!r}")
    classes = tuple(classes)
    if not classes:
        raise ValueError("classes must not be empty")
    if len(set(classes)) != len(classes):
        raise ValueError(f"classes must not contain duplicates, got {list(classes)}")
    bad = [c for c in classes if c not in CLASSES]
    if bad:
        raise ValueError(f"classes: unknown shape(s) {bad}; allowed are {list(CLASSES)}")
    return classes


def _check_image_size(image_size: int) -> None:
    if isinstance(image_size, bool) or not isinstance(image_size, int) or not 16 <= image_size <= 256:
        raise ValueError(
            f"image_size must be an int in 16..256 (the shapes need at least 16 pixels), got {image_size!r}"
        )


def _shape_mask(shape: str, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Inside-mask of a unit-size ``shape`` at normalised, rotated coordinates ``u, v`` (any equal shapes)."""
    r = np.sqrt(u * u + v * v)
    if shape == "circle":
        return r <= 0.9
    if shape == "ring":
        return (r <= 1.0) & (r >= 0.55)
    if shape == "square":
        return np.maximum(np.abs(u), np.abs(v)) <= 0.75
    if shape == "diamond":
        return np.abs(u) + np.abs(v) <= 1.0
    if shape == "ellipse":
        return (u / 1.0) ** 2 + (v / 0.5) ** 2 <= 1.0
    if shape == "bar":
        return (np.abs(u) <= 1.0) & (np.abs(v) <= 0.22)
    if shape == "plus":
        return ((np.abs(u) <= 0.28) & (np.abs(v) <= 1.0)) | ((np.abs(v) <= 0.28) & (np.abs(u) <= 1.0))
    if shape == "cross":  # plus rotated by 45 degrees
        a, b = (u + v) / math.sqrt(2), (u - v) / math.sqrt(2)
        return ((np.abs(a) <= 0.26) & (np.abs(b) <= 1.0)) | ((np.abs(b) <= 0.26) & (np.abs(a) <= 1.0))
    if shape in ("triangle", "hexagon"):
        k, apothem = (3, 0.5) if shape == "triangle" else (6, 0.85)
        inside = np.ones_like(u, dtype=bool)
        for j in range(k):
            phi = 2 * math.pi * j / k - math.pi / 2  # flat edge on top: the triangle points down
            inside &= u * math.cos(phi) + v * math.sin(phi) <= apothem
        return inside
    if shape == "star":
        theta = np.arctan2(v, u) + math.pi / 2
        return r <= 0.42 + 0.58 * ((1 + np.cos(5 * theta)) / 2) ** 2
    if shape == "heart":
        x, y = u * 1.25, -v * 1.25 + 0.15  # image v grows downwards
        return (x * x + y * y - 1) ** 3 - x * x * y**3 <= 0
    raise AssertionError(shape)  # pragma: no cover


def _render(
    shape_idx: np.ndarray,
    color: np.ndarray,
    cx: np.ndarray,
    cy: np.ndarray,
    radius: np.ndarray,
    rotation: np.ndarray,
    canvas: np.ndarray,
) -> np.ndarray:
    """Paint shapes onto ``canvas`` (n, H, W, 3) float in place, 2x2 supersampled; returns it."""
    n, H, W, _ = canvas.shape
    ss = 2
    grid = (np.arange(H * ss, dtype=np.float32) + 0.5) / ss
    ys, xs = np.meshgrid(grid, grid[: W * ss] if W == H else (np.arange(W * ss, dtype=np.float32) + 0.5) / ss,
                         indexing="ij")  # fmt: skip
    cx, cy = cx.astype(np.float32), cy.astype(np.float32)
    radius, rotation = radius.astype(np.float32), rotation.astype(np.float32)
    for s in np.unique(shape_idx):
        sel = np.flatnonzero(shape_idx == s)
        for start in range(0, len(sel), 512):
            b = sel[start : start + 512]
            dx = xs[None] - cx[b, None, None]  # (b, H*ss, W*ss)
            dy = ys[None] - cy[b, None, None]
            c, si = np.cos(rotation[b])[:, None, None], np.sin(rotation[b])[:, None, None]
            u = (c * dx + si * dy) / radius[b, None, None]
            v = (-si * dx + c * dy) / radius[b, None, None]
            mask = _shape_mask(CLASSES[int(s)], u, v).astype(np.float32)
            alpha = mask.reshape(len(b), H, ss, W, ss).mean(axis=(2, 4))[..., None]  # (b, H, W, 1)
            canvas[b] = canvas[b] * (1 - alpha) + alpha * color[b, None, None, :]
    return canvas


def heldout_combos(classes: Sequence[str] | None = None) -> frozenset[tuple[str, str]]:
    """The colour x shape pairs held out of pretraining: for class number k of :data:`CLASSES`, the colour
    ``list(COLORS)[(3 k + 1) % 8]`` (one colour per shape; every colour held out for one or two shapes)."""
    names = list(COLORS)
    classes = _check_classes(classes)
    return frozenset((c, names[(3 * CLASSES.index(c) + 1) % len(names)]) for c in classes)


def make_shapes(
    n: int,
    *,
    seed: int,
    classes: Sequence[str] | None = None,
    image_size: int = 32,
    colors: Sequence[str] | None = None,
    exclude_combos: Iterable[tuple[str, str]] | None = None,
    only_combos: Iterable[tuple[str, str]] | None = None,
    label_noise: float = 0.0,
    ambiguous_frac: float = 0.0,
    near_duplicate_frac: float = 0.0,
    duplicate_group: int = 8,
    rare_frac: float = 0.0,
    max_noise: float = 12.0,
    position_jitter: float = 0.15,
) -> ShapesData:
    """``n`` captioned shape images with ground-truth nuisance factors and flags.

    Args:
        n: number of images (>= 1).
        seed: numpy seed; the same arguments give identical data. Keep pretraining and downstream seeds disjoint.
        classes: subset of :data:`CLASSES` (labels index this tuple); default all 12.
        image_size: side in pixels (16..256).
        colors: subset of :data:`COLORS` names; default all 8.
        exclude_combos: ``(shape, colour)`` pairs never drawn (e.g. :func:`heldout_combos`).
        only_combos: if given, draw only these ``(shape, colour)`` pairs (e.g. to test held-out combos).
        label_noise: fraction whose label (and caption) is replaced by another class; flagged ``label_noisy``.
        ambiguous_frac: fraction with a second, overlapping shape of another class; flagged ``ambiguous``.
        near_duplicate_frac: fraction that are jittered copies (+-1 px, fresh pixel noise) of a prototype, in groups
            of ``duplicate_group``; flagged ``near_duplicate`` (prototypes included).
        rare_frac: fraction drawn tiny (radius 10-14% of the side) or far off-centre (partly outside the image);
            flagged ``rare_mode``.
        max_noise: maximum std of the Gaussian pixel noise (0..255 scale).
        position_jitter: the centre is uniform in ``S/2 +- position_jitter * S`` (clipped so that the shape stays
            inside); 0.5 means anywhere.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    classes = _check_classes(classes)
    _check_image_size(image_size)
    color_names = list(COLORS) if colors is None else list(colors)
    bad = [c for c in color_names if c not in COLORS]
    if bad or not color_names or len(set(color_names)) != len(color_names):
        raise ValueError(f"colors must be distinct names from {list(COLORS)}, got {colors!r}")
    for name, frac in (
        ("label_noise", label_noise),
        ("ambiguous_frac", ambiguous_frac),
        ("near_duplicate_frac", near_duplicate_frac),
        ("rare_frac", rare_frac),
    ):
        if not 0.0 <= frac <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {frac}")
    if label_noise > 0 and len(classes) < 2:
        raise ValueError("label_noise > 0 needs at least 2 classes")
    if ambiguous_frac > 0 and len(classes) < 2:
        raise ValueError("ambiguous_frac > 0 needs at least 2 classes")
    if duplicate_group < 2:
        raise ValueError(f"duplicate_group must be >= 2, got {duplicate_group}")

    combos = [(c, col) for c in classes for col in color_names]
    if only_combos is not None:
        wanted = set(only_combos)
        unknown = [p for p in wanted if p[0] not in classes or p[1] not in color_names]
        if unknown:
            raise ValueError(
                f"only_combos: pairs {sorted(unknown)[:4]} are not (shape in classes, colour in colors)"
            )
        combos = [p for p in combos if p in wanted]
    if exclude_combos is not None:
        excluded = set(exclude_combos)
        combos = [p for p in combos if p not in excluded]
    if not combos:
        raise ValueError("no (shape, colour) combination is left to draw after exclude_combos/only_combos")

    rng = np.random.default_rng(seed)
    S = image_size
    pick = rng.integers(0, len(combos), size=n)
    shape_name = [combos[i][0] for i in pick]
    label = np.array([classes.index(s) for s in shape_name], dtype=np.int64)
    shape_idx = np.array([CLASSES.index(s) for s in shape_name])
    color_idx = np.array([list(COLORS).index(combos[i][1]) for i in pick])
    size_idx = rng.integers(0, len(SIZES), size=n)
    lo = np.array([_SIZE_RANGE[s][0] for s in SIZES])[size_idx]
    hi = np.array([_SIZE_RANGE[s][1] for s in SIZES])[size_idx]
    radius = rng.uniform(lo, hi) * S
    if not 0.0 <= position_jitter <= 0.5:
        raise ValueError(f"position_jitter must be in [0, 0.5], got {position_jitter}")
    lo_c = np.maximum(radius * 0.95, S / 2 - position_jitter * S)
    hi_c = np.maximum(lo_c, np.minimum(S - radius * 0.95, S / 2 + position_jitter * S))
    cx = rng.uniform(lo_c, hi_c)
    cy = rng.uniform(lo_c, hi_c)
    rotation = rng.uniform(-math.pi / 9, math.pi / 9, size=n)
    noise_std = rng.uniform(0, max_noise, size=n)
    background = rng.uniform(15, 90, size=n)
    rgb = np.array(list(COLORS.values()), dtype=np.float32)[color_idx]
    rgb = np.clip(rgb + rng.normal(0, 12, size=(n, 3)), 0, 255)  # colour jitter

    rare = rng.random(n) < rare_frac
    tiny = rare & (rng.random(n) < 0.5)
    off = rare & ~tiny
    radius[tiny] = rng.uniform(0.10, 0.14, size=int(tiny.sum())) * S
    size_idx[tiny] = 0
    if off.any():  # centre near an edge or corner, about 35% of the shape outside
        k = int(off.sum())
        side = rng.integers(0, 4, size=k)
        pos = rng.uniform(0.2 * S, 0.8 * S, size=k)
        edge = radius[off] * 0.35
        cx[off] = np.where(side == 0, edge, np.where(side == 1, S - edge, pos))
        cy[off] = np.where(side == 2, edge, np.where(side == 3, S - edge, pos))

    duplicate_of = np.full(n, -1)
    near_dup = np.zeros(n, dtype=bool)
    n_dup = int(round(near_duplicate_frac * n))
    if n_dup >= 2:
        members = rng.permutation(n)[:n_dup]
        for g in range(0, n_dup, duplicate_group):
            group = members[g : g + duplicate_group]
            if len(group) < 2:
                break
            proto = group[0]
            for i in group[1:]:
                for arr in (label, shape_idx, color_idx, size_idx, radius, rotation, background):
                    arr[i] = arr[proto]
                rgb[i] = rgb[proto]
                cx[i] = cx[proto] + rng.uniform(-1, 1)
                cy[i] = cy[proto] + rng.uniform(-1, 1)
                noise_std[i] = noise_std[proto]
                duplicate_of[i] = proto
                rare[i] = rare[proto]
            near_dup[group] = True

    canvas = np.repeat(background[:, None, None, None], 3, axis=3) * np.ones((1, S, S, 3), dtype=np.float32)
    canvas = canvas.astype(np.float32)
    _render(shape_idx, rgb, cx, cy, radius, rotation, canvas)

    ambiguous = (rng.random(n) < ambiguous_frac) & ~near_dup
    second = np.full(n, -1)
    if ambiguous.any():
        idx = np.flatnonzero(ambiguous)
        other = np.array(
            [rng.choice([CLASSES.index(c) for c in classes if CLASSES.index(c) != shape_idx[i]]) for i in idx]
        )
        second[idx] = other
        ang = rng.uniform(0, 2 * math.pi, size=len(idx))
        ocx = np.clip(cx[idx] + radius[idx] * np.cos(ang), 0, S)  # centre one radius away: about 50% overlap
        ocy = np.clip(cy[idx] + radius[idx] * np.sin(ang), 0, S)
        ocol = np.array(list(COLORS.values()), dtype=np.float32)[rng.integers(0, len(COLORS), size=len(idx))]
        sub = canvas[idx]
        _render(other, ocol, ocx, ocy, radius[idx], rotation[idx], sub)
        canvas[idx] = sub

    canvas += rng.normal(0, 1, size=canvas.shape).astype(np.float32) * noise_std[:, None, None, None]
    images = np.clip(np.rint(canvas), 0, 255).astype(np.uint8)

    true_label = label.copy()
    noisy = rng.random(n) < label_noise
    if noisy.any():
        shift = rng.integers(1, len(classes), size=int(noisy.sum()))
        label[noisy] = (label[noisy] + shift) % len(classes)
    color_list = list(COLORS)
    captions = [
        f"a photo of a {SIZES[size_idx[i]]} {color_list[color_idx[i]]} {classes[label[i]]}" for i in range(n)
    ]
    attrs = {
        "true_label": true_label,
        "color": color_idx,
        "size": size_idx,
        "cx": cx,
        "cy": cy,
        "radius": radius,
        "rotation": rotation,
        "noise_std": noise_std,
        "background": background,
        "duplicate_of": duplicate_of,
        "second_label": second,
    }
    return ShapesData(
        images=images,
        labels=label,
        captions=captions,
        classnames=classes,
        attrs=attrs,
        label_noisy=noisy,
        ambiguous=ambiguous,
        near_duplicate=near_dup,
        rare_mode=rare,
    )


def make_textures(
    n: int, *, seed: int, image_size: int = 32, kinds: Sequence[str] | None = None
) -> ShapesData:
    """``n`` far-OOD texture images (:data:`TEXTURES`: stripes, checkerboard, dots, smoothed noise, waves) with
    random colours, scale and phase; labels index ``kinds``; captions ``"a photo of a striped texture"``."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    _check_image_size(image_size)
    kinds = TEXTURES if kinds is None else tuple(kinds)
    bad = [k for k in kinds if k not in TEXTURES]
    if bad or not kinds:
        raise ValueError(f"kinds must be names from {list(TEXTURES)}, got {kinds!r}")
    rng = np.random.default_rng(seed)
    S = image_size
    ys, xs = np.meshgrid(np.arange(S, dtype=np.float32), np.arange(S, dtype=np.float32), indexing="ij")
    labels = rng.integers(0, len(kinds), size=n)
    images = np.empty((n, S, S, 3), dtype=np.uint8)
    for i in range(n):
        kind = kinds[labels[i]]
        c1, c2 = rng.uniform(0, 255, size=3), rng.uniform(0, 255, size=3)
        period = rng.uniform(3, 8) * S / 32
        ang = rng.uniform(0, math.pi)
        phase = rng.uniform(0, 2 * math.pi)
        proj = xs * math.cos(ang) + ys * math.sin(ang)
        if kind == "striped":
            t = (np.sin(2 * math.pi * proj / period + phase) > 0).astype(np.float32)
        elif kind == "checkered":
            t = ((np.floor(xs / period * 1.5) + np.floor(ys / period * 1.5)) % 2).astype(np.float32)
        elif kind == "dotted":
            g = period * 1.3
            dx = (xs + phase) % g - g / 2
            dy = (ys + phase) % g - g / 2
            t = (dx * dx + dy * dy <= (g * 0.3) ** 2).astype(np.float32)
        elif kind == "noisy":
            z = rng.normal(size=(S // 4 + 2, S // 4 + 2))
            t = np.kron(z, np.ones((4, 4)))[:S, :S]
            t = (t - t.min()) / (t.max() - t.min() + 1e-6)
        else:  # wavy
            t = (
                np.sin(2 * math.pi * (proj + 2 * np.sin(2 * math.pi * ys / (2 * period))) / period + phase)
                > 0
            )
            t = t.astype(np.float32)
        img = t[..., None] * c1 + (1 - t[..., None]) * c2 + rng.normal(0, 4, size=(S, S, 3))
        images[i] = np.clip(np.rint(img), 0, 255).astype(np.uint8)
    captions = [f"a photo of a {kinds[k]} texture" for k in labels]
    return ShapesData(
        images=images,
        labels=labels.astype(np.int64),
        captions=captions,
        classnames=tuple(kinds),
        attrs={},
        label_noisy=np.zeros(n, bool),
        ambiguous=np.zeros(n, bool),
        near_duplicate=np.zeros(n, bool),
        rare_mode=np.zeros(n, bool),
    )


CORRUPTIONS = ("brightness", "noise", "blur", "contrast")


def corrupt(images: np.ndarray, *, kind: str, severity: int, seed: int = 0) -> np.ndarray:
    """A covariate-shifted copy of uint8 ``images`` (n, H, W, 3); ``severity`` 1..5 (numpy only).

    brightness: add ``+25 * severity``; noise: Gaussian with std ``10 * severity``; blur: Gaussian blur with
    sigma ``0.4 * severity`` px; contrast: pull towards the per-image mean by factor ``1 - 0.17 * severity``.
    """
    if kind not in CORRUPTIONS:
        raise ValueError(f"kind must be one of {CORRUPTIONS}, got {kind!r}")
    if isinstance(severity, bool) or not isinstance(severity, int) or not 1 <= severity <= 5:
        raise ValueError(f"severity must be an int in 1..5, got {severity!r}")
    images = np.asarray(images)
    if images.dtype != np.uint8 or images.ndim != 4 or images.shape[-1] != 3:
        raise ValueError(f"images must be uint8 (n, H, W, 3), got {images.dtype} {images.shape}")
    x = images.astype(np.float32)
    if kind == "brightness":
        x = x + 25.0 * severity
    elif kind == "noise":
        x = x + np.random.default_rng(seed).normal(0, 10.0 * severity, size=x.shape)
    elif kind == "blur":
        sigma = 0.4 * severity
        r = max(1, int(math.ceil(3 * sigma)))
        k = np.exp(-0.5 * (np.arange(-r, r + 1) / sigma) ** 2)
        k /= k.sum()
        pad = np.pad(x, ((0, 0), (r, r), (r, r), (0, 0)), mode="edge")
        x = sum(k[j] * pad[:, j : j + x.shape[1], r : r + x.shape[2]] for j in range(2 * r + 1))  # along H
        pad = np.pad(x, ((0, 0), (0, 0), (r, r), (0, 0)), mode="edge")
        x = sum(k[j] * pad[:, :, j : j + x.shape[2]] for j in range(2 * r + 1))  # along W
    else:
        mean = x.mean(axis=(1, 2, 3), keepdims=True)
        x = mean + (x - mean) * (1 - 0.17 * severity)
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


