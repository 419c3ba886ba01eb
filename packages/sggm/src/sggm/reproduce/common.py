"""Helpers shared by the experiments of :mod:`sggm.reproduce`: the Gaussian feature model of a graph family,
its exact KL, log-log slopes and figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sggm.config import Config
from sggm.gaussian import GaussianGraphModel
from sggm.graphs import make_graph
from sggm.sde import VP

FAMILIES = ("regular", "powerlaw")
PAPER_NOTE = "paper has figures only, no numbers"


def _model(cfg: Config, family: str, n: int, seed: int, **kw) -> GaussianGraphModel:
    a = make_graph(family, n, mean_degree=cfg.mean_degree, seed=seed)
    return GaussianGraphModel(paradigm="features", graph=a, alpha=cfg.alpha, n_features=cfg.n_features,
                              sde_x=VP(cfg.beta, cfg.beta), **kw)


def _kl(model: GaussianGraphModel, cfg: Config, **kw) -> float:
    kw = {"n_steps": cfg.n_steps, "T": cfg.T, "t_min": cfg.t_min, **kw}
    return model.sampler_law(**kw).kl_per_entry


def _slope(xs, ys) -> float:
    return float(np.polyfit(np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float)), 1)[0])


def _fig(out: Path, name: str, draw) -> str:
    from icml25.plots import _plt, save_figure

    plt = _plt()
    fig, axes = draw(plt)
    save_figure(fig, out / name, dpi=80)
    return name
