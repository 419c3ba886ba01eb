import numpy as np
import pytest
from suica.data import preprocess, read_h5ad, validate_adata, write_h5ad
from suica.errors import ExtrapolationError, SUICAInputError
from suica.estimator import SUICA
from suica.synthetic import add_noise, holdout_spots, make_tissue, mask_genes

from .conftest import TINY, split_idx


@pytest.mark.parametrize("layout,dim", [("hex", 2), ("random", 2), ("hex", 3), ("random", 3)])
def test_make_tissue(layout, dim):
    a = make_tissue(n_spots=300, n_genes=40, layout=layout, dim=dim, zero_frac=0.88, seed=0)
    assert a.obsm["spatial"].shape[1] == dim and "rate" in a.layers and (a.layers["rate"] > 0).all()
    assert abs(float((a.X == 0).mean()) - 0.88) < 0.02
    assert a.obs["domain"].nunique() == 5
    # reproducible
    np.testing.assert_array_equal(make_tissue(n_spots=300, n_genes=40, layout=layout, dim=dim, seed=0).X, a.X)


def test_degradations():
    a = make_tissue(n_spots=200, n_genes=30, seed=0)
    tr, te = holdout_spots(a.n_obs, frac=0.2, seed=5)
    assert len(np.intersect1d(tr, te)) == 0 and len(tr) + len(te) == a.n_obs
    np.testing.assert_array_equal(holdout_spots(a.n_obs, frac=0.2, seed=5)[1], te)
    m = mask_genes(a, gene_frac=0.3, spot_frac=0.5, seed=0)
    mask = m.layers["gene_mask"] > 0
    assert (m.X[mask] == 0).all() and np.array_equal(m.X[~mask], a.X[~mask])
    n = add_noise(a, scale=0.5, seed=0)
    assert (n.X >= a.X).all() and np.array_equal(n.X == 0, a.X == 0)


def test_anndata_roundtrip_keeps_names_and_layers(tmp_path):
    a = make_tissue(n_spots=100, n_genes=20, seed=0)
    p = write_h5ad(a, tmp_path / "t.h5ad")
    b = read_h5ad(p)
    assert list(b.obs_names) == list(a.obs_names) and list(b.var_names) == list(a.var_names)
    assert set(b.layers) == set(a.layers)
    np.testing.assert_array_equal(b.layers["rate"], a.layers["rate"])
    np.testing.assert_array_equal(b.obsm["spatial"], a.obsm["spatial"])
    pre = preprocess(b, min_counts_spot=5, max_count=None)
    assert set(pre.var_names) <= set(a.var_names) and "counts" in pre.layers and "rate" in pre.layers
    np.testing.assert_allclose(np.asarray(pre.X).sum(1), 200, rtol=1e-4)


def _good():
    a = make_tissue(n_spots=60, n_genes=20, zero_frac=0.5, seed=0)
    return preprocess(a, min_counts_spot=1, min_counts_gene=1, max_count=None)


@pytest.mark.parametrize(
    "mutate,match",
    [
        (lambda a: a.obsm.pop("spatial"), "obsm\\[\"spatial\"\\] is missing"),
        (lambda a: a.obsm.__setitem__("spatial", np.zeros((a.n_obs, 4))), "2D or 3D"),
        (lambda a: a.obsm["spatial"].__setitem__((0, 0), np.nan), "NaN or inf"),
        (lambda a: a.X.__setitem__((0, 0), np.inf), "NaN or inf"),
        (lambda a: a.X.__setitem__((0, 0), -1.0), "negative"),
        (lambda a: a.X.__setitem__((slice(None), 0), 0.0), "all-zero genes"),
    ],
)
def test_bad_input(mutate, match):
    a = _good()
    a.X = np.asarray(a.X).copy()
    mutate(a)
    with pytest.raises(SUICAInputError, match=match):
        SUICA(**TINY).fit(a)


def test_bad_input_more():
    a = _good()
    x = np.asarray(a.X).copy()
    x[3] = 0
    a.X = x
    with pytest.raises(SUICAInputError, match="all-zero spots"):
        validate_adata(a)
    b = _good()
    with pytest.raises(SUICAInputError, match="k\\+1"):
        SUICA(**TINY).fit(b, train_idx=np.arange(5))
    with pytest.raises(SUICAInputError, match="latent_dim"):
        SUICA(**{**TINY, "latent_dim": b.n_vars}).fit(b)
    with pytest.raises(SUICAInputError, match="graph_norm"):
        SUICA(graph_norm="bogus")


def test_query_outside_frame_needs_flag(tissue):
    tr, _ = split_idx(tissue)
    m = SUICA(**TINY).fit(tissue, train_idx=tr)
    far = tissue.obsm["spatial"][:2] + 1e5
    with pytest.raises(ExtrapolationError, match="allow_extrapolation"):
        m.predict(far)
    out = m.predict(far, allow_extrapolation=True)
    assert out.obs["extrapolated"].all()
