"""Coordinate normalisation of SUICA (the ``keep_ratio`` frame of the official code, made explicit).

The INR ``f: R^d -> R^D`` is fitted on normalised coordinates. With training coordinates ``x`` of shape
``(n_spots, d)``, ``d in {2, 3}``:

    c_a = (max_a + min_a) / 2,   r_a = (max_a - min_a) / 2          (per axis a)
    keep_ratio=True :  u = (x - c) / max_a r_a     (aspect ratio kept; the longest axis spans exactly [-1, 1])
    keep_ratio=False:  u = (x - c) / r             (every axis spans [-1, 1]; anisotropic)

Both maps are invariant to translating the raw coordinates and to scaling them uniformly by ``s > 0``.
A query is *inside the frame* when its normalised coordinates lie in the normalised bounding box of the training
spots (``|u_a| <= r_a / max r``); outside it the INR extrapolates, which SUICA refuses unless asked to.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from suica.errors import ExtrapolationError, SUICAInputError


def check_coords(coords: np.ndarray, *, name: str = "coords") -> np.ndarray:
    """Validate a coordinate array: shape ``(n, 2)`` or ``(n, 3)``, finite. Returns float64."""
    arr = np.asarray(coords)
    if arr.ndim != 2 or arr.shape[1] not in (2, 3):
        raise SUICAInputError(f"{name} must have shape (n_spots, 2) or (n_spots, 3) (2D or 3D coordinates), got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.number):
        raise SUICAInputError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        raise SUICAInputError(f"{name} contains NaN or inf values ({int((~np.isfinite(arr)).sum())} entries)")
    return arr


@dataclass(frozen=True)
class CoordFrame:
    """The affine normalisation frame ``u = (x - center) / scale`` fitted on training coordinates.

    ``center``: ``(d,)``; ``scale``: ``(d,)`` (all equal to ``max r`` when ``keep_ratio``); ``half_extent``: the
    normalised half-widths of the training bounding box, ``(d,)``.
    """

    center: tuple[float, ...]
    scale: tuple[float, ...]
    half_extent: tuple[float, ...]
    keep_ratio: bool = True

    @classmethod
    def fit(cls, coords: np.ndarray, *, keep_ratio: bool = True) -> CoordFrame:
        x = check_coords(coords)
        lo, hi = x.min(axis=0), x.max(axis=0)
        center = (hi + lo) / 2.0
        r = (hi - lo) / 2.0
        if r.max() <= 0:
            raise SUICAInputError("coords: all spots share one position; cannot build a normalisation frame")
        if keep_ratio:
            scale = np.full_like(r, r.max())
        else:
            if (r <= 0).any():
                raise SUICAInputError("coords: an axis has zero extent; use keep_ratio=True for flat layouts")
            scale = r
        half = r / scale
        return cls(tuple(map(float, center)), tuple(map(float, scale)), tuple(map(float, half)), keep_ratio)

    @property
    def dim(self) -> int:
        return len(self.center)

    def transform(self, coords: np.ndarray, *, allow_extrapolation: bool = True, tol: float = 1e-6) -> np.ndarray:
        """Raw ``(n, d)`` -> normalised ``(n, d)``; raises :class:`ExtrapolationError` outside the frame if asked."""
        x = check_coords(coords)
        if x.shape[1] != self.dim:
            raise SUICAInputError(f"coords have {x.shape[1]} dimensions but the model was fitted on {self.dim}")
        u = (x - np.asarray(self.center)) / np.asarray(self.scale)
        if not allow_extrapolation:
            out = self.outside(u, tol=tol, normalised=True)
            if out.any():
                raise ExtrapolationError(
                    f"{int(out.sum())} of {len(u)} query coordinates lie outside the training frame "
                    f"(normalised half-extent {tuple(round(h, 4) for h in self.half_extent)}); "
                    "pass allow_extrapolation=True (CLI: --allow-extrapolation) to predict there anyway"
                )
        return u

    def inverse(self, u: np.ndarray) -> np.ndarray:
        """Normalised ``(n, d)`` -> raw ``(n, d)``."""
        return np.asarray(u, dtype=np.float64) * np.asarray(self.scale) + np.asarray(self.center)

    def outside(self, coords: np.ndarray, *, tol: float = 1e-6, normalised: bool = False) -> np.ndarray:
        """Boolean ``(n,)``: which points lie outside the training bounding box (in the normalised frame)."""
        u = np.asarray(coords, dtype=np.float64) if normalised else self.transform(coords)
        return (np.abs(u) > np.asarray(self.half_extent) + tol).any(axis=1)

    def grid(self, resolution: int | tuple[int, ...] = 200, *, full_square: bool = False) -> np.ndarray:
        """A dense regular grid in RAW coordinates, ``(prod(resolution), d)``.

        Default: spans the training bounding box (no extrapolation). ``full_square=True`` spans ``[-1, 1]^d`` in the
        normalised frame, as the official ``Full2D`` dataset does (extrapolates along the short axes).
        """
        res = (resolution,) * self.dim if isinstance(resolution, int) else tuple(resolution)
        if len(res) != self.dim or min(res) < 1:
            raise SUICAInputError(f"resolution must be a positive int or a {self.dim}-tuple of them, got {resolution!r}")
        axes = [np.linspace(-1.0 if full_square else -h, 1.0 if full_square else h, n) for h, n in zip(self.half_extent, res)]
        mesh = np.meshgrid(*axes, indexing="ij")
        u = np.stack([m.reshape(-1) for m in mesh], axis=1)  # (prod(res), d)
        return self.inverse(u)

    def to_dict(self) -> dict:
        return {"center": list(self.center), "scale": list(self.scale), "half_extent": list(self.half_extent),
                "keep_ratio": self.keep_ratio}

    @classmethod
    def from_dict(cls, d: dict) -> CoordFrame:
        return cls(tuple(d["center"]), tuple(d["scale"]), tuple(d["half_extent"]), bool(d["keep_ratio"]))


def normalize_coords(coords: np.ndarray, *, keep_ratio: bool = True) -> np.ndarray:
    """Normalise ``(n, d)`` coordinates into their own frame (see module docstring)."""
    return CoordFrame.fit(coords, keep_ratio=keep_ratio).transform(coords)
