"""Your own points: a CSV file (one coordinate per column) with a window given by bounds, or the JSON format.

* **CSV**: one point per row, one coordinate per column (``d`` columns), comma-separated; an optional first row of
  column names (any row whose cells are not all numbers is read as the header, and only the first row may be one);
  blank lines are skipped. The window is the box ``Π_i [lo_i, hi_i]`` given by ``bounds = (lo_1, hi_1, …, lo_d, hi_d)``
  (``k2ie fit --points pts.csv --bounds 0 50``).
* **JSON**: ``{"points": [[x1, …], …], "window": [[[lo, hi], …], …]}`` (a union of boxes ``(n_box, d, 2)``).

Every failure names the file, the row and the column (or the field) and what was expected.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from k2ie.errors import K2ieError
from k2ie.window import Window


def window_from_bounds(bounds: Sequence[float], *, d: int | None = None, what: str = "bounds") -> Window:
    """The box ``Π_i [lo_i, hi_i]`` from ``bounds = (lo_1, hi_1, …, lo_d, hi_d)``; ``d`` (if given) must match."""
    vals = list(bounds)
    if len(vals) == 0 or len(vals) % 2:
        raise K2ieError(f"{what} must be pairs lo hi, one per dimension (e.g. 0 50, or 0 5 0 5 in 2-D); "
                        f"got {len(vals)} number(s)")
    try:
        arr = np.asarray(vals, dtype=np.float64).reshape(-1, 2)  # (d, 2): one (lo, hi) per dimension
    except (TypeError, ValueError):
        raise K2ieError(f"{what} must be numbers, got {vals!r}") from None
    if not np.isfinite(arr).all():
        raise K2ieError(f"{what} must be finite numbers, got {vals!r}")
    bad = np.flatnonzero(arr[:, 0] >= arr[:, 1])
    if len(bad):
        i = int(bad[0])
        raise K2ieError(f"{what}: dimension {i} has lo >= hi ({arr[i, 0]:g}, {arr[i, 1]:g}); each pair needs lo < hi")
    if d is not None and arr.shape[0] != d:
        raise K2ieError(f"{what} give {arr.shape[0]} dimension(s) but the points have d={d} column(s); "
                        f"give {2 * d} numbers (lo hi per column)")
    return Window(arr[None])


def _number(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def read_points_csv(path: str | Path, *, what: str = "points file") -> np.ndarray:
    """Points ``(N, d)`` from a CSV file: one row per point, one column per coordinate, optional header row.

    Raises :class:`K2ieError` naming the file (and row/column) for a missing file, a non-numeric or non-finite cell
    after the header, rows of different lengths, or no columns at all. A file with a header and no rows gives
    ``(0, d)``.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise K2ieError(f"{what} {str(p)!r}: no such file") from None
    except IsADirectoryError:
        raise K2ieError(f"{what} {str(p)!r} is a directory, expected a CSV file") from None
    except UnicodeDecodeError:
        raise K2ieError(f"{what} {str(p)!r} is not a text (CSV) file") from None
    rows = [(i + 1, [c.strip() for c in r]) for i, r in enumerate(csv.reader(text.splitlines()))
            if any(c.strip() for c in r)]
    if not rows:
        raise K2ieError(f"{what} {str(p)!r} is empty: expected one point per row, one coordinate per column")
    header = None
    if any(_number(c) is None for c in rows[0][1]):
        header, rows = rows[0][1], rows[1:]
    d = len(header) if header is not None else len(rows[0][1])
    out = np.empty((len(rows), d))
    for k, (line, cells) in enumerate(rows):
        if len(cells) != d:
            raise K2ieError(f"{what} {str(p)!r} line {line}: {len(cells)} column(s), expected {d} "
                            f"(one coordinate per column{', as in the header' if header else ''})")
        for j, c in enumerate(cells):
            v = _number(c)
            if v is None or not math.isfinite(v):
                col = f"column {j + 1}" + (f" ({header[j]!r})" if header else "")
                raise K2ieError(f"{what} {str(p)!r} line {line}, {col}: {c!r} is not a finite number")
            out[k, j] = v
    return out


def load_points(path: str | Path, *, bounds: Sequence[float] | None = None, allow_overlap: bool = False,
                what: str = "--points") -> tuple[np.ndarray, Window]:
    """Points and window from ``path``: ``.csv`` with ``bounds`` (required), or JSON with its own window."""
    from icml25.errors import read_json

    p = Path(path)
    if p.suffix.lower() == ".csv":
        if bounds is None:
            raise K2ieError(f"{what} {str(p)!r} is a CSV file: give its window with --bounds lo hi per column "
                            "(e.g. --bounds 0 50, or --bounds 0 5 0 5 in 2-D)")
        x = read_points_csv(p, what=what)
        win = window_from_bounds(bounds, d=x.shape[1], what="--bounds")
    else:
        if bounds is not None:
            raise K2ieError(f"--bounds is for CSV points; the JSON file {str(p)!r} carries its own 'window'")
        data = read_json(p, what=f"{what} file", required=("points", "window"))
        win = Window(data["window"], allow_overlap=allow_overlap)
        x = data["points"]
    try:
        return win.check_points(x), win
    except K2ieError as exc:
        raise K2ieError(f"{what} {str(p)!r}: {exc}") from None
