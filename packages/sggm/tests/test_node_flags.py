"""GDSS's node flags: graphs of different sizes padded to n nodes, masked in the network, the loss and the sampler."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sggm.datasets import node_flags, sample_node_flags
from sggm.errors import SggmError
from sggm.metrics import to_signed
from sggm.sampler import sample
from sggm.score_net import ScoreNetwork, dsm_loss
from sggm.sde import VP


def _graph(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = np.triu((rng.random((n, n)) < 0.4).astype(float), 1)
    a = a + a.T
    x = np.eye(4)[np.minimum(a.sum(1).astype(int), 3)]
    return x, to_signed(a)


def _pad(x, a, n):
    X, A = np.zeros((n, x.shape[1])), np.full((n, n), -1.0)  # to_signed's padding: "no edge" = -1
    X[:len(x)], A[:len(x), :len(x)] = x, a
    return X, A


def _net(seed=0):
    torch.manual_seed(seed)
    sde = VP(0.1, 10.0)
    return ScoreNetwork(n_features=4, sde_x=sde, sde_a=sde, hidden=16, depth=2, adj_powers=3).double()


def test_flagged_scores_equal_the_unpadded_graphs_scores():
    net = _net()
    x, a = _graph(7, 1)
    X, A = _pad(x, a, 11)
    t = torch.tensor([0.4], dtype=torch.float64)
    f = torch.as_tensor(node_flags([7], 11))
    ref_x, ref_a = net(torch.as_tensor(x)[None], torch.as_tensor(a)[None], t)
    sx, sa = net(torch.as_tensor(X)[None], torch.as_tensor(A)[None], t, flags=f)
    # the adjacency-power channels divide by n: the unpadded graph's n is 7, the padded one's 11; scale it alike
    # by comparing with powers disabled, and check the masked part exactly
    assert torch.all(sx[0, 7:] == 0) and torch.all(sa[0, 7:] == 0) and torch.all(sa[0, :, 7:] == 0)
    net1 = _net()
    net1.adj_powers = 1
    net1.out_a[0] = torch.nn.Linear(2 * 16 + 1 + 16, 16).double()
    r_x, r_a = net1(torch.as_tensor(x)[None], torch.as_tensor(a)[None], t)
    p_x, p_a = net1(torch.as_tensor(X)[None], torch.as_tensor(A)[None], t, flags=f)
    assert torch.allclose(p_x[0, :7], r_x[0], atol=1e-12) and torch.allclose(p_a[0, :7, :7], r_a[0], atol=1e-12)
    # negative control: the same padded graph without flags (padding = isolated nodes at -1) changes the real nodes'
    q_x, q_a = net1(torch.as_tensor(X)[None], torch.as_tensor(A)[None], t)
    assert not torch.allclose(q_a[0, :7, :7], r_a[0], atol=1e-6)
    assert ref_x.shape == (1, 7, 4) and ref_a.shape == (1, 7, 7)


def test_dsm_loss_ignores_the_padding_under_flags():
    net = _net()
    x, a = _graph(6, 2)
    X, A = _pad(x, a, 9)
    f = torch.as_tensor(node_flags([6], 9))
    X2, A2 = X.copy(), A.copy()
    rng = np.random.default_rng(0)
    X2[6:] = rng.standard_normal(X2[6:].shape)
    junk = np.triu(rng.standard_normal((9, 9)), 1)
    junk = junk + junk.T
    A2[6:, :], A2[:, 6:] = junk[6:, :], junk[:, 6:]

    def loss(Xn, An, flags):
        g = torch.Generator().manual_seed(3)
        with torch.no_grad():
            return float(dsm_loss(net, torch.as_tensor(Xn)[None], torch.as_tensor(An)[None], generate="both", T=1.0,
                                  t_min=1e-3, generator=g, flags=flags))

    assert loss(X, A, f) == pytest.approx(loss(X2, A2, f), abs=1e-12)
    assert loss(X, A, None) != pytest.approx(loss(X2, A2, None), abs=1e-6)  # negative control: no flags


def test_sampler_keeps_masked_entries_at_zero_and_node_counts_come_from_training():
    net = _net().float()
    rng = np.random.default_rng(4)
    flags = sample_node_flags([5, 8], 6, 10, rng)
    assert set(flags.sum(1).astype(int)) <= {5, 8}
    z = np.triu(rng.standard_normal((6, 10, 10)), 1)
    sx, sa = net.numpy_scores(flags=flags)
    X, A = sample(sx, sa, rng.standard_normal((6, 10, 4)), z + np.swapaxes(z, 1, 2), n_steps=5, T=1.0,
                  sde_x=net.sde_x, sde_a=net.sde_a, flags=flags)
    m = flags[:, :, None] * flags[:, None, :]
    assert np.all(A[m == 0] == 0) and np.all(X[flags == 0] == 0)
    assert np.abs(A[(m == 1) & ~np.eye(10, dtype=bool)[None]]).min() > 0
    # negative control: without flags the padded entries move
    _, A0 = sample(sx, sa, rng.standard_normal((6, 10, 4)), z + np.swapaxes(z, 1, 2), n_steps=5, T=1.0,
                   sde_x=net.sde_x, sde_a=net.sde_a)
    assert np.abs(A0[(m == 0) & ~np.eye(10, dtype=bool)[None]]).min() > 0


def test_node_flags_reject_bad_counts():
    assert node_flags([2, 0], 3).tolist() == [[1, 1, 0], [0, 0, 0]]
    with pytest.raises(SggmError, match="n_max"):
        node_flags([4], 3)
    with pytest.raises(SggmError, match="at least one"):
        sample_node_flags([], 2, 3, np.random.default_rng(0))
    with pytest.raises(SggmError, match="flags"):
        sample(lambda X, A, t: X, None, np.zeros((1, 3, 1)), np.zeros((3, 3)), n_steps=2, T=1.0,
               flags=np.array([[1, 2, 0]]))
