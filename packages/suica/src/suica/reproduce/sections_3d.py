"""Experiment 3 of :mod:`suica.reproduce` (:func:`three_d`): the generator's 3-D mode (6 hex sections), one interior
section held out and predicted from the others."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from icml25.experiment import Section

from suica.config import ReproduceConfig
from suica.reproduce.common import PAPER, _chosen_rows, _prepare, pmap
from suica.reproduce.held_out import (
    GEN_EXTRA,
    GEN_METHODS,
    GEN_TABLE_METRICS,
    TUNED,
    _fit_score_all,
    _gen_claims,
    _gen_rows,
    _taus_curves,
)
from suica.reproduce.tuning import _tune_interpolators


def _three_d_one(item) -> dict:
    """One seed of the 3-D experiment: ``(cfg, seed)`` -> per-method scores on the held-out section."""
    from suica.synthetic import make_tissue

    cfg, s = item
    raw = make_tissue(n_spots=cfg.n_spots_3d, n_genes=cfg.n_genes, n_domains=5, layout="hex", dim=3,
                      n_sections=6, seed=3000 + s)
    z = np.asarray(raw.obsm["spatial"])[:, 2]
    levels = np.unique(np.round(z, 6))
    test_level, val_level = levels[2 + s % 2], levels[3 - s % 2]  # interior sections: test and validation
    a, tr, te = _prepare(raw, s, test_idx=np.flatnonzero(np.isclose(z, test_level)))
    val = np.flatnonzero(np.isclose(np.asarray(a.obsm["spatial"])[:, 2], val_level))
    x, rate, xyz = np.asarray(a.X), np.asarray(a.layers["rate"]), a.obsm["spatial"]
    cache: dict = {}
    sel = _tune_interpolators(a, tr, val_idx=val, seed=s, model_kw=cfg.model_kw(), cache=cache)
    taus, curves = _taus_curves(sel, cache, with_suica=True)
    out = {"ev": {}, "fit_s": {}, "sel": {n: sel[n] for n in ("idw", "gaussian", TUNED)}, "taus": taus,
           "curves": curves}
    _fit_score_all(out, a, tr, te, x, rate, xyz, cfg, s, sel, [*GEN_METHODS, *GEN_EXTRA])
    return out


def three_d(cfg: ReproduceConfig, seeds: list[int], out: Path) -> Section:
    """3-D tissue (6 hex sections): an interior section held out and predicted from the others."""
    sec = Section("3-D")
    outs = pmap(_three_d_one, [(cfg, s) for s in seeds])
    sels = {n: [o["sel"][n] for o in outs] for n in ("idw", "gaussian", TUNED)}
    _gen_claims(sec, "3-D", outs, paper=PAPER)
    sec.table(f"3-D: held-out interior section ({len(seeds)} seeds; {cfg.n_spots_3d} spots in 6 sections; "
              "interpolators, SUICA's embedding and τ tuned on another interior section)",
              ["method", *[f"{k} (mean ± sd)" for k in GEN_TABLE_METRICS], "fit s"],
              _gen_rows("", outs, [*GEN_METHODS, *GEN_EXTRA]))
    sec.table("tuned on validation (3-D: another interior section)", ["method", "chosen (times)", "at the edge"],
              _chosen_rows(sels))
    return sec
