"""Tuning on a validation split of the training spots (:mod:`suica.reproduce`): the interpolators' grids and
SUICA's embedding, tuned alike on the same split and metric, and the zero-map threshold τ (:data:`TAU_GRID`)."""

from __future__ import annotations

import numpy as np

from suica.reproduce.common import (
    CURVE_EVERY,
    EXTEND,
    FIXED,
    GRIDS,
    INTERP,
    SUICA_GRID,
    TAU_GRID,
    TUNE_METRIC,
    _make,
)


def validation_split(train_idx, *, frac: float = 0.2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Split the training spots into ``(fit_idx, val_idx)`` (sorted, disjoint, union = ``train_idx``)."""
    from suica.synthetic import holdout_spots

    train_idx = np.asarray(train_idx)
    keep, val = holdout_spots(len(train_idx), frac=frac, seed=seed)
    return np.sort(train_idx[keep]), np.sort(train_idx[val])


def _pkey(params: dict) -> tuple:
    return tuple(sorted(params.items()))


def _tune_interpolators(a, tr, val_idx=None, seed: int = 0, model_kw: dict | None = None, cache: dict | None = None):
    """IDW and Gaussian smoothing (and, when ``model_kw`` is given, SUICA's embedding, :data:`SUICA_GRID`) tuned on
    a validation split of the training spots: same grid size, same metric, same split; test spots never enter.

    ``cache`` (a dict, filled when given): ``cache[name][_pkey(params)] = {"pred": validation predictions,
    "truth": validation expression, "curve": validation Curve of a neural candidate or None}`` — the zero-map
    threshold (:data:`TAU_GRID`) and the gates' plateau check reuse them."""
    from icml25.train import Curve
    from icml25.tuning import tune_alike

    from suica.metrics import evaluate

    if val_idx is None:
        fit_idx, val_idx = validation_split(tr, seed=seed + 500)
    else:
        fit_idx = np.setdiff1d(tr, val_idx)
    x = a.X
    coords = a.obsm["spatial"]
    grids = dict(GRIDS) if model_kw is None else {**GRIDS, **SUICA_GRID}
    cache = {} if cache is None else cache
    x_val = np.asarray(x[val_idx].toarray() if hasattr(x, "toarray") else x[val_idx], dtype=np.float32)

    def scorer(name):
        def evaluate_fn(params):
            if int({**FIXED.get(name, {}), **params}.get("k", 1)) > len(fit_idx):
                return float("nan")  # more neighbours than spots (an extension step on a tiny tissue): never chosen
            curve = None
            if name in INTERP:
                m = _make(name, model_kw or {}, seed, params).fit(a, train_idx=fit_idx)
                pred = np.asarray(m.predict(coords[val_idx], allow_extrapolation=True).X)
            else:
                # a neural model needs genes with counts on its training spots: genes that are all-zero on the fit
                # spots are left out of its fit and predicted as 0 (the scoring still covers every gene)
                keep = np.asarray((x[fit_idx] > 0).sum(0)).ravel() > 0

                def val_pred(model):
                    out = np.zeros((len(val_idx), a.n_vars), dtype=np.float32)
                    out[:, keep] = model.predict_arrays(coords[val_idx], allow_extrapolation=True)[0]
                    return out

                m = _make(name, model_kw or {}, seed, params)
                steps, vals = [], []
                n_inr = m.config.inr_epochs

                def hook(phase, step, model):  # validation curve over the INR and decoder steps
                    g = step + 1 + (n_inr if phase == "decoder" else 0)
                    if phase != "gae" and g % CURVE_EVERY == 0:
                        steps.append(g)
                        vals.append(evaluate(val_pred(model), x_val)[TUNE_METRIC])

                m.fit(a[:, keep] if not keep.all() else a, train_idx=fit_idx, on_step=hook)
                pred = val_pred(m)
                if steps:
                    curve = Curve(steps=steps, values=vals, higher_is_better=True, patience=3, stopped_by="budget")
            cache.setdefault(name, {})[_pkey(params)] = {"pred": pred, "truth": x_val, "curve": curve}
            return evaluate(pred, x_val)[TUNE_METRIC]
        return evaluate_fn

    return tune_alike({n: (scorer(n), grids[n]) for n in grids}, extend=EXTEND)


def choose_tau(pred, truth) -> float:
    """τ of :data:`TAU_GRID` with the best zero-map mean IoU (:func:`suica.metrics.zero_map_miou`) of ``pred`` vs
    ``truth`` (validation spots); ties go to the smaller τ."""
    from suica.metrics import zero_map_miou

    scores = [zero_map_miou(pred, truth, tau=t) for t in TAU_GRID]
    return float(TAU_GRID[int(np.argmax(scores))])
