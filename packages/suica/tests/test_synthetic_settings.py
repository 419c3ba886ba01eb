import numpy as np
import pytest
import scipy.sparse as sp
from suica.config import BUDGETS, GENERALISATION_SETTINGS
from suica.errors import SUICAInputError
from suica.synthetic import make_sparse_tissue, make_tissue


@pytest.mark.parametrize("shape", ["voronoi", "bands", "stripes"])
def test_domain_shapes(shape):
    a = make_tissue(n_spots=200, n_genes=30, n_domains=4, domain_shape=shape, seed=2)
    assert a.obs["domain"].nunique() >= 3 and a.uns["synthetic"]["domain_shape"] == shape


def test_bands_are_rings():
    a = make_tissue(n_spots=400, n_genes=20, n_domains=4, domain_shape="bands", layout="random", seed=0)
    xy = a.obsm["spatial"]
    d = np.asarray(a.obs["domain"].cat.codes)
    # the domain index grows with the distance to one centre: means of the radius are ordered by domain
    c = xy[d == d.min()].mean(0)
    r = np.linalg.norm(xy - c, axis=1)
    means = [r[d == k].mean() for k in sorted(set(d))]
    assert means == sorted(means)
    with pytest.raises(SUICAInputError, match="domain_shape"):
        make_tissue(n_spots=50, n_genes=5, domain_shape="spiral")


def test_generalisation_settings_differ_from_the_tests():
    # tests use 3 Voronoi domains on a hex layout with 88% zeros (conftest); reproduce must use other settings
    for name, s in GENERALISATION_SETTINGS.items():
        assert (s["domain_shape"], s["layout"], s["zero_frac"], s["n_domains"]) != ("voronoi", "hex", 0.88, 3), name
    assert len(GENERALISATION_SETTINGS) >= 3
    assert BUDGETS.full.seeds >= 5 and BUDGETS.full.model == ()  # the full run measures the package defaults


def test_sparse_tissue_is_csr_with_exact_nnz():
    a = make_sparse_tissue(n_spots=300, n_genes=500, density=0.02, seed=1)
    nnz_row = np.diff(a.X.indptr)
    assert sp.isspmatrix_csr(a.X) and a.X.has_canonical_format
    assert (a.X.data >= 1).all() and nnz_row.max() <= 10 and nnz_row.min() >= 1 and nnz_row.mean() > 8
    assert a.obsm["spatial"].shape == (300, 2)
