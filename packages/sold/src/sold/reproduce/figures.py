"""The figures: SAVi's decomposition of one episode and the two world models' open-loop rollouts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def _plot_decomposition(ex: dict[str, Any], path: Path, *, title: str = "") -> None:
    from icml25.plots import _plt, save_figure

    plt = _plt()
    frames, recon, masks = ex["frames"], ex["savi_recon"], ex["savi_masks"].astype(np.float32)
    k = masks.shape[1]
    ts = [0, len(frames) // 2, len(frames) - 1]
    fig, axes = plt.subplots(len(ts), 2 + k, figsize=(1.2 * (2 + k), 1.2 * len(ts)))
    for i, t in enumerate(ts):
        axes[i, 0].imshow(frames[t].transpose(1, 2, 0))
        axes[i, 1].imshow(recon[t].transpose(1, 2, 0))
        for j in range(k):
            axes[i, 2 + j].imshow(masks[t, j], vmin=0, vmax=1, cmap="gray")
        for a in axes[i]:
            a.set_xticks([])
            a.set_yticks([])
    axes[0, 0].set_title("frame", fontsize=7)
    axes[0, 1].set_title("recon", fontsize=7)
    for j in range(k):
        axes[0, 2 + j].set_title(f"slot {j}", fontsize=7)
    if title:
        fig.suptitle(title, fontsize=8)
    save_figure(fig, path, dpi=80)


def _plot_rollout(frames: np.ndarray, slots_pred: np.ndarray, hol_pred: np.ndarray, context: int,
                  path: Path) -> None:
    from icml25.plots import _plt, save_figure

    plt = _plt()
    h = slots_pred.shape[0]
    fig, axes = plt.subplots(3, h, figsize=(1.0 * h, 3.2))
    for j in range(h):
        for i, (row, name) in enumerate(((frames[context + j], "truth"), (slots_pred[j], "SOLD"),
                                         (hol_pred[j], "holistic"))):
            axes[i, j].imshow(row.transpose(1, 2, 0))
            axes[i, j].set_xticks([])
            axes[i, j].set_yticks([])
            if j == 0:
                axes[i, j].set_ylabel(name, fontsize=7)
        axes[0, j].set_title(f"+{j + 1}", fontsize=7)
    save_figure(fig, path, dpi=80)
