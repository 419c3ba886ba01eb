"""Poisson data with a known truth: Lewis–Shedler thinning on unions of boxes, the 1-D benchmark intensities and
a smooth 2-D truth seen through fragmented windows (generated, never downloaded).

1-D truths (Adams, Murray & MacKay 2009's SGCP benchmark, which the official K²IE data files decode to):

* ``λ¹(x) = 2 e^{−x/15} + e^{−((x − 25)/10)²}`` on ``[0, 50]``;
* ``λ²(x) = 5 sin(x²) + 6`` on ``[0, 5]``;
* ``λ³`` piecewise linear through ``(0, 2), (25, 3), (50, 1), (75, 2.5), (100, 3)`` on ``[0, 100]``;

each also ×10 (``scale=10``). 2-D: a sum of Gaussian bumps on a floor on ``[0, 5]²`` observed through a random
union of unit grid cells, each kept with probability ``p_cell`` (at least one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from k2ie.errors import K2ieError
from k2ie.window import Window, as_window


@dataclass(frozen=True)
class Intensity:
    """A known intensity ``λ: (n, d) -> (n,)`` with an upper bound (for thinning) and its study window."""

    name: str
    fn: Callable[[np.ndarray], np.ndarray]
    upper: float
    window: Window

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.fn(np.asarray(x, dtype=np.float64))


def _l1(x):
    t = x[:, 0]
    return 2.0 * np.exp(-t / 15.0) + np.exp(-(((t - 25.0) / 10.0) ** 2))


def _l2(x):
    return 5.0 * np.sin(x[:, 0] ** 2) + 6.0


_L3_X = np.array([0.0, 25.0, 50.0, 75.0, 100.0])
_L3_Y = np.array([2.0, 3.0, 1.0, 2.5, 3.0])


def _l3(x):
    return np.interp(x[:, 0], _L3_X, _L3_Y)


_BUMPS = np.array([  # (x, y, height, width²)
    [1.2, 3.6, 45.0, 0.5],
    [3.7, 1.3, 35.0, 0.8],
    [3.3, 3.8, 20.0, 0.3],
])


def _smooth2d(x):
    out = np.full(len(x), 6.0)
    for cx, cy, h, w2 in _BUMPS:
        out += h * np.exp(-((x[:, 0] - cx) ** 2 + (x[:, 1] - cy) ** 2) / w2)
    return out


def intensity_1d(kind: int, *, scale: float = 1.0) -> Intensity:
    """The 1-D truths ``λ¹, λ², λ³`` (``kind`` 1, 2, 3) times ``scale``."""
    if kind not in (1, 2, 3):
        raise K2ieError(f"kind must be 1, 2 or 3, got {kind!r}")
    if not (np.isfinite(scale) and scale > 0):
        raise K2ieError(f"scale must be positive, got {scale!r}")
    fn, upper, hi = {1: (_l1, 2.2, 50.0), 2: (_l2, 11.0, 5.0), 3: (_l3, 3.0, 100.0)}[kind]
    name = f"λ{'¹²³'[kind - 1]}" if scale == 1 else f"{scale:g}λ{'¹²³'[kind - 1]}"
    return Intensity(name, lambda x: scale * fn(x), scale * upper, Window([[[0.0, hi]]]))


def intensity_2d() -> Intensity:
    """Smooth 2-D truth on ``[0, 5]²`` (floor 6 plus three Gaussian bumps; ``∫ ≈ 290``, max ≈ 52)."""
    return Intensity("2-D bumps", _smooth2d, 52.0, Window([[[0.0, 5.0], [0.0, 5.0]]]))


def fragmented_window(p_cell: float, *, seed: int, side: int = 5, cell: float = 1.0) -> Window:
    """A random union of the ``side × side`` grid cells of ``[0, side·cell]²``, each kept with probability
    ``p_cell`` (at least one cell is kept); runs of adjacent kept cells along axis 1 are merged into one box."""
    if not (0 < p_cell <= 1):
        raise K2ieError(f"p_cell must be in (0, 1], got {p_cell!r}")
    rng = np.random.default_rng(seed)
    keep = rng.random((side, side)) < p_cell
    if not keep.any():
        keep[rng.integers(side), rng.integers(side)] = True
    boxes = []  # merge each run of kept cells along axis 1 into one box (fewer boxes, the same union)
    for i in range(side):
        j = 0
        while j < side:
            if keep[i, j]:
                k = j
                while k + 1 < side and keep[i, k + 1]:
                    k += 1
                boxes.append([[i * cell, (i + 1) * cell], [j * cell, (k + 1) * cell]])
                j = k + 1
            else:
                j += 1
    return Window(boxes)


def simulate(intensity: Callable[[np.ndarray], np.ndarray], window: Window | np.ndarray, *, seed: int,
             upper: float | None = None) -> np.ndarray:
    """Points ``(N, d)`` of a Poisson process with ``intensity`` on ``window`` by Lewis–Shedler thinning.

    Per box: ``N_B ~ Poisson(λ_max |B|)`` uniform candidates, each kept with probability ``λ(x)/λ_max``. ``upper``
    (``λ_max``) defaults to ``intensity.upper``; a candidate with ``λ(x) > λ_max`` or ``λ(x) < 0`` raises.
    """
    win = as_window(window)
    lam_max = upper if upper is not None else getattr(intensity, "upper", None)
    if lam_max is None or not np.isfinite(lam_max) or lam_max <= 0:
        raise K2ieError("simulate needs a positive upper bound: pass upper= or an Intensity with .upper")
    rng = np.random.default_rng(seed)
    out = []
    for box in win.boxes:
        vol = float(np.prod(box[:, 1] - box[:, 0]))
        n = rng.poisson(lam_max * vol)
        cand = box[:, 0] + (box[:, 1] - box[:, 0]) * rng.random((n, win.d))
        lam = np.asarray(intensity(cand), dtype=np.float64)
        if lam.shape != (n,):
            raise K2ieError(f"intensity must map (n, d) to (n,), got {lam.shape} for n={n}")
        if (lam > lam_max * (1 + 1e-12)).any() or (lam < 0).any():
            raise K2ieError(f"intensity left [0, upper={lam_max:g}] (max {lam.max():g}, min {lam.min():g})")
        out.append(cand[rng.random(n) * lam_max < lam])
    pts = np.concatenate(out) if out else np.zeros((0, win.d))
    return pts[np.argsort(pts[:, 0], kind="stable")] if win.d == 1 else pts
