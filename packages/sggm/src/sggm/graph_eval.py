"""The GraphRNN / GDSS graph-generation evaluation suite: degree, clustering, orbit and spectrum MMD.

Each graph becomes a descriptor (You et al. 2018, GraphRNN; Jo et al. 2022, GDSS, ``evaluation/stats.py``):

* degree: ``networkx.degree_histogram`` (counts per degree 0 … d_max), normalised to a pmf;
* clustering: a 100-bin histogram of the local clustering coefficients on ``[0, 1]``, normalised;
* orbit: the node counts of the 15 orbits of the 2-, 3- and 4-node graphlets (ORCA's numbering, Hočevar & Demšar
  2014), summed over nodes and divided by n: a vector ``[15]``, not a histogram;
* spectrum: a 200-bin histogram of the eigenvalues of ``L_sym`` on ``[-1e-5, 2]``, normalised.

Two sets of descriptors are compared by the (biased, V-statistic) squared MMD
``MMD² = mean k(p, p') + mean k(q, q') - 2 mean k(p, q)`` over all pairs, with GDSS's kernels
(``load_eval_settings``): ``gaussian_emd`` for degree (σ = 1), clustering (σ = 0.1, distances scaled by the 100 bins)
and spectrum (σ = 1), and the plain ``gaussian`` kernel (σ = 30) on the orbit vectors. For 1-D histograms with ground
distance ``|i - j| / scale`` the earth mover's distance is ``Σ_i |P_i - Q_i| / scale`` (P, Q the cumulative sums),
so no EMD solver is needed. ``gaussian_tv`` (``exp(-TV² / 2σ²)``, GDSS's alternative) is offered too.

Orbit counts are ours (no installable ORCA on PyPI for our platforms): every connected induced 3- and 4-node subgraph
is enumerated by growing connected node sets one neighbour at a time, and each node's orbit is read from its degree
inside the subgraph and the subgraph's edge count (path ends 4 / middles 5, claw leaves 6 / centre 7, 4-cycle 8,
paw tail 9 / triangle nodes 10 / centre 11, diamond degree-2 nodes 12 / degree-3 nodes 13, K4 14). The tests check
it against a brute-force count over all node subsets matched to the graphlets by ``networkx`` isomorphism.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from sggm.errors import SggmError

N_ORBITS = 15
METHODS = ("degree", "cluster", "orbit", "spectral")


def to_networkx(graph: Any, *, remove_isolates: bool = False):
    """A networkx graph or a dense 0/1 (or weighted: > 0 is an edge) adjacency ``[n, n]`` -> a simple
    ``networkx.Graph`` with nodes ``0 … n-1``; ``remove_isolates`` drops nodes without edges (GDSS's
    ``adjs_to_graphs``: generated graphs are padded to a fixed n; an empty result keeps one node)."""
    import networkx as nx

    if isinstance(graph, nx.Graph):
        g = nx.convert_node_labels_to_integers(nx.Graph(graph))
    else:
        a = np.asarray(graph)
        if a.ndim != 2 or a.shape[0] != a.shape[1]:
            raise SggmError(f"a graph must be a networkx graph or a square [n, n] adjacency, got shape {a.shape}")
        g = nx.from_numpy_array((a > 0).astype(np.int8))
    g.remove_edges_from(list(nx.selfloop_edges(g)))
    if remove_isolates:
        g.remove_nodes_from(list(nx.isolates(g)))
        if g.number_of_nodes() == 0:
            g.add_node(0)
        g = nx.convert_node_labels_to_integers(g)
    return g


# ------------------------------------------------------------------------------------------------ orbit counts
def _connected_sets(adj: list[set[int]], k: int) -> set[frozenset[int]]:
    """Every connected node set of size ``k`` (grown from the edges one neighbour at a time, deduplicated)."""
    sets = {frozenset((u, v)) for u in range(len(adj)) for v in adj[u] if u < v}
    for _ in range(k - 2):
        grown = set()
        for s in sets:
            boundary = set().union(*(adj[u] for u in s)) - s
            grown.update(s | {w} for w in boundary)
        sets = grown
    return sets


def orbit_counts(graph: Any) -> np.ndarray:
    """Node orbit counts ``[n, 15]`` of the graphlets on 2–4 nodes (ORCA's ``node 4`` output): entry ``[v, o]`` is
    the number of connected induced subgraphs in which v sits at orbit o (orbit 0 = the degree)."""
    g = to_networkx(graph)
    n = g.number_of_nodes()
    adj = [set(g.neighbors(v)) for v in range(n)]
    out = np.zeros((n, N_ORBITS), dtype=np.int64)
    out[:, 0] = [len(a) for a in adj]
    for s in _connected_sets(adj, 3):
        deg = {u: len(adj[u] & s) for u in s}
        if sum(deg.values()) == 6:  # triangle
            for u in s:
                out[u, 3] += 1
        else:  # path: ends orbit 1, middle orbit 2
            for u, d in deg.items():
                out[u, 1 if d == 1 else 2] += 1
    for s in _connected_sets(adj, 4):
        deg = {u: len(adj[u] & s) for u in s}
        e = sum(deg.values()) // 2
        top = max(deg.values())
        for u, d in deg.items():
            if e == 3:
                o = (6 if d == 1 else 7) if top == 3 else (4 if d == 1 else 5)
            elif e == 4:
                o = 8 if top == 2 else {1: 9, 2: 10, 3: 11}[d]
            elif e == 5:  # diamond
                o = 12 if d == 2 else 13
            else:  # K4
                o = 14
            out[u, o] += 1
    return out


# ---------------------------------------------------------------------------------------------- descriptors
def degree_descriptor(g) -> np.ndarray:
    import networkx as nx

    return np.asarray(nx.degree_histogram(g), dtype=np.float64)


def clustering_descriptor(g, *, bins: int = 100) -> np.ndarray:
    import networkx as nx

    h, _ = np.histogram(list(nx.clustering(g).values()), bins=bins, range=(0.0, 1.0))
    return h.astype(np.float64)


def orbit_descriptor(g) -> np.ndarray:
    return orbit_counts(g).sum(0) / max(g.number_of_nodes(), 1)


def spectral_descriptor(g) -> np.ndarray:
    import networkx as nx

    if g.number_of_edges() == 0:
        ev = np.zeros(g.number_of_nodes())
    else:
        ev = np.linalg.eigvalsh(nx.normalized_laplacian_matrix(g).toarray())
    h, _ = np.histogram(ev, bins=200, range=(-1e-5, 2.0))
    return h / max(h.sum(), 1)


# -------------------------------------------------------------------------------------------------- kernels
def _pad(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m = max(len(x), len(y))
    return np.pad(x, (0, m - len(x))), np.pad(y, (0, m - len(y)))


def emd_1d(x: np.ndarray, y: np.ndarray, *, distance_scaling: float = 1.0) -> float:
    """Earth mover's distance between two equal-mass histograms on bins ``0, 1, …`` with ground distance
    ``|i - j| / distance_scaling``: ``Σ |cumsum(x) - cumsum(y)| / distance_scaling``."""
    x, y = _pad(np.asarray(x, float), np.asarray(y, float))
    return float(np.abs(np.cumsum(x) - np.cumsum(y)).sum() / distance_scaling)


def gaussian_emd(x, y, *, sigma: float = 1.0, distance_scaling: float = 1.0) -> float:
    d = emd_1d(x, y, distance_scaling=distance_scaling)
    return float(np.exp(-d * d / (2 * sigma * sigma)))


def gaussian(x, y, *, sigma: float = 1.0) -> float:
    x, y = _pad(np.asarray(x, float), np.asarray(y, float))
    d = float(np.linalg.norm(x - y))
    return float(np.exp(-d * d / (2 * sigma * sigma)))


def gaussian_tv(x, y, *, sigma: float = 1.0) -> float:
    x, y = _pad(np.asarray(x, float), np.asarray(y, float))
    d = 0.5 * float(np.abs(x - y).sum())
    return float(np.exp(-d * d / (2 * sigma * sigma)))


def mmd(samples1: Sequence[np.ndarray], samples2: Sequence[np.ndarray], kernel: Callable[..., float], *,
        is_hist: bool = True, **kw) -> float:
    """Squared MMD (V-statistic, all pairs) between two lists of descriptors; histograms are normalised first."""
    if not samples1 or not samples2:
        raise SggmError("MMD needs at least one graph on each side")
    if is_hist:
        samples1 = [s / max(s.sum(), 1e-12) for s in samples1]
        samples2 = [s / max(s.sum(), 1e-12) for s in samples2]

    # vectorised: the same numbers as the loop below (EMD only on equal-mass histograms, where zero padding to a
    # common length leaves the cumulative differences unchanged)
    fast = _PAIRWISE.get(kernel) if (is_hist or kernel is not gaussian_emd) else None
    if fast is not None:
        m = max(len(x) for x in (*samples1, *samples2))
        P = np.stack([np.pad(np.asarray(x, float), (0, m - len(x))) for x in samples1])
        Q = np.stack([np.pad(np.asarray(x, float), (0, m - len(x))) for x in samples2])

        def disc(a, b):
            return float(fast(a, b, **kw).mean())
    else:
        P, Q = samples1, samples2

        def disc(a, b):
            return float(np.mean([kernel(x, y, **kw) for x in a for y in b]))

    return disc(P, P) + disc(Q, Q) - 2 * disc(P, Q)


def _pw_emd(a, b, *, sigma: float = 1.0, distance_scaling: float = 1.0):
    d = np.abs(np.cumsum(a, 1)[:, None, :] - np.cumsum(b, 1)[None, :, :]).sum(-1) / distance_scaling
    return np.exp(-d * d / (2 * sigma * sigma))


def _pw_gaussian(a, b, *, sigma: float = 1.0):
    d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / (2 * sigma * sigma))


def _pw_tv(a, b, *, sigma: float = 1.0):
    d = 0.5 * np.abs(a[:, None, :] - b[None, :, :]).sum(-1)
    return np.exp(-d * d / (2 * sigma * sigma))


_PAIRWISE = {gaussian_emd: _pw_emd, gaussian: _pw_gaussian, gaussian_tv: _pw_tv}


KERNELS: dict[str, tuple[Callable[[Any], np.ndarray], Callable[..., float], bool, dict]] = {
    # name -> (descriptor, kernel, is_hist, kernel kwargs): GDSS's load_eval_settings for generic graphs
    "degree": (degree_descriptor, gaussian_emd, True, {"sigma": 1.0}),
    "cluster": (clustering_descriptor, gaussian_emd, True, {"sigma": 0.1, "distance_scaling": 100.0}),
    "orbit": (orbit_descriptor, gaussian, False, {"sigma": 30.0}),
    "spectral": (spectral_descriptor, gaussian_emd, True, {"sigma": 1.0}),
}


def graph_mmds(reference: Iterable[Any], generated: Iterable[Any], *,
               methods: Sequence[str] = ("degree", "cluster", "orbit"), remove_isolates: bool = True
               ) -> dict[str, float]:
    """GDSS's ``eval_graph_list``: ``{method: MMD²}`` between reference and generated graphs (networkx graphs or
    dense adjacencies); generated graphs lose their isolated nodes first (they are padded to a fixed n)."""
    bad = [m for m in methods if m not in KERNELS]
    if bad:
        raise SggmError(f"methods must be among {list(KERNELS)}, got {bad}")
    ref = [to_networkx(g) for g in reference]
    gen = [to_networkx(g, remove_isolates=remove_isolates) for g in generated]
    out = {}
    for m in methods:
        desc, kernel, is_hist, kw = KERNELS[m]
        out[m] = mmd([desc(g) for g in ref], [desc(g) for g in gen], kernel, is_hist=is_hist, **kw)
    return out
