"""Graph sets: the standard synthetic sets GDSS evaluates on (generated offline), an Erdős–Rényi control, GDSS-style
node features, and graphs in the formats users have.

Standard sets (GraphRNN / GDSS; sizes reduced where noted, see the README):

* ``community_small``: two communities of ``n // 2`` and ``n - n // 2`` nodes, ``n`` uniform in 12 … 20, each an
  Erdős–Rényi graph with p = 0.7, joined by inter-community edges with p = 0.05 (at least one), as GraphRNN's
  ``n_community``.
* ``grid_small``: 2-D grid graphs with sides uniform in 3 … 4 (9 … 16 nodes; GDSS's grid set has sides 10 … 20,
  100 … 400 nodes, beyond a CPU budget).
* ``ego_small``: 1-hop ego networks with 4 … 18 nodes (GDSS's ego-small is cut from Citeseer, which needs a
  download; ours are cut from a Holme–Kim power-law cluster graph, which has hubs and triangles like a citation net).

``erdos_renyi_like(graphs, count)``: the trivial control — ER graphs with node counts drawn from ``graphs`` and the
edge probability fitted to their density.

Inputs: :func:`read_graphs` takes an edge-list file (``u v`` per line; an optional third column is a graph id),
a folder of ``.npy`` / ``.npz`` dense adjacencies, a ``.pt`` file with a list of PyG ``Data`` objects (or a PyG
dataset object, or any iterable of networkx graphs / adjacencies from Python) and returns a list of networkx graphs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sggm.errors import SggmError

STANDARD_SETS = ("community_small", "grid_small", "ego_small")


def community_small(count: int, *, seed: int = 0) -> list:
    import networkx as nx

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        n = int(rng.integers(12, 21))
        sizes = (n // 2, n - n // 2)
        g = nx.disjoint_union(nx.gnp_random_graph(sizes[0], 0.7, seed=int(rng.integers(2**31))),
                              nx.gnp_random_graph(sizes[1], 0.7, seed=int(rng.integers(2**31))))
        left, right = range(sizes[0]), range(sizes[0], n)
        cross = [(u, v) for u in left for v in right if rng.random() < 0.05]
        g.add_edges_from(cross or [(0, sizes[0])])
        out.append(g)
    return out


def grid_small(count: int, *, seed: int = 0, sides: tuple[int, int] = (3, 4)) -> list:
    import networkx as nx

    rng = np.random.default_rng(seed)
    return [nx.convert_node_labels_to_integers(nx.grid_2d_graph(int(rng.integers(sides[0], sides[1] + 1)),
                                                                int(rng.integers(sides[0], sides[1] + 1))))
            for _ in range(count)]


def ego_small(count: int, *, seed: int = 0, size: tuple[int, int] = (4, 18)) -> list:
    import networkx as nx

    rng = np.random.default_rng(seed)
    host = nx.powerlaw_cluster_graph(3000, 2, 0.5, seed=int(rng.integers(2**31)))
    nodes = [v for v in host.nodes if size[0] <= host.degree(v) + 1 <= size[1]]
    picks = rng.choice(nodes, size=count, replace=len(nodes) < count)
    return [nx.convert_node_labels_to_integers(nx.ego_graph(host, int(v), radius=1)) for v in picks]


def standard_set(name: str, count: int, *, seed: int = 0) -> list:
    """``count`` graphs of the standard set ``name`` (``community_small``, ``grid_small``, ``ego_small``)."""
    fn = {"community_small": community_small, "grid_small": grid_small, "ego_small": ego_small}.get(name)
    if fn is None:
        raise SggmError(f"dataset must be one of {list(STANDARD_SETS)}, got {name!r}")
    if count < 1:
        raise SggmError(f"count must be >= 1, got {count}")
    return fn(count, seed=seed)


def erdos_renyi_like(graphs: list, count: int, *, seed: int = 0) -> list:
    """ER control: node counts drawn from ``graphs``, edge probability = their pooled density."""
    import networkx as nx

    if not graphs:
        raise SggmError("erdos_renyi_like needs at least one graph to fit")
    sizes = np.array([g.number_of_nodes() for g in graphs])
    pairs = (sizes * (sizes - 1) / 2).sum()
    p = float(sum(g.number_of_edges() for g in graphs) / max(pairs, 1))
    rng = np.random.default_rng(seed)
    return [nx.gnp_random_graph(int(rng.choice(sizes)), p, seed=int(rng.integers(2**31))) for _ in range(count)]


# ---------------------------------------------------------------------------------------- tensors for training
def degree_features(g, *, max_degree: int) -> np.ndarray:
    """GDSS's ``deg`` node features: one-hot of the degree clipped at ``max_degree`` ``[n, max_degree + 1]``."""
    d = np.minimum(np.array([g.degree(v) for v in range(g.number_of_nodes())], dtype=int), max_degree)
    return np.eye(max_degree + 1)[d]


def to_tensors(graphs: list, *, n_max: int, max_degree: int) -> tuple[np.ndarray, np.ndarray]:
    """Graphs -> ``X [S, n_max, max_degree + 1]`` (degree one-hot, zero rows for padding) and the 0/1 adjacency
    ``A [S, n_max, n_max]`` padded with isolated nodes (removed again after sampling)."""
    import networkx as nx

    X = np.zeros((len(graphs), n_max, max_degree + 1))
    A = np.zeros((len(graphs), n_max, n_max))
    for i, g in enumerate(graphs):
        n = g.number_of_nodes()
        if n > n_max:
            raise SggmError(f"graph {i} has {n} nodes, more than n_max = {n_max}")
        A[i, :n, :n] = nx.to_numpy_array(g, nodelist=range(n))
        X[i, :n] = degree_features(g, max_degree=max_degree)
    return X, A


def node_flags(sizes, n_max: int) -> np.ndarray:
    """GDSS's node flags ``[len(sizes), n_max]``: row ``i`` is 1 on the first ``sizes[i]`` nodes (the graph's own, as
    :func:`to_tensors` pads them), 0 on the padding."""
    sizes = np.asarray(sizes, dtype=int)
    if sizes.ndim != 1 or (sizes < 0).any() or (sizes > n_max).any():
        raise SggmError(f"node counts must lie in [0, n_max = {n_max}], got {sizes.tolist()}")
    return (np.arange(n_max)[None, :] < sizes[:, None]).astype(np.float64)


def sample_node_flags(sizes, count: int, n_max: int, rng: np.random.Generator) -> np.ndarray:
    """Node flags of ``count`` graphs to generate, their node counts drawn from the training graphs' ``sizes`` (as
    GDSS's ``init_flags`` draws them from the training set)."""
    sizes = np.asarray(sizes, dtype=int)
    if sizes.size == 0:
        raise SggmError("sample_node_flags needs the node counts of at least one training graph")
    return node_flags(rng.choice(sizes, size=count), n_max)


# ------------------------------------------------------------------------------------------------------ inputs
def _from_pyg(data: Any):
    import networkx as nx

    ei = np.asarray(data.edge_index.cpu().numpy() if hasattr(data.edge_index, "cpu") else data.edge_index)
    n = int(data.num_nodes)
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from((int(u), int(v)) for u, v in ei.T if u != v)
    return g


def as_graphs(source: Any) -> list:
    """An iterable of networkx graphs, dense adjacencies ``[n, n]`` or PyG ``Data`` objects (a PyG dataset) -> a list
    of simple undirected networkx graphs with nodes ``0 … n-1``."""
    import networkx as nx

    from sggm.graph_eval import to_networkx

    out = []
    for i, item in enumerate(source):
        if hasattr(item, "edge_index"):
            out.append(_from_pyg(item))
        elif isinstance(item, nx.Graph):
            if item.is_directed():
                raise SggmError(f"graph {i} is directed; pass undirected graphs")
            out.append(to_networkx(item))
        else:
            a = np.asarray(item, dtype=np.float64)
            if a.ndim != 2 or a.shape[0] != a.shape[1] or not np.allclose(a, a.T):
                raise SggmError(f"graph {i}: an adjacency must be a symmetric square [n, n] array, got shape {a.shape}")
            out.append(to_networkx(a))
    if not out:
        raise SggmError("no graphs were given")
    return out


def read_graphs(path: str | Path) -> list:
    """Graphs from disk: an edge-list file (``u v`` or ``u v graph_id`` per line, ``#`` comments), a folder of
    ``.npy`` / ``.npz`` adjacencies (every array in an ``.npz`` is one graph), or a ``.pt`` file holding a list of
    PyG ``Data`` objects (``torch.save([data, ...])``) or a saved PyG dataset."""
    p = Path(path)
    if not p.exists():
        raise SggmError(f"graphs path {str(p)!r} does not exist")
    if p.is_dir():
        arrays = []
        for f in sorted(p.iterdir()):
            if f.suffix == ".npy":
                arrays.append(np.load(f, allow_pickle=False))
            elif f.suffix == ".npz":
                with np.load(f, allow_pickle=False) as z:
                    arrays.extend(z[k] for k in z.files)
        if not arrays:
            raise SggmError(f"folder {str(p)!r} holds no .npy or .npz adjacency")
        return as_graphs(arrays)
    if p.suffix == ".pt":
        import torch

        obj = torch.load(p, weights_only=False)
        return as_graphs(obj if isinstance(obj, (list, tuple)) or hasattr(obj, "__getitem__") else [obj])
    return _read_edge_list(p)


def _read_edge_list(p: Path) -> list:
    import networkx as nx

    graphs: dict[str, Any] = {}
    for k, line in enumerate(p.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.replace(",", " ").split()
        if len(parts) not in (2, 3):
            raise SggmError(f"{p}:{k}: an edge-list line is 'u v' or 'u v graph_id', got {line!r}")
        gid = parts[2] if len(parts) == 3 else "0"
        graphs.setdefault(gid, nx.Graph()).add_edge(parts[0], parts[1])
    if not graphs:
        raise SggmError(f"edge list {str(p)!r} holds no edges")
    return as_graphs(graphs.values())
