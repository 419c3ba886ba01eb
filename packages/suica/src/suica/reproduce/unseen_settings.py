"""Experiment 1 of :mod:`suica.reproduce` (:func:`generalisation`): default ``SUICA()`` vs tuned IDW and Gaussian
smoothing on held-out spots (20 %) of three generator settings the tests do not use."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from icml25.experiment import Section

from suica.config import GENERALISATION_SETTINGS, ReproduceConfig
from suica.reproduce.common import LABELS, PAPER_GEN, _chosen_rows, _prepare, pmap
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


def _generalisation_one(item) -> dict:
    """One tissue of the generalisation experiment: ``(cfg, setting index, setting name, seed)`` -> scores."""
    from suica.synthetic import make_tissue

    cfg, si, name, s = item
    raw = make_tissue(n_spots=cfg.n_spots, n_genes=cfg.n_genes, seed=1000 * (si + 1) + s,
                      **GENERALISATION_SETTINGS[name])
    a, tr, te = _prepare(raw, s)
    x, rate, xy = np.asarray(a.X), np.asarray(a.layers["rate"]), a.obsm["spatial"]
    t0 = time.perf_counter()
    cache: dict = {}
    sel = _tune_interpolators(a, tr, seed=s, model_kw=cfg.model_kw(), cache=cache)
    taus, curves = _taus_curves(sel, cache, with_suica=True)
    out = {"sel": {n: sel[n] for n in ("idw", "gaussian", TUNED)}, "ev": {}, "fit_s": {}, "taus": taus,
           "curves": curves, "tune_s": time.perf_counter() - t0}
    _fit_score_all(out, a, tr, te, x, rate, xy, cfg, s, sel, [*GEN_METHODS, *GEN_EXTRA])
    return out


def generalisation(cfg: ReproduceConfig, seeds: list[int], out: Path) -> Section:
    """Default SUICA() vs tuned IDW / Gaussian smoothing on held-out spots of unseen generator settings."""
    sec = Section("generalisation")
    rows, sigmas = [], []
    sels: dict[str, list] = {"idw": [], "gaussian": [], TUNED: []}
    taus: dict[str, list] = {}
    items = [(cfg, si, name, s) for si, name in enumerate(cfg.settings) for s in seeds]
    outs = pmap(_generalisation_one, items)
    for si, name in enumerate(cfg.settings):
        mine = [o for (_, sj, _, _), o in zip(items, outs) if sj == si]
        sigmas += [o["sigma"] for o in mine]
        for n in sels:
            sels[n] += [o["sel"][n] for o in mine]
        for o in mine:
            for m, t in o["taus"].items():
                taus.setdefault(m, []).append(t)
        _gen_claims(sec, name, mine, paper=PAPER_GEN)
        rows += _gen_rows(name, mine, [*GEN_METHODS, *GEN_EXTRA])
    sec.table(f"generalisation: held-out spots (20 %) of unseen generator settings ({len(seeds)} seeds each; "
              f"{cfg.n_spots} spots x {cfg.n_genes} genes; fit s = one worker process, one torch thread, final fit "
              "only; SUICA tuned reuses the default / GAE fit when validation chose that embedding)",
              ["setting", "method", *[f"{k} (mean ± sd)" for k in GEN_TABLE_METRICS], "fit s"], rows)
    sec.table("tuned on validation: interpolators and SUICA's embedding (masked Pearson, 20 % of the training spots; "
              "per seed and setting)",
              ["method", "chosen (times)", "at the edge"], _chosen_rows(sels))
    sec.table("zero-map threshold τ chosen on validation (zero-map mean IoU; per seed and setting)",
              ["method", "τ chosen (times)"],
              [[LABELS[m], "; ".join(f"τ={t:g} ({v.count(t)}x)" for t in sorted(set(v)))] for m, v in taus.items()])
    sec.notes.append(f"generalisation: SUICA() with the package defaults (PCA embedding); σ = 0.01 / h from the spot "
                     f"spacing, chosen σ per tissue: {', '.join(f'{v:.2f}' for v in sigmas)}")
    sec.notes.append("generalisation: tuning per tissue (IDW, Gaussian smoothing and SUICA's embedding on the same "
                     f"validation split) took {np.mean([o['tune_s'] for o in outs]):.1f} s on average (one worker)")
    return sec
