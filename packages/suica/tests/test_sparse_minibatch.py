"""Sparse input, mini-batches over neighbourhood subgraphs, accumulated gradients, σ from the data, tl.fit."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from suica.estimator import SUICA, accumulate, batches, spot_spacing
from suica.losses import fit_loss

from .conftest import TINY, split_idx


def _fitted(tissue, **kw):
    tr, _ = split_idx(tissue)
    return SUICA(**{**TINY, **kw}, seed=0).fit(tissue, train_idx=tr), tr


def test_subgraph_minibatch_encoding_equals_full_graph(tissue):
    m, tr = _fitted(tissue)
    from suica.data import as_csr

    x = as_csr(np.asarray(tissue.X)[tr])
    u = m.frame.transform(tissue.obsm["spatial"][tr])
    adj = m._adjacency(x, u)
    full = m.encode_spots(x, adj, "cpu")  # batch_size >= n: one batch
    object.__setattr__(m.config, "batch_size", 7)
    mini = m.encode_spots(x, adj, "cpu")  # 7 spots + their k-NN neighbourhoods per batch
    torch.testing.assert_close(mini, full, rtol=1e-5, atol=1e-5)
    # negative control: dropping the neighbours (batch-only subgraph) changes the rows
    from suica.estimator import csr_to_torch

    b = np.arange(7)
    a_b = csr_to_torch(adj[b][:, b], "cpu")
    z_b = m.model["gae"].encode(csr_to_torch(x[b], "cpu", log1p=True), a_b, logged=True)
    assert not torch.allclose(z_b, full[:7], atol=1e-4)


def test_accumulated_gradient_equals_full_batch():
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 4)
    u, z = torch.randn(23, 3), torch.randn(23, 4)
    fit_loss(net(u), z).backward()
    full = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    accumulate(lambda b: fit_loss(net(u[b]), z[b]), 23, batches(23, 5))
    for p, g in zip(net.parameters(), full, strict=True):
        torch.testing.assert_close(p.grad, g)
    # negative control: an unweighted sum of the batch means is not the full-batch gradient
    net.zero_grad()
    for b in batches(23, 5):
        fit_loss(net(u[b]), z[b]).backward()
    assert not torch.allclose(net.weight.grad, full[0])


def test_sparse_and_dense_input_give_identical_models(tissue):
    m_dense, tr = _fitted(tissue)
    sparse = tissue.copy()
    sparse.X = sp.csr_matrix(np.asarray(tissue.X))
    m_sparse = SUICA(**TINY, seed=0).fit(sparse, train_idx=tr)
    for k, v in m_dense.model.state_dict().items():
        torch.testing.assert_close(v, m_sparse.model.state_dict()[k], rtol=1e-5, atol=1e-6)


def test_minibatch_fit_runs_and_layer_is_honoured(tissue):
    tr, te = split_idx(tissue)
    a = tissue.copy()
    a.layers["norm"] = sp.csr_matrix(np.asarray(tissue.X))
    a.X = sp.csr_matrix(np.asarray(tissue.X) * 0 + 1.0)  # a decoy in X
    m = SUICA(**TINY, seed=0, batch_size=32).fit(a, train_idx=tr, layer="norm")
    ref = SUICA(**TINY, seed=0, batch_size=32).fit(tissue, train_idx=tr)
    q = tissue.obsm["spatial"][te]
    np.testing.assert_allclose(m.predict(q, allow_extrapolation=True).X, ref.predict(q, allow_extrapolation=True).X,
                               rtol=1e-4, atol=1e-5)
    assert len(m.history["gae"]) == TINY["gae_epochs"]
    from suica.errors import SUICAInputError

    with pytest.raises(SUICAInputError, match="layer 'nope'"):
        SUICA(**TINY).fit(a, train_idx=tr, layer="nope")


def test_sigma_from_spacing_is_invariant_to_units(tissue):
    tr, _ = split_idx(tissue)
    kw = {k: v for k, v in TINY.items() if k != "ffn_scale"}
    m = SUICA(**kw, seed=0).fit(tissue, train_idx=tr)
    assert m.sigma_ == pytest.approx(0.01 / m.spacing_)
    moved = tissue.copy()
    moved.obsm["spatial"] = tissue.obsm["spatial"] * 37.0 + 1e3  # other units and origin
    m2 = SUICA(**kw, seed=0).fit(moved, train_idx=tr)
    assert m2.sigma_ == pytest.approx(m.sigma_, rel=1e-6)
    # denser spots => smaller spacing => larger σ (negative control on the direction)
    u = m.frame.transform(tissue.obsm["spatial"][tr])
    assert spot_spacing(u[::2]) > spot_spacing(u)


def test_sigma_chosen_on_internal_validation(tissue):
    tr, _ = split_idx(tissue)
    kw = {k: v for k, v in TINY.items() if k != "ffn_scale"}
    m = SUICA(**kw, ffn_scale_factors=(0.005, 0.05, 0.5), seed=0).fit(tissue, train_idx=tr)
    assert sorted(m.selection_) == pytest.approx(sorted(f / m.spacing_ for f in (0.005, 0.05, 0.5)))
    assert m.sigma_ == min(m.selection_, key=m.selection_.get)
    fixed = SUICA(**TINY, seed=0).fit(tissue, train_idx=tr)
    assert fixed.selection_ == {} and fixed.sigma_ == TINY["ffn_scale"]


def test_tl_fit_scanpy_style(tissue):
    import suica

    a = tissue.copy()
    a.X = sp.csr_matrix(np.asarray(a.X))
    out, model = suica.tl.fit(a, train_key="split", **TINY)
    assert out is a  # in place, like scanpy.tl
    assert a.layers["suica"].shape == a.shape and (a.layers["suica"] >= 0).all()
    assert a.obsm["suica_embedding"].shape == (a.n_obs, TINY["latent_dim"])
    assert a.uns["suica"]["sigma"] == pytest.approx(TINY["ffn_scale"])
    assert a.uns["suica"]["n_train"] == int((a.obs["split"] != "test").sum())
    b, _ = suica.tl.fit(tissue, copy=True, key_added="s2", **TINY)
    assert b is not tissue and "s2" not in tissue.layers and "s2" in b.layers
