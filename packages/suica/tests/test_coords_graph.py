import numpy as np
import pytest
import scipy.sparse as sp
from suica.coords import CoordFrame, normalize_coords
from suica.errors import ExtrapolationError, SUICAInputError
from suica.graph import knn_adjacency, normalize_adjacency, subgraph


@pytest.mark.parametrize("dim", [2, 3])
def test_normalisation_identities(dim):
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, size=(200, dim)) * np.array([3.0, 1.0, 0.5][:dim]) + 7.0
    u = normalize_coords(x)
    assert np.abs(u).max() <= 1.0 + 1e-12
    span = u.max(0) - u.min(0)
    # longest axis spans exactly [-1, 1]
    assert np.isclose(u[:, 0].min(), -1) and np.isclose(u[:, 0].max(), 1)
    # aspect ratio preserved
    raw_span = x.max(0) - x.min(0)
    np.testing.assert_allclose(span / span[0], raw_span / raw_span[0], rtol=1e-12)
    # invariance to translation and uniform scaling
    np.testing.assert_allclose(normalize_coords(5.5 * x - 123.0), u, atol=1e-12)
    # round trip
    f = CoordFrame.fit(x)
    np.testing.assert_allclose(f.inverse(f.transform(x)), x, atol=1e-10)


def test_no_keep_ratio_is_per_axis_and_frame_checks():
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, size=(100, 2)) * np.array([4.0, 1.0])
    u = normalize_coords(x, keep_ratio=False)
    np.testing.assert_allclose(u.min(0), -1)
    np.testing.assert_allclose(u.max(0), 1)
    f = CoordFrame.fit(x)
    g = f.grid(10)
    assert g.shape == (100, 2) and not f.outside(g).any()
    assert f.outside(f.grid(10, full_square=True)).any()  # [-1, 1]^2 extends past the short axis
    with pytest.raises(ExtrapolationError, match="outside the training frame"):
        f.transform(np.array([[100.0, 100.0]]), allow_extrapolation=False)


@pytest.mark.parametrize("bad", [np.zeros((5, 1)), np.zeros((5, 4)), np.array([[0.0, np.nan]] * 5), np.zeros(5)])
def test_bad_coords(bad):
    with pytest.raises(SUICAInputError):
        CoordFrame.fit(bad)


def test_knn_graph_structure():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(50, 2))
    a = knn_adjacency(x, k=5)
    assert a.shape == (50, 50)
    np.testing.assert_array_equal(np.asarray(a.sum(1)).ravel(), 5)  # k ones per row, self included
    np.testing.assert_array_equal(a.diagonal(), 1)
    # neighbours are the true nearest ones (brute force)
    d = np.linalg.norm(x[:, None] - x[None], axis=-1)
    for i in range(50):
        assert set(a[i].indices) == set(np.argsort(d[i])[:5])
    sym = normalize_adjacency(a, norm="sym").toarray()
    np.testing.assert_allclose(sym, sym.T, atol=1e-12)
    s = np.maximum(a.toarray(), a.toarray().T)
    dinv = 1 / np.sqrt(s.sum(1))
    np.testing.assert_allclose(sym, dinv[:, None] * s * dinv[None], atol=1e-12)
    np.testing.assert_allclose(normalize_adjacency(a, norm="row").toarray().sum(1), 1.0)
    np.testing.assert_array_equal(normalize_adjacency(a, norm="raw").toarray(), a.toarray())
    with pytest.raises(SUICAInputError, match="k\\+1"):
        knn_adjacency(x[:5], k=5)


def test_subgraph_positions():
    rng = np.random.default_rng(3)
    a = knn_adjacency(rng.normal(size=(40, 2)), k=4)
    batch = np.array([3, 17, 30])
    sub, nodes, local = subgraph(a, batch)
    np.testing.assert_array_equal(nodes[local], batch)
    dense = a.toarray()
    np.testing.assert_array_equal(sub.toarray(), dense[np.ix_(nodes, nodes)])
    # every neighbour of a batch spot is inside the subgraph, so the batch rows keep all k neighbours
    np.testing.assert_array_equal(np.asarray(sub[local].sum(1)).ravel(), 4)
    assert sp.issparse(sub)


def test_knn_graph_sparse_input_equals_dense():
    """Expression-space graphs search sparse log1p rows; the graph equals the dense search's (negative control:
    a different k changes it)."""
    x = sp.random(60, 30, density=0.2, random_state=5, format="csr") * 10
    a_sparse = knn_adjacency(x.log1p(), k=6)
    a_dense = knn_adjacency(np.log1p(x.toarray()), k=6)
    assert sp.issparse(a_sparse)
    np.testing.assert_array_equal(a_sparse.toarray(), a_dense.toarray())
    assert (knn_adjacency(x.log1p(), k=5) != a_dense).nnz > 0
