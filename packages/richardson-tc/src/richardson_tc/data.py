"""Tensors with a known ground truth, observed sets Ω, and loaders for users' files (never downloaded here).

* :func:`make_tensor`: tensorly ``random_cp`` / ``random_tucker`` (exactly low rank), a Gaussian tensor (no
  structure), sklearn's digits stacked 8 × 8 × 1797, and a synthetic video of moving Gaussian blobs (64 × 64 × 30).
* :func:`sample_mask`: Ω = the first ⌊p·|𝒳|⌋ entries of a seeded permutation (exact size, as the official code).
* :class:`ObservedEntries`: Ω in coordinate (COO) form, grouped by each mode's index for the direct solver.
* :func:`load_tensor`: ``.npy`` arrays, or a variable of a MATLAB ``.mat`` file (the paper's cardiac MRI
  ``sol_yxzt_pat1.mat`` and hyperspectral ``nogueiro_1140.mat`` — download them by hand).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from richardson_tc.errors import RichardsonTcError

KINDS = ("cp", "tucker", "gaussian", "digits", "video")


def make_tensor(kind: str, *, shape: Sequence[int] = (60, 60, 60), rank: int = 8, seed: int = 0) -> np.ndarray:
    """A float64 tensor of the given ``kind`` (see :data:`KINDS`); ``shape``/``rank`` apply where they make sense.

    ``cp``: ``tl.random.random_cp(shape, rank)``; ``tucker``: ``random_tucker(shape, (rank,)*N)`` (the paper uses
    (4, 4, 4)); ``gaussian``: i.i.d. N(0, 1); ``digits``: sklearn's 1797 8×8 digit images as 8 × 8 × 1797 (scaled
    to [0, 1]); ``video``: ``shape[0] × shape[1] × shape[2]`` frames of 3 Gaussian blobs moving on straight lines.
    """
    import tensorly as tl

    shape = tuple(int(s) for s in shape)
    if kind not in KINDS:
        raise RichardsonTcError(f"kind must be one of {KINDS}, got {kind!r}")
    if len(shape) < 2 or min(shape) < 1:
        raise RichardsonTcError(f"shape must have >= 2 positive sizes, got {shape}")
    if rank < 1:
        raise RichardsonTcError(f"rank must be >= 1, got {rank}")
    if kind == "cp":
        return np.asarray(tl.random.random_cp(shape, rank, full=True, random_state=seed), dtype=np.float64)
    if kind == "tucker":
        ranks = tuple(min(rank, s) for s in shape)
        return np.asarray(tl.random.random_tucker(shape, ranks, full=True, random_state=seed), dtype=np.float64)
    if kind == "gaussian":
        return np.random.default_rng(seed).standard_normal(shape)
    if kind == "digits":
        from sklearn.datasets import load_digits

        imgs = load_digits().images  # [1797, 8, 8], values 0..16
        return np.ascontiguousarray(np.moveaxis(imgs, 0, -1) / 16.0, dtype=np.float64)  # [8, 8, 1797]
    # video: blobs moving on straight lines, [H, W, T]
    if len(shape) != 3:
        raise RichardsonTcError(f"the video tensor is H × W × T, got shape {shape}")
    h, w, t = shape
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    out = np.zeros(shape)
    for _ in range(3):
        y0, x0 = rng.uniform(0.2, 0.8, 2) * (h, w)
        vy, vx = rng.uniform(-0.4, 0.4, 2) * (h / t, w / t)
        sigma = rng.uniform(0.06, 0.12) * min(h, w)
        for f in range(t):
            cy, cx = y0 + vy * f, x0 + vx * f
            out[:, :, f] += np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * sigma**2))
    return out


def sample_mask(shape: Sequence[int], p: float, *, seed: int) -> np.ndarray:
    """Boolean mask with exactly ``⌊p·|𝒳|⌋`` observed entries: the first entries of a seeded permutation."""
    if not (isinstance(p, (int, float)) and 0 < p <= 1):
        raise RichardsonTcError(f"p (sample ratio) must be in (0, 1], got {p!r}")
    size = int(np.prod(shape))
    m = int(np.floor(p * size))
    if m < 1:
        raise RichardsonTcError(f"p={p} observes no entry of a tensor with {size} entries (empty Ω)")
    perm = np.random.default_rng(seed).permutation(size)
    mask = np.zeros(size, dtype=bool)
    mask[perm[:m]] = True
    return mask.reshape(tuple(shape))


def split_mask(mask: np.ndarray, frac: float, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Split Ω into a fitting part and a validation part: ``(fit, val)`` boolean masks of ``mask``'s shape,
    disjoint, with ``fit | val == mask`` and exactly ``⌊frac·|Ω|⌋`` validation entries (a seeded permutation of Ω).

    Hyper-parameters (ε, ridge λ) are chosen by fitting on ``fit`` and scoring on ``val``: never on the entries
    outside Ω, which are the test entries."""
    mask = np.asarray(mask, dtype=bool)
    if not (isinstance(frac, (int, float)) and 0 < frac < 1):
        raise RichardsonTcError(f"frac (validation share of Ω) must be in (0, 1), got {frac!r}")
    obs = np.flatnonzero(mask)
    n_val = int(np.floor(frac * obs.size))
    if n_val < 1 or n_val >= obs.size:
        raise RichardsonTcError(f"frac={frac} leaves an empty fitting or validation part of |Ω| = {obs.size}")
    val = np.zeros(mask.size, dtype=bool)
    val[np.random.default_rng(seed).permutation(obs)[:n_val]] = True
    val = val.reshape(mask.shape)
    return mask & ~val, val


def check_tensor_and_mask(tensor: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate a dense tensor and its observed mask (shared by every solver); returns float64 / bool arrays."""
    tensor = np.asarray(tensor)
    mask = np.asarray(mask)
    if not np.issubdtype(tensor.dtype, np.floating):
        raise RichardsonTcError(f"tensor must have a float dtype, got {tensor.dtype}")
    if tensor.ndim < 2:
        raise RichardsonTcError(f"tensor must have order >= 2, got order {tensor.ndim}")
    if mask.shape != tensor.shape:
        raise RichardsonTcError(f"mask shape {mask.shape} does not match tensor shape {tensor.shape}")
    if mask.dtype != bool:
        if not np.isin(mask, (0, 1)).all():
            raise RichardsonTcError("mask must be boolean (or 0/1)")
        mask = mask.astype(bool)
    if not mask.any():
        raise RichardsonTcError("mask observes no entry (empty Ω)")
    if not np.isfinite(tensor[mask]).all():
        raise RichardsonTcError("tensor has NaN or inf at observed entries (missing entries must be masked out)")
    return tensor.astype(np.float64, copy=False), mask


@dataclass
class ObservedEntries:
    """Ω in COO form: ``coords [m, N]`` (int64) and ``values [m]`` of a tensor of ``shape``.

    ``by_mode(n)`` sorts the entries by their mode-``n`` index once and caches the grouping
    (:class:`ModeGroups`), which the vectorised direct solver reuses across ALS sweeps.
    """

    shape: tuple[int, ...]
    coords: np.ndarray
    values: np.ndarray
    _groups: dict[int, ModeGroups] = field(default_factory=dict, repr=False)

    @classmethod
    def from_mask(cls, tensor: np.ndarray, mask: np.ndarray) -> ObservedEntries:
        tensor, mask = check_tensor_and_mask(tensor, mask)
        coords = np.argwhere(mask).astype(np.int64)  # [m, N], C order
        return cls(tensor.shape, coords, tensor[mask].astype(np.float64))

    @classmethod
    def from_coo(cls, shape: Sequence[int], coords: np.ndarray, values: np.ndarray) -> ObservedEntries:
        """Validated COO input: coordinates in range, no duplicates, finite float values."""
        shape = tuple(int(s) for s in shape)
        coords = np.asarray(coords)
        values = np.asarray(values)
        if len(shape) < 2:
            raise RichardsonTcError(f"shape must have order >= 2, got {shape}")
        if coords.ndim != 2 or coords.shape[1] != len(shape):
            raise RichardsonTcError(f"coords must be [m, {len(shape)}] for shape {shape}, got {coords.shape}")
        if values.shape != (coords.shape[0],):
            raise RichardsonTcError(f"values must be [m] = [{coords.shape[0]}], got {values.shape}")
        if coords.shape[0] == 0:
            raise RichardsonTcError("coords is empty (empty Ω)")
        if not np.issubdtype(coords.dtype, np.integer):
            raise RichardsonTcError(f"coords must be integers, got {coords.dtype}")
        if not np.issubdtype(values.dtype, np.floating):
            raise RichardsonTcError(f"values must have a float dtype, got {values.dtype}")
        if (coords < 0).any() or (coords >= np.asarray(shape)).any():
            raise RichardsonTcError(f"coords out of range for shape {shape}")
        flat = np.ravel_multi_index(tuple(coords.T), shape)
        if np.unique(flat).size != flat.size:
            raise RichardsonTcError("coords has duplicate entries")
        if not np.isfinite(values).all():
            raise RichardsonTcError("values has NaN or inf")
        return cls(shape, coords.astype(np.int64), values.astype(np.float64))

    def to_mask(self) -> np.ndarray:
        mask = np.zeros(self.shape, dtype=bool)
        mask[tuple(self.coords.T)] = True
        return mask

    def to_dense(self, fill: float = 0.0) -> np.ndarray:
        out = np.full(self.shape, fill, dtype=np.float64)
        out[tuple(self.coords.T)] = self.values
        return out

    def by_mode(self, mode: int) -> ModeGroups:
        """Ω sorted by the mode-``mode`` index (cached): see :class:`ModeGroups`."""
        if mode not in self._groups:
            order = np.argsort(self.coords[:, mode], kind="stable")
            rows = self.coords[order, mode]
            counts = np.bincount(rows, minlength=self.shape[mode])
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
            width = max(int(counts.max()), 1)
            slot = rows * width + (np.arange(rows.size) - starts[rows])
            self._groups[mode] = ModeGroups(self.coords[order], self.values[order], counts, width, slot)
        return self._groups[mode]


@dataclass(frozen=True)
class ModeGroups:
    """Ω grouped by one mode's index: sorted ``coords [m, N]`` and ``values [m]``, ``counts [I_n]`` per row,
    ``width`` = the largest count, and ``slot [m]`` = each entry's flat position in a zero-padded
    ``[I_n, width]`` layout (row · width + rank within the row)."""

    coords: np.ndarray
    values: np.ndarray
    counts: np.ndarray
    width: int
    slot: np.ndarray


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def load_array(path: str | Path, *, what: str) -> np.ndarray:
    """A numeric array from a user's ``.npy`` file; every error names ``what`` (the flag) and the file
    (:func:`icml25.errors.read_npy`)."""
    from icml25.errors import read_npy

    return read_npy(path, what=what, error=RichardsonTcError)


def load_npz(path: str | Path, *, what: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
    """The arrays ``keys`` of a user's ``.npz`` archive; every error names ``what`` (the flag) and the file
    (:func:`icml25.errors.read_npz`)."""
    from icml25.errors import read_npz

    return read_npz(path, what=what, keys=keys, error=RichardsonTcError, numeric=False)


def load_tensor(path: str | Path, *, key: str | None = None, what: str = "--input") -> np.ndarray:
    """A float64 tensor from ``.npy`` or a ``.mat`` variable (``key``; default the largest array in the file).

    Errors name ``what`` (the flag the file came from) and the file: a text or truncated file, a MATLAB v7.3
    (HDF5) file, which scipy cannot read, a missing variable.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(2, "No such file or directory", str(path))
    if path.suffix == ".npy":
        arr = load_array(path, what=what)
    elif path.suffix == ".mat":
        from scipy.io import loadmat

        try:
            raw = loadmat(path)
        except NotImplementedError:  # scipy: "Please use HDF reader for matlab v7.3 files"
            raise RichardsonTcError(f"{what} {str(path)!r} is a MATLAB v7.3 (HDF5) file, which scipy cannot read: "
                                    "save it with save(..., '-v7') or as .npy") from None
        except Exception as exc:  # MatReadError, ValueError, ... from a text, truncated or corrupt file
            raise RichardsonTcError(f"{what} {str(path)!r} is not a readable MATLAB .mat file (v4-v7) "
                                    f"({_first_line(exc)})") from None
        data = {k: v for k, v in raw.items() if not k.startswith("__") and isinstance(v, np.ndarray)}
        if not data:
            raise RichardsonTcError(f"{what} {str(path)!r}: no array variable found")
        if key is None:
            key = max(data, key=lambda k: data[k].size)
        if key not in data:
            raise RichardsonTcError(f"--key {key!r}: {str(path)!r} has no such variable; it has {sorted(data)}")
        arr = data[key]
        if np.iscomplexobj(arr):
            arr = np.abs(arr)  # the MRI data is complex: the paper completes magnitudes
    else:
        raise RichardsonTcError(f"{what} {str(path)!r}: only .npy and .mat files are read, got {path.suffix!r}")
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise RichardsonTcError(f"{what} {str(path)!r}: expected a numeric array, got dtype {arr.dtype}")
    return np.asarray(arr, dtype=np.float64)
