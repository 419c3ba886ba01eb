"""Figures of lcia's reproduce runs: where DEMA's alpha comes from, the mean accuracy matrices, the gate curves."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def alpha_png(alphas: dict, by_numel: dict, path: Path) -> None:
    from icml25.plots import _plt, save_figure

    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(8, 3))
    vals = np.asarray(alphas["dema"], dtype=float)
    if vals.size:
        axes[0].hist(np.log10(vals), bins=30, color="tab:blue")
    axes[0].axvline(-2, color="k", ls="--", lw=1, label="fallback 0.01")
    axes[0].set_xlabel("log10 alpha (closed form, DEMA)")
    axes[0].set_ylabel("tensor updates")
    axes[0].legend(fontsize=7)
    sizes = list(by_numel["dema"])
    bottom = np.zeros(len(sizes))
    for r, col in (("formula", "tab:green"), ("out_of_range", "tab:red"), ("first_step", "tab:gray")):
        tot = np.array([max(1, sum(by_numel["dema"][k].values())) for k in sizes])
        v = np.array([by_numel["dema"][k].get(r, 0) for k in sizes]) / tot
        axes[1].bar([str(k) for k in sizes], v, bottom=bottom, color=col, label=r)
        bottom += v
    axes[1].set_xlabel("tensor numel")
    axes[1].set_ylabel("share of updates")
    axes[1].legend(fontsize=7)
    save_figure(fig, path, dpi=80)


def matrices_png(mean_A: dict, tnames: list[str], path: Path, label: dict[str, str]) -> None:
    from icml25.plots import _plt, save_figure

    plt = _plt()
    fig, axes = plt.subplots(1, len(mean_A), figsize=(3.2 * len(mean_A), 3.2))
    for ax, (m, A) in zip(np.atleast_1d(axes), mean_A.items()):
        ax.imshow(np.nan_to_num(A, nan=0.0), vmin=0, vmax=1, cmap="viridis")
        ax.set_title(label[m], fontsize=8)
        ax.set_xticks(range(len(tnames)))
        ax.set_xticklabels(tnames, rotation=90, fontsize=6)
        ax.set_yticks(range(len(tnames)))
        ax.set_yticklabels(tnames, fontsize=6)
    save_figure(fig, path, dpi=80)




def curves_png(curves: dict[str, list[dict]], share: float, just: dict[str, float], path: Path) -> None:
    """Validation accuracy of each task learned alone (long runs), with the gate's level ``share`` × best and the
    just-learned accuracy at the stream's budget."""
    from icml25.plots import _plt, save_figure

    plt = _plt()
    fig, axes = plt.subplots(1, len(curves), figsize=(2.4 * len(curves), 2.4), sharey=True)
    for ax, (name, cs) in zip(np.atleast_1d(axes), curves.items()):
        for c in cs:
            ax.plot(c["steps"], c["values"], lw=1)
        best = float(np.mean([max(c["values"]) for c in cs]))
        ax.axhline(share * best, color="k", ls="--", lw=0.8)
        ax.axhline(just[name], color="tab:red", ls=":", lw=1)
        ax.set_title(name, fontsize=8)
        ax.set_xlabel("steps", fontsize=7)
        ax.set_ylim(-0.02, 1.02)
    np.atleast_1d(axes)[0].set_ylabel("validation exact match", fontsize=7)
    save_figure(fig, path, dpi=80)
