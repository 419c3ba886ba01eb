"""Baselines, metrics and `suica evaluate` on sparse input: same numbers as the dense path, no whole-matrix densify;
SUICA's PCA embedding (the paper's PCA variant)."""

import anndata as ad
import numpy as np
import pytest
import scipy.sparse as sp
from suica.baselines import PCAINR, INRRaw, Interpolator
from suica.metrics import MetricAccumulator, evaluate

from .conftest import TINY, split_idx


def _sparse(a):
    b = a.copy()
    b.X = sp.csr_matrix(np.asarray(a.X))
    return b


@pytest.mark.parametrize("method,kw", [("linear", {}), ("nearest", {}), ("idw", {"k": 8, "power": 1.0}),
                                       ("gaussian", {"k": 16, "bandwidth": 2.0})])
def test_interpolators_sparse_equals_dense(tissue, method, kw):
    tr, te = split_idx(tissue)
    q = tissue.obsm["spatial"][te]
    dense = Interpolator(method=method, **kw).fit(tissue, train_idx=tr).predict(q, allow_extrapolation=True).X
    m = Interpolator(method=method, **kw).fit(_sparse(tissue), train_idx=tr)
    assert sp.issparse(m.y)  # the training expression stays sparse
    pred = m.predict(q, allow_extrapolation=True).X
    assert sp.issparse(pred) and pred.shape == dense.shape
    np.testing.assert_allclose(pred.toarray(), dense, rtol=1e-5, atol=1e-6)
    w = m.weights(m.frame.transform(q, allow_extrapolation=True))
    np.testing.assert_allclose(np.asarray(w.sum(1)).ravel(), 1.0)  # convex weights
    # negative control: other training spots give other numbers
    other = Interpolator(method=method, **kw).fit(_sparse(tissue), train_idx=tr[: len(tr) // 2]).predict(q, allow_extrapolation=True).X
    assert not np.allclose(other.toarray(), dense, atol=1e-3)


@pytest.mark.parametrize("dim", [2, 3])
def test_linear_weights_equal_scipy_griddata(dim):
    from scipy.interpolate import griddata

    rng = np.random.default_rng(dim)
    xy = rng.uniform(0, 1, size=(60, dim))
    y = rng.gamma(1.0, size=(60, 5)).astype(np.float32)
    a = ad.AnnData(y)
    a.obsm["spatial"] = xy
    m = Interpolator(method="linear").fit(a)
    q = rng.uniform(0, 1, size=(40, dim))  # some outside the convex hull: nearest neighbour, as before
    ours = m.predict(q, allow_extrapolation=True).X
    u, qn = m.u, m.frame.transform(q, allow_extrapolation=True)
    ref = griddata(u, y, qn, method="linear", fill_value=np.nan)
    miss = np.isnan(ref).any(1)
    ref[miss] = griddata(u, y, qn[miss], method="nearest")
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)
    assert 0 < miss.sum() < len(q)  # both branches exercised
    assert not np.allclose(ours, griddata(u, y, qn, method="nearest"), atol=1e-3)  # negative control


@pytest.mark.parametrize("cls", [INRRaw, PCAINR])
def test_inr_baselines_sparse_equals_dense(tissue, cls):
    tr, te = split_idx(tissue)
    kw = dict(inr_width=32, ffn_mapping=16, latent_dim=8, inr_epochs=10, decoder_epochs=5, seed=0)
    q = tissue.obsm["spatial"][te]
    dense = cls(**kw).fit(tissue, train_idx=tr).predict(q, allow_extrapolation=True).X
    sparse = cls(**kw).fit(_sparse(tissue), train_idx=tr).predict(q, allow_extrapolation=True).X
    np.testing.assert_allclose(sparse, dense, rtol=1e-5, atol=1e-6)
    other = cls(**{**kw, "seed": 1}).fit(_sparse(tissue), train_idx=tr).predict(q, allow_extrapolation=True).X
    assert not np.allclose(other, dense, atol=1e-4)  # negative control: another seed differs


def test_evaluate_sparse_and_chunked_equal_dense():
    rng = np.random.default_rng(0)
    truth = rng.gamma(0.5, size=(37, 23)) * (rng.uniform(size=(37, 23)) < 0.3)
    pred = np.maximum(truth + rng.normal(0, 0.3, size=truth.shape), 0)
    pred[3] = 0.0  # a degenerate row
    ref = evaluate(pred, truth, chunk=10_000)
    for p, t, chunk in [(sp.csr_matrix(pred), sp.csr_matrix(truth), 5), (pred, sp.csr_matrix(truth), 1),
                        (pred, truth, 7)]:
        got = evaluate(p, t, chunk=chunk)
        assert got.keys() == ref.keys()
        for k in ref:
            assert got[k] == pytest.approx(ref[k], rel=1e-10, abs=1e-12), k
    # the accumulator fed in uneven pieces gives the same numbers
    acc = MetricAccumulator()
    for s, e in [(0, 4), (4, 30), (30, 37)]:
        acc.update(pred[s:e], truth[s:e])
    assert acc.result()["masked_pearson"] == pytest.approx(ref["masked_pearson"], rel=1e-12)
    # closed forms on one chunk (identity) and a negative control
    same = evaluate(sp.csr_matrix(truth), truth, chunk=4)
    assert same["mae"] == 0 and same["zero_iou"] == 1 and same["support_recovery"] == 1
    assert evaluate(pred[::-1], truth, chunk=4)["masked_pearson"] < ref["masked_pearson"] - 0.1


def test_suica_pca_embedding(tissue):
    from suica.estimator import SUICA
    from suica.networks import LinearDecoder

    tr, te = split_idx(tissue)
    kw = {**TINY, "embedding": "pca"}
    m = SUICA(**kw, seed=0).fit(tissue, train_idx=tr)
    assert isinstance(m.model["gae"], LinearDecoder) and not m.history["gae"]
    q = tissue.obsm["spatial"][te]
    p = m.predict(q, allow_extrapolation=True).X
    assert p.shape == (len(te), tissue.n_vars) and (p >= 0).all()
    ps = SUICA(**kw, seed=0).fit(_sparse(tissue), train_idx=tr).predict(q, allow_extrapolation=True).X
    np.testing.assert_allclose(ps, p, rtol=1e-4, atol=1e-5)
    # before phase 2 the decoder is the PCA inverse transform (ReLU of it): decoding the training spots' scores
    from sklearn.decomposition import PCA

    x = np.asarray(tissue.X)[tr]
    pca = PCA(n_components=TINY["latent_dim"], svd_solver="arpack", random_state=0).fit(x)
    dec = LinearDecoder(n_genes=x.shape[1], latent_dim=TINY["latent_dim"])
    dec.init_pca(pca.components_, pca.mean_)
    import torch

    z = torch.as_tensor(pca.transform(x), dtype=torch.float32)
    np.testing.assert_allclose(dec.decode(z).detach().numpy(), np.maximum(pca.inverse_transform(pca.transform(x)), 0),
                               rtol=1e-4, atol=1e-4)
    assert not np.allclose(m.model["gae"].decode(z).detach().numpy(), dec.decode(z).detach().numpy(), atol=1e-5)
    with pytest.raises(ValueError, match="embedding"):
        SUICA(embedding="umap")


def test_preprocess_sparse_equals_dense():
    from suica.data import preprocess
    from suica.synthetic import make_tissue

    a = make_tissue(n_spots=150, n_genes=40, n_domains=3, seed=5)
    a.X = np.asarray(a.X, dtype=np.float32)
    a.layers.clear()
    b = a.copy()
    b.X = sp.csr_matrix(a.X)
    kw = dict(min_counts_spot=5, min_counts_gene=3, max_count=30, fit_on=np.arange(100))
    pd_, ps = preprocess(a, **kw), preprocess(b, **kw)
    assert sp.issparse(ps.X) and sp.issparse(ps.layers["counts"]) and not sp.issparse(pd_.X)
    assert list(ps.var_names) == list(pd_.var_names) and list(ps.obs_names) == list(pd_.obs_names)
    np.testing.assert_allclose(ps.X.toarray(), pd_.X, rtol=1e-6)
    np.testing.assert_array_equal(ps.layers["counts"].toarray(), pd_.layers["counts"])
    assert pd_.n_vars < a.n_vars  # the max_count filter acted (negative control: without it more genes are kept)
    assert preprocess(b, **{**kw, "max_count": None}).n_vars > ps.n_vars
