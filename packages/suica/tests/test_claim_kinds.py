"""Which reproduce rows count as reproductions (issue 63 / 53 "relabel"): rows whose outcome follows from a baseline's
construction are ``property``, with the construction itself tested here."""

import numpy as np
import pytest
from icml25.tuning import Selection
from suica.baselines import Interpolator
from suica.reproduce import LABELS, construction_kind

from .conftest import split_idx


@pytest.mark.parametrize("metric, baseline, kind", [
    # baselines that return the measured value at every training spot: gene imputation and denoising
    ("gene_imp_corr", "griddata", "property"), ("gene_imp_corr", "idw", "property"),
    ("rate_corr_all", "griddata", "property"), ("rate_corr_all", "idw", "property"),
    # exact-zero IoU against averages of many neighbours
    ("zero_iou", "idw", "property"), ("zero_iou", "gaussian", "property"),
    # negative controls: the same metrics against baselines without that structure, and other metrics, stay paper
    ("gene_imp_corr", "gaussian", "paper"), ("rate_corr_all", "gaussian", "paper"),
    ("gene_imp_corr", "pca_inr", "paper"), ("zero_iou", "griddata", "paper"), ("zero_iou", "pca_inr", "paper"),
    ("zero_iou", "suica_mse", "paper"), ("masked_pearson", "idw", "paper"), ("rate_corr", "gaussian", "paper"),
    ("mae", "griddata", "paper"),
])
def test_construction_kind(metric, baseline, kind):
    k, note = construction_kind(metric, baseline)
    assert k == kind
    assert (note.startswith("property:") and LABELS[baseline] in note) if kind == "property" else note == ""


def test_exact_interpolators_return_the_measured_values_at_the_training_spots(tissue):
    """Why gene imputation and denoising against griddata / IDW cannot fail: at a training spot they return its own
    (masked, noisy) counts. Gaussian smoothing, which stays a paper baseline, does not (control)."""
    tr, _ = split_idx(tissue)
    x, xy = np.asarray(tissue.X, dtype=np.float64), tissue.obsm["spatial"]
    for method in ("linear", "idw"):
        p = np.asarray(Interpolator(method=method, k=8, power=1.0).fit(tissue, train_idx=tr).predict(xy[tr]).X)
        np.testing.assert_allclose(p, x[tr], rtol=1e-5, atol=1e-5, err_msg=method)
    g = np.asarray(Interpolator(method="gaussian", k=64, bandwidth=1.0).fit(tissue, train_idx=tr).predict(xy[tr]).X)
    assert np.abs(g - x[tr]).max() > 0.1


def test_averaging_interpolators_are_zero_only_where_every_neighbour_is(tissue):
    """Why exact-zero IoU against IDW / Gaussian smoothing measures the output nonlinearity: an average with positive
    weights is 0 only where all k neighbours are 0, so these baselines output fewer exact zeros than the data, the
    fewer the more neighbours they average (IDW k = 8 here vs Gaussian smoothing k = 64)."""
    tr, te = split_idx(tissue)
    x, xy = np.asarray(tissue.X, dtype=np.float64), tissue.obsm["spatial"]
    frac = []
    for m in (Interpolator(method="idw", k=8, power=1.0), Interpolator(method="gaussian", k=64, bandwidth=1.0)):
        m.fit(tissue, train_idx=tr)
        w = m.weights(m.frame.transform(xy[te], allow_extrapolation=True))
        all_zero = ((w > 0).astype(np.float64) @ (x[tr] > 0).astype(np.float64)) == 0  # every neighbour is 0
        p = np.asarray(m.predict(xy[te], allow_extrapolation=True).X)
        np.testing.assert_array_equal(p == 0, all_zero)
        frac.append((p == 0).mean())
    assert frac[1] < frac[0] < 0.75 * (x[te] == 0).mean(), frac


def _sel(name, params):
    return Selection(name=name, params=params, score=0.5, grid_size=3)


def test_reproduce_sections_label_the_rows(monkeypatch, tmp_path):
    """The 3-D and generalisation sections on canned scores (no fitting): every comparison row is a paper claim
    (zero-map rows use the mean IoU with thresholds tuned on validation, so an interpolator can output zeros) and
    depends on the gates of both its methods; each method of the table has a gate."""
    import suica.reproduce as r
    from suica.config import BUDGETS

    cfg = BUDGETS.smoke
    rng = np.random.default_rng(0)
    methods = [*r.GEN_METHODS, *r.GEN_EXTRA]

    def fake(_fn, items):
        outs = []
        for _ in items:
            ev = {m: {k: float(rng.uniform(0.2, 0.8)) for k in r.GEN_TABLE_METRICS} for m in methods}
            outs.append({"ev": ev, "fit_s": {m: 0.1 for m in ev}, "tune_s": 0.1, "sigma": 1.0,
                         "taus": {m: 0.0 for m in methods}, "curves": {},
                         "sel": {"idw": _sel("idw", {"k": 16}), "gaussian": _sel("gaussian", {"bandwidth": 2.0}),
                                 r.TUNED: _sel(r.TUNED, {"embedding": "pca"})}})
        return outs

    # pmap is looked up in the experiments' own modules (suica.reproduce is a package: one module per experiment)
    monkeypatch.setattr(r.sections_3d, "pmap", fake)
    monkeypatch.setattr(r.unseen_settings, "pmap", fake)
    seeds = [0, 1, 2]
    claims = r.three_d(cfg, seeds, tmp_path).claims + r.generalisation(cfg, seeds, tmp_path).claims
    scopes = 1 + len(cfg.settings)
    gates = [c for c in claims if c.kind == "gate"]
    rows = [c for c in claims if c.kind != "gate"]
    assert len(gates) == 5 * scopes and len(rows) == 3 * 2 * scopes
    names = {g.claim for g in gates}
    for c in rows:
        assert c.kind == "paper", c.claim
        assert len(c.gates) == 2 and set(c.gates) <= names
        assert c.ours_values is not None and len(c.ours_values) == 3
    assert sum("zero-map mean IoU" in c.claim for c in rows) == 2 * scopes
