"""The validation split used for tuning, the tuned-knob mapping and the Gaussian-smoothing baseline."""

import numpy as np
import pytest
from suica.baselines import Interpolator
from suica.errors import SUICAInputError
from suica.reproduce import GRIDS, _make, validation_split

from .conftest import split_idx


def test_validation_split_is_disjoint_from_test_and_covers_train(tissue):
    tr, te = split_idx(tissue)
    fit, val = validation_split(tr, seed=3)
    assert len(np.intersect1d(fit, val)) == 0
    assert len(np.intersect1d(val, te)) == 0 and len(np.intersect1d(fit, te)) == 0
    np.testing.assert_array_equal(np.union1d(fit, val), tr)
    assert len(val) == round(0.2 * len(tr))
    fit2, val2 = validation_split(tr, seed=3)
    np.testing.assert_array_equal(val, val2)  # reproducible
    assert not np.array_equal(val, validation_split(tr, seed=4)[1])


def test_grids_are_alike():
    from icml25.tuning import grid_size

    assert len({grid_size(v) for v in GRIDS.values()}) == 1, GRIDS


def _square(i):
    import os

    return i * i, os.getpid()


def test_pmap_keeps_order_and_uses_worker_processes():
    import os

    from suica.reproduce import pmap

    out = pmap(_square, list(range(7)))
    assert [v for v, _ in out] == [i * i for i in range(7)]  # same values, same order as the serial loop
    assert os.getpid() not in {pid for _, pid in out}  # negative control: a serial map would run in this process


def test_methods_share_the_model_settings():
    kw = dict(latent_dim=8, inr_width=32)
    m = _make("suica", kw, 0)
    assert m.config.inr_width == 32 and m.config.ffn_scale is None  # σ from the spacing, as SUICA() does
    r = _make("inr_raw", kw, 0)
    assert r.config.inr_width == 32 and r.epochs == r.config.inr_epochs + r.config.decoder_epochs
    assert _make("ae_inr", kw, 0).config.use_graph is False
    assert _make("suica_mse", kw, 0).config.decoder_loss == "mse"
    g = _make("gaussian", kw, 0, {"bandwidth": 2.0})
    assert (g.method, g.bandwidth, g.k) == ("gaussian", 2.0, 64)
    with pytest.raises(ValueError, match="unknown tuned knobs"):
        _make("suica", kw, 0, {"beta": 1.0})


def test_gaussian_smoothing(tissue):
    tr, te = split_idx(tissue)
    x = np.asarray(tissue.X)
    xy = tissue.obsm["spatial"]
    # a tiny bandwidth puts all weight on the spot itself: training spots are reproduced exactly
    sharp = Interpolator(method="gaussian", k=8, bandwidth=1e-3).fit(tissue, train_idx=tr)
    np.testing.assert_allclose(sharp.predict(xy[tr]).X, x[tr], rtol=1e-5, atol=1e-6)
    # a wide bandwidth averages: the prediction is a convex combination (within the per-gene range) and smoother
    wide = Interpolator(method="gaussian", k=8, bandwidth=2.0).fit(tissue, train_idx=tr)
    p = wide.predict(xy[te], allow_extrapolation=True).X
    assert np.all(p >= x[tr].min(0) - 1e-5) and np.all(p <= x[tr].max(0) + 1e-5)
    assert wide.predict(xy[tr]).X.var(0).mean() < x[tr].var(0).mean()
    # a constant field is preserved exactly
    const = tissue[tr].copy()
    const.X = np.full(const.shape, 3.0, dtype=np.float32)
    q = Interpolator(method="gaussian", k=5, bandwidth=1.0).fit(const).predict(xy[te], allow_extrapolation=True).X
    np.testing.assert_allclose(q, 3.0, rtol=1e-5)


@pytest.mark.parametrize("kw", [dict(k=0), dict(k=2.5), dict(power=0.0), dict(bandwidth=-1.0),
                                dict(bandwidth=float("nan")), dict(method="kriging")])
def test_interpolator_rejects_bad_knobs(kw):
    with pytest.raises(SUICAInputError):
        Interpolator(**{"method": "gaussian", **kw})
