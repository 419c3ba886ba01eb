import numpy as np
import pytest
from focoop.errors import FOCoOpConfigError
from focoop.partition import dirichlet_few_shot, dirichlet_proportions, few_shot, split_by_proportions


def _labels(c=10, per=100):
    return np.repeat(np.arange(c), per)


def test_split_disjoint_counts_and_seeded():
    y = _labels()
    p = dirichlet_proportions(7, 10, alpha=0.5, seed=3)
    part = split_by_proportions(y, p, seed=0)
    allidx = np.concatenate(part.indices)
    assert allidx.size == np.unique(allidx).size
    for j, idx in enumerate(part.indices):
        counts = np.bincount(y[idx], minlength=10)
        np.testing.assert_array_equal(counts, np.floor(p[j] * 100).astype(int))
    again = split_by_proportions(y, dirichlet_proportions(7, 10, alpha=0.5, seed=3), seed=0)
    assert all((a == b).all() for a, b in zip(part.indices, again.indices))
    other = dirichlet_proportions(7, 10, alpha=0.5, seed=4)
    assert not np.allclose(p, other)


def test_alpha_extremes():
    y = _labels()
    uni = dirichlet_proportions(5, 10, alpha=1e4, seed=0)
    np.testing.assert_allclose(uni, 0.2, atol=0.02)
    def mean_max_share(alpha):
        shares = []
        for seed in range(10):
            part = split_by_proportions(y, dirichlet_proportions(10, 10, alpha=alpha, seed=seed), seed=seed)
            shares += [np.bincount(y[i], minlength=10).max() / i.size for i in part.indices if i.size]
        return np.mean(shares)

    assert mean_max_share(0.01) > 0.7  # nearly one class per client
    assert mean_max_share(1e4) < 0.15  # near-uniform (1/C = 0.1)


def test_few_shot_exact_and_without_replacement():
    y = _labels(4, 8)
    idx = np.arange(y.size)
    s = few_shot(idx, y, num_shot=8, seed=0)
    counts = np.bincount(y[s], minlength=4)
    assert (counts == 8).all() and np.unique(s).size == s.size  # exactly num_shot, all distinct
    off = few_shot(idx, y, num_shot=8, seed=0, official_shots=True)
    assert np.unique(off).size < off.size  # official: with replacement when exactly num_shot exist
    shots, tests, p = dirichlet_few_shot(_labels(), _labels(), n_clients=4, n_classes=10, alpha=0.3, num_shot=2,
                                         seed=1)
    for s in shots:
        assert (np.bincount(_labels()[s])[np.bincount(_labels()[s]) > 0] == 2).all()


def test_bad_inputs():
    with pytest.raises(FOCoOpConfigError, match="alpha"):
        dirichlet_proportions(3, 4, alpha=0.0, seed=0)
    with pytest.raises(FOCoOpConfigError, match="n_clients"):
        split_by_proportions(np.zeros(3, dtype=int), dirichlet_proportions(5, 1, alpha=1.0, seed=0), seed=0)
    with pytest.raises(FOCoOpConfigError, match="num_shot"):
        few_shot(np.arange(3), np.zeros(3, dtype=int), num_shot=0, seed=0)
