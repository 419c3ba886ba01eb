"""Data: generated point-set shape classification with known ground truth, sklearn's bundled digits, and a loader
for real image folders.

* :func:`make_shapes_2d` — 4 classes (ring, square outline, line segment, two blobs) of ``num_points`` points with
  continuous 2D coordinates in the unit box (random scale, orientation and placement) and per-point features that
  are pure noise, so the class is carried by the geometry only.
* :func:`make_shapes_3d` — 4 classes whose (x, y) footprints are identically distributed (uniform in a square) and
  which differ only in depth z: flat plane, tilted plane, two layers, dome. A model that sees only (x, y) is at
  chance (25%).
* :func:`translate` — add a global translation (a fixed offset or a random one per sample).
* :func:`load_digits_images` — sklearn's 8×8 digits (ships with scikit-learn, no download) as ``(n, 1, 8, 8)``;
  :func:`digits_splits` — the same with a validation split carved out of the training part (for tuning).
* :func:`depth_as_feature` — the fair 2D baseline of the depth task: (x, y) positions, z appended to the features.
* :func:`load_image_folder` — ``root/<class>/*.png|jpg`` images for real use (needs Pillow; raises a clear error
  if the folder does not exist).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from string_pe.errors import PositionEncodingError

SHAPES_2D = ("ring", "square", "line", "two-blobs")
SHAPES_3D = ("flat", "tilted", "two-layers", "dome")


@dataclass
class PointSets:
    """A point-set classification dataset: ``features (n, N, F)``, ``positions (n, N, d_c)``, ``labels (n,)``."""

    features: Tensor
    positions: Tensor
    labels: Tensor
    classes: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def _check_sizes(n: int, num_points: int, feature_dim: int, extent: float = 1.0) -> None:
    if not (isinstance(extent, (int, float)) and math.isfinite(extent) and extent > 0):
        raise PositionEncodingError(f"extent must be a finite number > 0, got {extent!r}")
    for name, v in (("n", n), ("num_points", num_points), ("feature_dim", feature_dim)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise PositionEncodingError(f"{name} must be an int >= 1, got {v!r}")


def _rot(a: np.ndarray) -> np.ndarray:
    return np.stack([np.stack([np.cos(a), -np.sin(a)], -1), np.stack([np.sin(a), np.cos(a)], -1)], -2)  # (n, 2, 2)


def make_shapes_2d(n: int, *, num_points: int = 32, feature_dim: int = 4, noise: float = 0.01, extent: float = 8.0,
                   seed: int = 0) -> PointSets:
    """``n`` point sets of 4 2D shapes inside the box ``[0, extent]²`` (labels balanced, shuffled).

    ``extent = 8`` puts the points on the scale of an 8×8 patch grid, the scale RoPE-Mixed's init is made for.
    """
    _check_sizes(n, num_points, feature_dim, extent)
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n) % 4)
    t = rng.uniform(0, 1, size=(n, num_points))
    pts = np.zeros((n, num_points, 2))
    for c in range(4):
        m = labels == c
        tc = t[m]
        if c == 0:  # ring of radius 0.5
            a = 2 * math.pi * tc
            p = 0.5 * np.stack([np.cos(a), np.sin(a)], -1)
        elif c == 1:  # square outline of side 0.8
            s = 4 * tc
            side = np.floor(s).astype(int)
            u = s - side
            corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]], float) * 0.4
            p = corners[side] + (corners[(side + 1) % 4] - corners[side]) * u[..., None]
        elif c == 2:  # line segment of length 1
            p = np.stack([tc - 0.5, np.zeros_like(tc)], -1)
        else:  # two Gaussian blobs 0.7 apart
            side = np.where(rng.uniform(size=tc.shape) < 0.5, -0.35, 0.35)
            p = np.stack([side, np.zeros_like(tc)], -1) + rng.normal(0, 0.06, size=tc.shape + (2,))
        pts[m] = p
    scale = rng.uniform(0.6, 0.9, size=(n, 1, 1))
    pts = np.einsum("nij,npj->npi", _rot(rng.uniform(0, 2 * math.pi, size=n)), pts) * scale
    lo, hi = pts.min(1, keepdims=True), pts.max(1, keepdims=True)
    shift = rng.uniform(0, 1, size=(n, 1, 2)) * np.clip(1 - (hi - lo), 0, None) - lo  # place inside [0, 1]^2
    pts = (pts + shift + rng.normal(0, noise, size=pts.shape)) * extent
    feats = rng.normal(size=(n, num_points, feature_dim))
    return PointSets(torch.tensor(feats, dtype=torch.float32), torch.tensor(pts, dtype=torch.float32),
                     torch.tensor(labels), SHAPES_2D)


def make_shapes_3d(n: int, *, num_points: int = 32, feature_dim: int = 4, noise: float = 0.01, extent: float = 8.0,
                   seed: int = 0) -> PointSets:
    """``n`` 3D point sets whose (x, y) are uniform in ``[0.1, 0.9]² · extent`` for every class; the class is in z
    only (all coordinates scaled by ``extent``)."""
    _check_sizes(n, num_points, feature_dim, extent)
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n) % 4)
    xy = rng.uniform(0.1, 0.9, size=(n, num_points, 2))
    z = np.zeros((n, num_points))
    for c in range(4):
        m = labels == c
        x = xy[m] - 0.5  # centred footprint
        if c == 0:  # flat plane
            zc = np.zeros(x.shape[:2])
        elif c == 1:  # plane tilted by 45 degrees in a random direction
            a = rng.uniform(0, 2 * math.pi, size=(x.shape[0], 1))
            zc = x[..., 0] * np.cos(a) + x[..., 1] * np.sin(a)
        elif c == 2:  # two parallel layers 0.4 apart
            zc = np.where(rng.uniform(size=x.shape[:2]) < 0.5, -0.2, 0.2)
        else:  # dome
            zc = 0.3 - 1.6 * (x**2).sum(-1)
        z[m] = zc
    z = z + rng.uniform(0.3, 0.7, size=(n, 1))  # random height of the whole set
    pts = (np.concatenate([xy, z[..., None]], -1) + rng.normal(0, noise, size=(n, num_points, 3))) * extent
    feats = rng.normal(size=(n, num_points, feature_dim))
    return PointSets(torch.tensor(feats, dtype=torch.float32), torch.tensor(pts, dtype=torch.float32),
                     torch.tensor(labels), SHAPES_3D)


def translate(data: PointSets, offset: float | Tensor | None = None, *, max_shift: float = 10.0,
              seed: int = 0) -> PointSets:
    """A copy of ``data`` translated by ``offset`` (scalar or ``(d_c,)``), or by a random offset per sample drawn
    uniformly from ``[−max_shift, max_shift]^{d_c}`` when ``offset`` is None."""
    pos = data.positions
    if offset is None:
        g = torch.Generator().manual_seed(seed)
        shift = (torch.rand(pos.shape[0], 1, pos.shape[2], generator=g) * 2 - 1) * max_shift  # (n, 1, d_c)
    else:
        shift = torch.as_tensor(offset, dtype=pos.dtype)
        if shift.dim() not in (0, 1) or (shift.dim() == 1 and shift.shape[0] != pos.shape[2]):
            raise PositionEncodingError(f"offset must be a scalar or have shape ({pos.shape[2]},), got {tuple(shift.shape)}")
    return PointSets(data.features, pos + shift, data.labels, data.classes)


def drop_axes(data: PointSets, keep: int) -> PointSets:
    """Keep the first ``keep`` coordinate axes (e.g. the 2D ablation of the 3D task)."""
    return PointSets(data.features, data.positions[..., :keep].contiguous(), data.labels, data.classes)


def load_digits_images(*, test_fraction: float = 0.2, split_seed: int = 0) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """sklearn's bundled 8×8 digits as ``(x_train (n, 1, 8, 8), y_train, x_test, y_test)`` scaled to [0, 1]."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if not 0 < test_fraction < 1:
        raise PositionEncodingError(f"test_fraction must be in (0, 1), got {test_fraction}")
    d = load_digits()
    x = (d.data / 16.0).reshape(-1, 1, 8, 8).astype(np.float32)  # (n, 64) -> (n, 1, 8, 8)
    xtr, xte, ytr, yte = train_test_split(x, d.target, test_size=test_fraction, random_state=split_seed,
                                          stratify=d.target)
    return torch.tensor(xtr), torch.tensor(ytr), torch.tensor(xte), torch.tensor(yte)


@dataclass
class ImageSplits:
    """Train / validation / test images ``(n, 1, 8, 8)`` and labels, with the row indices into sklearn's digits."""

    x_train: Tensor
    y_train: Tensor
    x_val: Tensor
    y_val: Tensor
    x_test: Tensor
    y_test: Tensor
    idx_train: np.ndarray
    idx_val: np.ndarray
    idx_test: np.ndarray


def digits_splits(*, test_fraction: float = 0.2, val_fraction: float = 0.2, split_seed: int = 0) -> ImageSplits:
    """sklearn's digits split three ways (stratified): the test split is exactly :func:`load_digits_images`'s, and
    the validation split is ``val_fraction`` of its training part, so validation and test never share an image row.
    Hyper-parameters are chosen on validation; test numbers come from models trained on the rest of the training
    part."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    for name, f in (("test_fraction", test_fraction), ("val_fraction", val_fraction)):
        if not 0 < f < 1:
            raise PositionEncodingError(f"{name} must be in (0, 1), got {f}")
    d = load_digits()
    x = (d.data / 16.0).reshape(-1, 1, 8, 8).astype(np.float32)  # (n, 64) -> (n, 1, 8, 8)
    idx = np.arange(len(d.target))
    i_trval, i_te = train_test_split(idx, test_size=test_fraction, random_state=split_seed, stratify=d.target)
    i_tr, i_va = train_test_split(i_trval, test_size=val_fraction, random_state=split_seed,
                                  stratify=d.target[i_trval])

    def t(i: np.ndarray) -> tuple[Tensor, Tensor]:
        return torch.tensor(x[i]), torch.tensor(d.target[i])

    (xtr, ytr), (xva, yva), (xte, yte) = t(i_tr), t(i_va), t(i_te)
    return ImageSplits(xtr, ytr, xva, yva, xte, yte, i_tr, i_va, i_te)


def depth_as_feature(data: PointSets) -> PointSets:
    """2D positions ``(x, y)`` and the depth ``z`` appended to every point's features: ``(n, N, F) → (n, N, F + 1)``.

    The fair 2D baseline of the depth task: the model sees depth, but as an input feature, not as a coordinate.
    """
    if data.positions.shape[-1] < 3:
        raise PositionEncodingError(f"depth_as_feature needs 3D positions, got coord_dim={data.positions.shape[-1]}")
    z = data.positions[..., 2:3]  # (n, N, 1)
    return PointSets(torch.cat([data.features, z], dim=-1), data.positions[..., :2].contiguous(), data.labels,
                     data.classes)


def load_image_folder(root: str | Path, *, image_size: tuple[int, int] = (32, 32),
                      grayscale: bool = False) -> tuple[Tensor, Tensor, list[str]]:
    """Load ``root/<class>/<image>`` into ``(images (n, C, H, W) in [0, 1], labels (n,), class names)``.

    For real datasets (e.g. an ImageNet subset prepared by the user). Raises :class:`FileNotFoundError` if
    ``root`` does not exist or holds no images; nothing is downloaded.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"image folder {root} does not exist (expected root/<class>/<image files>); "
                                "this package never downloads data — prepare the folder first")
    try:
        from PIL import Image
    except ImportError as exc:  # pragma: no cover
        raise ImportError("load_image_folder needs Pillow: pip install pillow") from exc
    classes = sorted(p.name for p in root.iterdir() if p.is_dir())
    images, labels = [], []
    for ci, cname in enumerate(classes):
        for f in sorted((root / cname).iterdir()):
            if f.suffix.lower() not in (".png", ".jpg", ".jpeg", ".bmp", ".webp"):
                continue
            with Image.open(f) as im:
                im = im.convert("L" if grayscale else "RGB").resize((image_size[1], image_size[0]))
                arr = np.asarray(im, dtype=np.float32) / 255.0
            images.append(arr[None] if grayscale else arr.transpose(2, 0, 1))  # (H, W, C) -> (C, H, W)
            labels.append(ci)
    if not images:
        raise FileNotFoundError(f"no images found under {root}/<class>/")
    return torch.tensor(np.stack(images)), torch.tensor(labels), classes
