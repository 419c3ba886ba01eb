"""The observation window ``T``: a union of disjoint axis-aligned boxes in ``R^d``.

Boxes are an array ``(n_box, d, 2)``: ``boxes[j, i] = (lo, hi)`` of box ``j`` along dimension ``i``. The K²IE
integrals (``Φ_T = ∫_T φφᵀ``, ``∫_T k(x, t) dt``) are sums over boxes, so overlapping boxes would be counted twice;
they are refused unless ``allow_overlap=True`` (then the overlap really is counted twice, as in the released code).
Boxes that only touch (share a face) are not overlapping.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from k2ie.errors import K2ieError


class Window:
    """A union of disjoint boxes ``T = ∪_j Π_i [lo_ji, hi_ji]``.

    Args:
        boxes: ``(n_box, d, 2)`` (a single box may be given as ``(d, 2)``; a 1-D interval as ``(lo, hi)``).
        allow_overlap: accept boxes whose interiors intersect (their overlap is then counted twice).
    """

    def __init__(self, boxes: np.ndarray | Sequence, *, allow_overlap: bool = False) -> None:
        try:
            arr = np.asarray(boxes, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise K2ieError(f"window boxes must be numbers shaped (n_box, d, 2), got {boxes!r}") from exc
        if arr.ndim == 1 and arr.shape == (2,):
            arr = arr[None, None, :]  # (lo, hi) -> one 1-D box
        elif arr.ndim == 2 and arr.shape[-1] == 2:
            arr = arr[None]  # (d, 2) -> one box
        if arr.ndim != 3 or arr.shape[-1] != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
            raise K2ieError(f"window boxes must be shaped (n_box, d, 2) with n_box >= 1, d >= 1; got {arr.shape}")
        if not np.isfinite(arr).all():
            raise K2ieError("window boxes must be finite (found NaN or inf)")
        bad = np.argwhere(arr[..., 0] >= arr[..., 1])
        if len(bad):
            j, i = bad[0]
            raise K2ieError(f"window box {j} has lo >= hi along dimension {i}: "
                            f"({arr[j, i, 0]:g}, {arr[j, i, 1]:g}); every box needs lo < hi")
        self.allow_overlap = bool(allow_overlap)
        if not allow_overlap and arr.shape[0] > 1:
            lo = np.maximum(arr[:, None, :, 0], arr[None, :, :, 0])  # (n_box, n_box, d)
            hi = np.minimum(arr[:, None, :, 1], arr[None, :, :, 1])
            inter = np.all(hi > lo, axis=-1)
            np.fill_diagonal(inter, False)
            if inter.any():
                j, k = np.argwhere(inter)[0]
                raise K2ieError(f"window boxes {j} and {k} overlap; boxes must be disjoint "
                                "(pass allow_overlap=True to count the overlap twice)")
        self.boxes = arr
        self.boxes.setflags(write=False)

    @property
    def d(self) -> int:
        """Dimension of the space."""
        return int(self.boxes.shape[1])

    @property
    def n_boxes(self) -> int:
        return int(self.boxes.shape[0])

    @property
    def volumes(self) -> np.ndarray:
        """``(n_box,)`` volume of each box."""
        return np.prod(self.boxes[..., 1] - self.boxes[..., 0], axis=-1)

    @property
    def volume(self) -> float:
        """``|T|`` (sum of the box volumes)."""
        return float(self.volumes.sum())

    @property
    def bounds(self) -> np.ndarray:
        """``(d, 2)`` bounding box of the window."""
        return np.stack([self.boxes[..., 0].min(0), self.boxes[..., 1].max(0)], axis=-1)

    def contains(self, x: np.ndarray) -> np.ndarray:
        """``(n,)`` bool: whether each point of ``x (n, d)`` lies in some (closed) box."""
        x = np.asarray(x, dtype=np.float64)
        lo, hi = self.boxes[None, :, :, 0], self.boxes[None, :, :, 1]  # (1, n_box, d)
        return np.any(np.all((x[:, None, :] >= lo) & (x[:, None, :] <= hi), axis=-1), axis=-1)

    def check_points(self, points: np.ndarray | Sequence, *, name: str = "points") -> np.ndarray:
        """Validate points against the window: returns ``(n, d)`` float64; raises on shape, NaN or outside."""
        return as_points(points, self.d, name=name, window=self)

    def to_list(self) -> list:
        return self.boxes.tolist()

    def __repr__(self) -> str:
        return f"Window(n_boxes={self.n_boxes}, d={self.d}, volume={self.volume:.4g})"


def as_window(window: Window | np.ndarray | Sequence) -> Window:
    """A :class:`Window` from a Window or a box array."""
    return window if isinstance(window, Window) else Window(window)


def as_points(points: np.ndarray | Sequence, d: int, *, name: str = "points", window: Window | None = None
              ) -> np.ndarray:
    """``(n, d)`` float64 points: a 1-D array is read as ``n`` points in 1-D when ``d == 1``."""
    try:
        x = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise K2ieError(f"{name} must be numbers shaped (n, d)") from exc
    if x.ndim == 1 and d == 1:
        x = x[:, None]
    if x.ndim == 1 and x.size == 0:
        x = x.reshape(0, d)
    if x.ndim != 2 or x.shape[1] != d:
        raise K2ieError(f"{name} must be shaped (n, {d}) to match the window's dimension d={d}; got {x.shape}")
    if not np.isfinite(x).all():
        raise K2ieError(f"{name} must be finite (found NaN or inf)")
    if window is not None and len(x):
        inside = window.contains(x)
        if not inside.all():
            k = int(np.argmin(inside))
            raise K2ieError(f"{name}[{k}] = {x[k].tolist()} lies outside the window (in no box); "
                            "every point must lie in the window")
    return x
