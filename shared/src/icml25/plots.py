"""Plotting helpers (matplotlib, Agg backend): learning curves with mean ± spread, grouped bars, written atomically."""

from __future__ import annotations

import io as _io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from icml25.io import atomic_write_bytes


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: str | os.PathLike, *, dpi: int = 120) -> Path:
    """Save a matplotlib figure as PNG atomically and close it."""
    plt = _plt()
    buf = _io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return atomic_write_bytes(path, buf.getvalue())


def learning_curves(
    curves: Mapping[str, Any],
    path: str | os.PathLike,
    *,
    x: Sequence[float] | None = None,
    xlabel: str = "step",
    ylabel: str = "value",
    title: str = "",
    spread: str = "sd",
    logy: bool = False,
) -> Path:
    """Plot one line per method: ``curves[name]`` is an array ``(seeds, points)`` (or ``(points,)``).

    The line is the mean over seeds, the band ± one standard deviation (``spread="sd"``) or min–max (``"minmax"``).
    """
    import numpy as np

    if spread not in ("sd", "minmax"):
        raise ValueError(f"spread must be 'sd' or 'minmax', got {spread!r}")
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, ys in curves.items():
        arr = np.asarray(ys, dtype=float)
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2:
            raise ValueError(f"curves[{name!r}] must be (seeds, points), got shape {arr.shape}")
        xs = np.arange(arr.shape[1]) if x is None else np.asarray(x, dtype=float)
        if len(xs) != arr.shape[1]:
            raise ValueError(f"curves[{name!r}] has {arr.shape[1]} points but x has {len(xs)}")
        mean = np.nanmean(arr, axis=0)
        (line,) = ax.plot(xs, mean, label=name)
        if arr.shape[0] > 1:
            if spread == "sd":
                sd = np.nanstd(arr, axis=0, ddof=1)
                lo, hi = mean - sd, mean + sd
            else:
                lo, hi = np.nanmin(arr, axis=0), np.nanmax(arr, axis=0)
            ax.fill_between(xs, lo, hi, alpha=0.2, color=line.get_color())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return save_figure(fig, path)


def grouped_bars(
    values: Mapping[str, Mapping[str, Any]],
    path: str | os.PathLike,
    *,
    ylabel: str = "value",
    title: str = "",
) -> Path:
    """Grouped bars: ``values[group][method]`` is a scalar or a list over seeds (bar = mean, error bar = sd)."""
    import numpy as np

    plt = _plt()
    groups = list(values)
    methods: list[str] = []
    for g in groups:
        for m in values[g]:
            if m not in methods:
                methods.append(m)
    width = 0.8 / max(len(methods), 1)
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(groups) * max(1, len(methods)) * 0.5), 4))
    for j, m in enumerate(methods):
        means, sds = [], []
        for g in groups:
            v = values[g].get(m)
            arr = np.atleast_1d(np.asarray([] if v is None else v, dtype=float))
            arr = arr[np.isfinite(arr)]
            means.append(float(arr.mean()) if arr.size else float("nan"))
            sds.append(float(arr.std(ddof=1)) if arr.size > 1 else 0.0)
        pos = np.arange(len(groups)) + (j - (len(methods) - 1) / 2) * width
        ax.bar(pos, means, width, yerr=sds, label=m, capsize=2)
    ax.set_xticks(np.arange(len(groups)))
    ax.set_xticklabels(groups, rotation=15, ha="right")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    return save_figure(fig, path)
