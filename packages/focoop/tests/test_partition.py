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


def test_validation_split_is_disjoint_from_shots_and_from_the_test_pool():
    from focoop.partition import dirichlet_split

    ytr, yte = _labels(10, 60), _labels(10, 30)
    sp = dirichlet_split(ytr, yte, n_clients=5, n_classes=10, alpha=0.3, num_shot=4, seed=2)
    shots, tests, p = dirichlet_few_shot(ytr, yte, n_clients=5, n_classes=10, alpha=0.3, num_shot=4, seed=2)
    assert all((a == b).all() for a, b in zip(sp.shots, shots)) and all((a == b).all() for a, b in zip(sp.test, tests))
    share = split_by_proportions(ytr, p, seed=3).indices  # the clients' shares of the training pool
    assert sum(v.size for v in sp.val) > 0
    for j, (s, v) in enumerate(zip(sp.shots, sp.val)):
        assert np.intersect1d(s, v).size == 0  # never validate on a training shot
        assert np.setdiff1d(v, share[j]).size == 0  # the client's own label distribution, training pool only
        assert np.union1d(v, s).size == np.union1d(share[j], s).size  # everything else of its share
    allval = np.concatenate(sp.val)
    assert np.unique(allval).size == allval.size  # clients' validation sets are disjoint too


def test_setup_validation_features_come_from_the_training_pool(syn_setup):
    import torch

    for c in syn_setup.clients:
        assert c.val_y.numel() > 0 and c.val_x.shape[1] == c.train_x.shape[1]
        # a validation feature is never a training-shot feature or a test feature (different images)
        assert torch.cdist(c.val_x, c.train_x).min() > 1e-6
        assert torch.cdist(c.val_x, c.test_x).min() > 1e-6
