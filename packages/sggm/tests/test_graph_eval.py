"""The GDSS / GraphRNN evaluation suite: orbit counts vs a brute-force count, the MMD kernels vs direct
computations, the standard sets, the ER control and the graph readers."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from sggm.datasets import (as_graphs, community_small, ego_small, erdos_renyi_like, grid_small, read_graphs,
                           to_tensors)
from sggm.errors import SggmError
from sggm.graph_eval import emd_1d, graph_mmds, mmd, gaussian_emd, orbit_counts, to_networkx

# graphlet templates with each node's orbit (Pržulj 2007 / ORCA numbering)
TEMPLATES = [
    (nx.path_graph(3), [1, 2, 1]),
    (nx.complete_graph(3), [3, 3, 3]),
    (nx.path_graph(4), [4, 5, 5, 4]),
    (nx.star_graph(3), [7, 6, 6, 6]),
    (nx.cycle_graph(4), [8, 8, 8, 8]),
    (nx.Graph([(0, 1), (1, 2), (0, 2), (0, 3)]), [11, 10, 10, 9]),
    (nx.Graph([(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)]), [12, 13, 13, 12]),
    (nx.complete_graph(4), [14, 14, 14, 14]),
]


def brute_orbits(g: nx.Graph) -> np.ndarray:
    """Every 3- and 4-node subset, matched to the templates by isomorphism (independent of the degree rule)."""
    n = g.number_of_nodes()
    out = np.zeros((n, 15), dtype=np.int64)
    out[:, 0] = [g.degree(v) for v in range(n)]
    for k in (3, 4):
        for s in itertools.combinations(range(n), k):
            h = g.subgraph(s)
            if not nx.is_connected(h):
                continue
            for t, orb in TEMPLATES:
                gm = nx.isomorphism.GraphMatcher(h, t)
                if gm.is_isomorphic():
                    for u, tu in gm.mapping.items():
                        out[u, orb[tu]] += 1
                    break
            else:  # pragma: no cover
                raise AssertionError("a connected subgraph matched no template")
    return out


@pytest.mark.parametrize("seed", range(6))
def test_orbit_counts_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    g = nx.gnp_random_graph(int(rng.integers(6, 11)), float(rng.uniform(0.2, 0.8)), seed=seed)
    np.testing.assert_array_equal(orbit_counts(g), brute_orbits(g))


def test_orbit_counts_closed_forms():
    # K_n: every node is in C(n-1, 2) triangles and C(n-1, 3) K4s; C_n (n >= 5): 2 path-ends, 1 middle, ...
    k = orbit_counts(nx.complete_graph(6))
    assert (k[:, 3] == 10).all() and (k[:, 14] == 10).all() and k[:, [1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]].sum() == 0
    c = orbit_counts(nx.cycle_graph(7))
    assert (c[:, 1] == 2).all() and (c[:, 2] == 1).all() and (c[:, 4] == 2).all() and (c[:, 5] == 2).all()
    # negative control: the degree rule with paw orbits 9 and 11 swapped would disagree with the template match
    paw = nx.Graph([(0, 1), (1, 2), (0, 2), (0, 3)])
    assert orbit_counts(paw)[3, 9] == 1 and orbit_counts(paw)[0, 11] == 1


def test_orbit_triangles_match_networkx():
    g = nx.gnp_random_graph(30, 0.2, seed=3)
    tri = nx.triangles(g)
    np.testing.assert_array_equal(orbit_counts(g)[:, 3], [tri[v] for v in range(30)])


def test_emd_and_mmd_against_direct_computation():
    from scipy.stats import wasserstein_distance

    rng = np.random.default_rng(0)
    x, y = rng.random(7), rng.random(5)
    x, y = x / x.sum(), y / y.sum()
    ref = wasserstein_distance(np.arange(7), np.arange(5), x, y)
    assert emd_1d(x, y) == pytest.approx(ref, rel=1e-10)
    assert emd_1d(x, y, distance_scaling=10) == pytest.approx(ref / 10, rel=1e-10)
    # MMD of a set with itself is 0; with a different set > 0; V-statistic by a double loop
    a = [rng.random(6) for _ in range(4)]
    b = [rng.random(6) + np.arange(6) for _ in range(3)]
    assert mmd(a, a, gaussian_emd) == pytest.approx(0.0, abs=1e-12)
    an = [s / s.sum() for s in a]
    bn = [s / s.sum() for s in b]
    k = lambda p, q: np.mean([gaussian_emd(u, v) for u in p for v in q])  # noqa: E731
    assert mmd(a, b, gaussian_emd) == pytest.approx(k(an, an) + k(bn, bn) - 2 * k(an, bn), rel=1e-12)
    assert mmd(a, b, gaussian_emd) > 0


def test_graph_mmds_separate_families():
    grids, comms = grid_small(20, seed=0), community_small(20, seed=0)
    same = graph_mmds(grids, grid_small(20, seed=1))
    diff = graph_mmds(grids, comms)
    for m in ("degree", "cluster", "orbit"):
        assert diff[m] > same[m] + 1e-3, m
    # degree MMD uses networkx's degree histogram
    g = grids[0]
    assert len(to_networkx(nx.to_numpy_array(g)).nodes) == g.number_of_nodes()
    with pytest.raises(SggmError, match="methods"):
        graph_mmds(grids, grids, methods=("nspdk",))


def test_standard_sets_and_er_control():
    c = community_small(30, seed=0)
    assert all(12 <= g.number_of_nodes() <= 20 and nx.is_connected(g) for g in c)
    assert all(9 <= g.number_of_nodes() <= 16 for g in grid_small(10, seed=0))
    e = ego_small(30, seed=0)
    assert all(4 <= g.number_of_nodes() <= 18 for g in e)
    er = erdos_renyi_like(c, 400, seed=0)
    dens = lambda gs: sum(g.number_of_edges() for g in gs) / sum(g.number_of_nodes() * (g.number_of_nodes() - 1) / 2 for g in gs)  # noqa: E731
    assert dens(er) == pytest.approx(dens(c), rel=0.05)
    X, A = to_tensors(c, n_max=20, max_degree=10)
    assert X.shape == (30, 20, 11) and A.shape == (30, 20, 20) and (A == np.swapaxes(A, 1, 2)).all()
    assert (X.sum(-1)[:, :12] == 1).all()


def test_read_graphs_every_format(tmp_path):
    import torch
    from torch_geometric.data import Data
    from torch_geometric.utils import from_networkx

    gs = [nx.cycle_graph(5), nx.path_graph(4)]
    (tmp_path / "edges.txt").write_text("# u v graph\n0 1 a\n1 2 a\n2 0 a\n5 6 b\n")
    got = read_graphs(tmp_path / "edges.txt")
    assert sorted(g.number_of_edges() for g in got) == [1, 3]
    d = tmp_path / "adj"
    d.mkdir()
    np.save(d / "g0.npy", nx.to_numpy_array(gs[0]))
    np.savez(d / "more.npz", a=nx.to_numpy_array(gs[1]))
    got = read_graphs(d)
    assert [g.number_of_edges() for g in got] == [5, 3]
    torch.save([from_networkx(g) for g in gs], tmp_path / "data.pt")
    got = read_graphs(tmp_path / "data.pt")
    assert [g.number_of_edges() for g in got] == [5, 3]
    assert as_graphs([Data(edge_index=torch.tensor([[0, 1], [1, 0]]), num_nodes=3)])[0].number_of_nodes() == 3
    with pytest.raises(SggmError, match="does not exist"):
        read_graphs(tmp_path / "nope")
    (tmp_path / "bad.txt").write_text("0 1 2 3\n")
    with pytest.raises(SggmError, match="edge-list line"):
        read_graphs(tmp_path / "bad.txt")
    with pytest.raises(SggmError, match="symmetric"):
        as_graphs([np.triu(np.ones((3, 3)), 1)])


@pytest.mark.parametrize("kernel", ["gaussian_emd", "gaussian", "gaussian_tv"])
def test_vectorised_mmd_equals_the_loop(kernel):
    import sggm.graph_eval as ge

    rng = np.random.default_rng(1)
    a = [rng.random(int(rng.integers(3, 8))) for _ in range(5)]
    b = [rng.random(int(rng.integers(3, 8))) for _ in range(4)]
    k = getattr(ge, kernel)
    loop = lambda x, y, **kw: k(x, y, **kw)  # noqa: E731  (not in the fast table: the generic loop)
    for is_hist in (True, False):
        assert mmd(a, b, k, is_hist=is_hist, sigma=0.7) == pytest.approx(mmd(a, b, loop, is_hist=is_hist, sigma=0.7),
                                                                         rel=1e-10)
