"""Procedurally generated natural-ish RGB-D images with a known label, written as an ImageFolder.

:func:`render_scenes` draws ``n`` scenes of ``size × size`` pixels: a smooth coloured texture background on a tilted
far plane, two textured objects of *different* shapes (disk, square, triangle, cross) at two depths, and a few small
distractor blobs. The label is the shape of the **nearer** object. The nearer object is drawn last (it occludes the
other) and is larger on average (perspective), but object sizes are jittered, so colour alone tells which object is in
front only partly (occlusion, size); the depth map tells it exactly. This is the task the RGB-D experiment needs:
depth matters but is not the only signal.

Returns ``images (n, 3, H, W)`` in ``[0, 1]``, ``depth (n, 1, H, W)`` in ``[0, 1]`` (0 = near, 1 = far) and
``labels (n,)``.

:func:`write_image_folder` stores scenes as ``root/<class>/<index>.png`` (RGBA: the alpha channel holds the depth
map quantised to 8 bits), readable by :class:`torchvision.datasets.ImageFolder`; :func:`load_image_folder_rgbd`
reads such a folder back (or any ImageFolder of RGB images, whose depth is then absent). Pillow and torchvision
are imported lazily, inside these functions only.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from string_pe.errors import PositionEncodingError

SHAPES = ("disk", "square", "triangle", "cross")
RELATIONS = ("right", "below", "left", "above")
"""Classes of ``task="relation"``: where the nearer object lies seen from the farther one (image y points down)."""
RELATION_GAP = 0.9
"""task="relation": centre distance / (sum of the two radii), times a U(0.8, 1.2) jitter."""
TASKS = {"shape": SHAPES, "relation": RELATIONS}
"""Class names of each generated task."""
EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".webp")


def _shape_mask(kind: int, xx: np.ndarray, yy: np.ndarray, cx: float, cy: float, r: float, ang: float) -> np.ndarray:
    """Boolean mask of shape ``kind`` centred at ``(cx, cy)`` with radius ``r`` rotated by ``ang``."""
    c, s = math.cos(ang), math.sin(ang)
    u = (c * (xx - cx) + s * (yy - cy)) / r  # rotated, normalised coordinates
    v = (-s * (xx - cx) + c * (yy - cy)) / r
    if kind == 0:  # disk
        return u**2 + v**2 <= 1.0
    if kind == 1:  # square
        return (np.abs(u) <= 0.8) & (np.abs(v) <= 0.8)
    if kind == 2:  # equilateral triangle (apex up in its own frame)
        return (v >= -0.5) & (v <= 1.0 - math.sqrt(3) * np.abs(u))
    # cross: two bars
    return ((np.abs(u) <= 0.3) & (np.abs(v) <= 1.0)) | ((np.abs(v) <= 0.3) & (np.abs(u) <= 1.0))


def _texture(rng: np.random.Generator, xx: np.ndarray, yy: np.ndarray, size: int) -> np.ndarray:
    """A random smooth colour texture ``(H, W, 3)`` in [0, 1]: a base colour plus two oriented sinusoids."""
    base = rng.uniform(0.15, 0.85, size=3)
    out = np.broadcast_to(base, xx.shape + (3,)).copy()
    for _ in range(2):
        a = rng.uniform(0, 2 * math.pi)
        f = rng.uniform(0.3, 1.2) * 2 * math.pi / size * 4
        phase = rng.uniform(0, 2 * math.pi)
        wave = np.sin(f * (math.cos(a) * xx + math.sin(a) * yy) + phase)
        out += 0.15 * wave[..., None] * rng.uniform(-1, 1, size=3)
    return np.clip(out, 0, 1)


def _place_relation(rng: np.random.Generator, label: int, r_far: float, r_near: float,
                    size: int) -> tuple[np.ndarray, np.ndarray]:
    """Centres ``(far, near)`` with ``near − far`` pointing within ±30° of direction ``label`` (0 = +x, 1 = +y, ...)."""
    for _ in range(200):
        ang = label * math.pi / 2 + rng.uniform(-math.pi / 6, math.pi / 6)
        dist = rng.uniform(0.8, 1.2) * (r_far + r_near) * RELATION_GAP
        disp = dist * np.array([math.cos(ang), math.sin(ang)])
        lo = np.maximum(r_far, r_near - disp)  # both objects inside the image
        hi = np.minimum(size - r_far, size - r_near - disp)
        if (lo < hi).all():
            far = rng.uniform(lo, hi)
            return far, far + disp
    raise RuntimeError("could not place the two objects; use a larger image size")  # pragma: no cover


def render_scenes(n: int, *, size: int = 32, distractors: int = 3, occluders: bool = True, task: str = "shape",
                  rotate: bool = True, object_scale: float = 1.0, seed: int = 0) -> tuple[Tensor, Tensor, Tensor]:
    """``n`` RGB-D scenes with balanced labels; see the module docstring.

    ``task="shape"``: label = shape of the nearer object (:data:`SHAPES`). ``task="relation"``: label = direction of
    the nearer object seen from the farther one (:data:`RELATIONS`; both shapes random, objects smaller so that
    both fit), a task about the *relative* position of two objects, where depth (or occlusion and size) tells
    which one is nearer. ``rotate=False`` draws every shape upright (an easier shape task). ``object_scale``
    multiplies both objects' radii (and their cap); larger objects are easier to recognise at a coarse patch grid.
    """
    if task not in TASKS:
        raise PositionEncodingError(f"task must be one of {list(TASKS)}, got {task!r}")
    if task == "relation" and not occluders:
        raise PositionEncodingError("task='relation' needs two objects (occluders=True)")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise PositionEncodingError(f"n must be an int >= 1, got {n!r}")
    if isinstance(size, bool) or not isinstance(size, int) or not 16 <= size <= 128:
        raise PositionEncodingError(f"size must be an int in [16, 128], got {size!r}")
    if isinstance(object_scale, bool) or not isinstance(object_scale, (int, float)) or not 0.25 <= object_scale <= 1.5:
        raise PositionEncodingError(f"object_scale must be a number in [0.25, 1.5], got {object_scale!r}")
    if isinstance(distractors, bool) or not isinstance(distractors, int) or distractors < 0:
        raise PositionEncodingError(f"distractors must be an int >= 0, got {distractors!r}")
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n) % len(TASKS[task]))
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64) + 0.5
    images = np.zeros((n, size, size, 3), np.float32)
    depths = np.zeros((n, size, size), np.float32)
    for i in range(n):
        img = 0.35 + 0.3 * _texture(rng, xx, yy, size)  # background, lower contrast than the objects
        img += rng.normal(0, 0.03, size=img.shape)
        g = rng.uniform(-0.1, 0.1, size=2)  # far plane, slightly tilted
        dep = 0.9 + g[0] * (xx / size - 0.5) + g[1] * (yy / size - 0.5)
        d_near = rng.uniform(0.15, 0.4)
        d_far = d_near + rng.uniform(0.15, 0.35)
        if task == "shape":
            near_kind = int(labels[i])
            far_kind = int(rng.choice([k for k in range(len(SHAPES)) if k != near_kind]))
            scale, cap = (0.1, 0.045), 0.3
        else:
            near_kind, far_kind = (int(k) for k in rng.integers(len(SHAPES), size=2))
            scale, cap = (0.06, 0.025), 0.2
        objs = ((far_kind, d_far), (near_kind, d_near)) if occluders else ((near_kind, d_near),)
        radii = [object_scale * min(size * (scale[0] + scale[1] / d) * rng.uniform(0.8, 1.2), size * cap)
                 for _, d in objs]  # nearer = larger
        if task == "relation":
            centres = _place_relation(rng, int(labels[i]), radii[0], radii[1], size)
        else:
            centres = [rng.uniform(r, size - r, size=2) for r in radii]
        for (kind, d), r, (cx, cy) in zip(objs, radii, centres, strict=True):  # far first: the near one occludes
            ang = rng.uniform(0, 2 * math.pi)  # drawn either way: the rest of the scene does not depend on rotate
            m = _shape_mask(kind, xx, yy, cx, cy, r, ang if rotate else 0.0)
            colour = rng.uniform(0, 1, size=3)
            colour[rng.integers(3)] = rng.choice([0.0, 1.0])  # saturated: stands out from the background
            stripes = np.sin(rng.uniform(0.5, 1.5) * (xx * math.cos(cx) + yy * math.sin(cx)))[..., None]
            img[m] = np.clip(colour + 0.06 * stripes, 0, 1)[m]
            dep[m] = d + 0.02 * rng.normal()
        for _ in range(distractors):  # small blobs at random depths
            cx, cy = rng.uniform(0, size, size=2)
            rb = rng.uniform(1.0, 2.2) * size / 32
            m = (xx - cx) ** 2 + (yy - cy) ** 2 <= rb**2
            img[m] = rng.uniform(0, 1, size=3)
            dep[m] = rng.uniform(0.1, 0.9)
        images[i] = np.clip(img, 0, 1)
        depths[i] = np.clip(dep, 0, 1)
    x = torch.from_numpy(images).permute(0, 3, 1, 2).contiguous()  # (n, H, W, 3) -> (n, 3, H, W)
    return x, torch.from_numpy(depths)[:, None], torch.from_numpy(labels)


def write_image_folder(root: str | Path, images: Tensor, depth: Tensor | None, labels: Tensor,
                       classes: tuple[str, ...] = SHAPES) -> Path:
    """Write ``root/<class>/<i>.png`` (RGB, or RGBA with the depth in alpha when ``depth`` is given)."""
    from PIL import Image

    root = Path(root)
    for c in classes:
        (root / c).mkdir(parents=True, exist_ok=True)
    rgb = (images.clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()  # (n, H, W, 3)
    if depth is not None:
        a = (depth.clamp(0, 1) * 255).round().to(torch.uint8)[:, 0].numpy()  # (n, H, W)
        rgb = np.concatenate([rgb, a[..., None]], axis=-1)  # (n, H, W, 4)
    for i, (arr, y) in enumerate(zip(rgb, labels.tolist(), strict=True)):
        Image.fromarray(arr).save(root / classes[y] / f"{i:05d}.png")  # (H, W, 4) -> RGBA, (H, W, 3) -> RGB
    return root


def image_folder_dataset(root: str | Path, *, image_size: int | None = None, depth: bool = False):
    """A streaming ImageFolder ``root/<class>/<image>`` (torchvision ``DatasetFolder``): item ``i`` is read from
    disk when it is asked for, as ``(x (C, H, W) in [0, 1], label)`` with ``C = 4`` (RGB + the depth in alpha) when
    ``depth`` else 3. ``image_size`` resizes (square). Nothing is held in memory but the file list."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"image folder {root} does not exist (expected root/<class>/<image files>); "
                                "this package never downloads data; `string-pe make-images` writes a generated one")
    from PIL import Image
    from torchvision.datasets import DatasetFolder

    def loader(path: str) -> Tensor:
        with Image.open(path) as im:
            if depth and im.mode not in ("RGBA", "LA"):
                raise PositionEncodingError(f"depth=True needs an alpha channel holding depth, {path} has mode "
                                            f"{im.mode}")
            im = im.convert("RGBA" if depth else "RGB")
            if image_size is not None:
                im = im.resize((image_size, image_size))
            arr = np.asarray(im, dtype=np.float32) / 255.0  # (H, W, C)
        return torch.from_numpy(arr).permute(2, 0, 1).contiguous()  # (H, W, C) -> (C, H, W)

    try:
        return DatasetFolder(str(root), loader=loader, extensions=EXTENSIONS)  # ImageFolder with our loader
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"no images found under {root}/<class>/ ({exc})") from None


def load_image_folder_rgbd(root: str | Path, *, image_size: int | None = None,
                           depth: bool = False) -> tuple[Tensor, Tensor | None, Tensor, list[str]]:
    """Read a whole ImageFolder ``root/<class>/<image>`` into memory (:func:`image_folder_dataset`, every item).

    Returns ``(images (n, 3, H, W) in [0, 1], depth (n, 1, H, W) | None, labels (n,), classes)``. With
    ``depth=True`` every image must carry an alpha channel holding the depth (as :func:`write_image_folder` writes
    it). ``image_size`` resizes (square) when given; otherwise all images must have the same size.
    """
    ds = image_folder_dataset(root, image_size=image_size, depth=depth)
    arrs, labels = [], []
    for path, y in ds.samples:
        arrs.append(ds.loader(path))
        labels.append(y)
    shapes = {tuple(a.shape) for a in arrs}
    if len(shapes) != 1:
        raise PositionEncodingError(f"images under {root} have different sizes {sorted(shapes)[:3]}; pass an "
                                    "image size to resize them")
    x = torch.stack(arrs)  # (n, C, H, W)
    d = x[:, 3:4].contiguous() if depth else None
    return x[:, :3].contiguous(), d, torch.tensor(labels), list(ds.classes)
