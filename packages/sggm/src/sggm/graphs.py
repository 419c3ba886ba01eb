"""Graphs in and out: networkx generators (regular / power-law), validation of dense adjacencies, Laplacians and
normalisation.

* ``regular_graph(n, d)``: ``networkx.random_regular_graph`` (every degree ``d``; needs ``n·d`` even, ``d < n``).
* ``powerlaw_graph(n, m)``: ``networkx.barabasi_albert_graph`` (or ``powerlaw_cluster_graph`` with ``p > 0``),
  mean degree ``2m(n - m)/n ≈ 2m``: at ``m = d/2`` it matches the regular graph's mean degree with a heavy-tailed
  maximum degree.
* ``laplacian(A, kind)``: combinatorial ``L = D - A`` or normalised ``L_sym = I - D^{-1/2} A D^{-1/2}``
  (isolated nodes get a zero row).
* ``normalized_adjacency(A) = D^{-1/2} A D^{-1/2}`` (spectral norm ≤ 1 for a non-negative A);
  ``standardize_features(X)``: zero mean, unit variance per feature column.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from sggm.errors import SggmError

Laplacian = Literal["combinatorial", "normalized"]


def _int(name: str, v: Any, lo: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise SggmError(f"{name} must be an integer >= {lo}, got {v!r}")
    return int(v)


def regular_graph(n: int, d: int, *, seed: int = 0) -> np.ndarray:
    """Adjacency ``[n, n]`` (float64, 0/1) of a uniformly random ``d``-regular graph."""
    import networkx as nx

    n, d = _int("n", n, 2), _int("d", d, 1)
    if d >= n:
        raise SggmError(f"regular degree d must be < n, got d={d}, n={n}")
    if (n * d) % 2:
        raise SggmError(f"a d-regular graph on n nodes needs n·d even, got n={n}, d={d} (n·d={n * d})")
    return nx.to_numpy_array(nx.random_regular_graph(d, n, seed=seed), nodelist=range(n), dtype=np.float64)


def powerlaw_graph(n: int, m: int, *, seed: int = 0, p: float = 0.0) -> np.ndarray:
    """Adjacency ``[n, n]`` of a Barabási–Albert graph (``p = 0``) or a Holme–Kim power-law cluster graph."""
    import networkx as nx

    n, m = _int("n", n, 2), _int("m", m, 1)
    if m >= n:
        raise SggmError(f"Barabási–Albert m must be < n, got m={m}, n={n}")
    if not 0.0 <= p <= 1.0:
        raise SggmError(f"p (triangle probability) must lie in [0, 1], got {p}")
    g = nx.barabasi_albert_graph(n, m, seed=seed) if p == 0 else nx.powerlaw_cluster_graph(n, m, p, seed=seed)
    return nx.to_numpy_array(g, nodelist=range(n), dtype=np.float64)


def make_graph(family: str, n: int, *, mean_degree: int = 4, seed: int = 0) -> np.ndarray:
    """``family`` = ``"regular"`` (degree ``mean_degree``) or ``"powerlaw"`` (BA with ``m = mean_degree // 2``)."""
    if family == "regular":
        return regular_graph(n, mean_degree, seed=seed)
    if family == "powerlaw":
        return powerlaw_graph(n, max(mean_degree // 2, 1), seed=seed)
    raise SggmError(f"family must be 'regular' or 'powerlaw', got {family!r}")


def read_npy(path: Any, *, what: str) -> np.ndarray:
    """A numeric array from a user's ``.npy`` file; every error names ``what`` (the flag) and the file
    (:func:`icml25.errors.read_npy`)."""
    from icml25.errors import read_npy as _read

    return _read(path, what=what, error=SggmError)


def as_adjacency(graph: Any, *, name: str = "A", weighted: bool = True) -> np.ndarray:
    """A networkx graph or a dense array -> validated symmetric float64 ``[n, n]`` (finite, square, symmetric)."""
    try:
        import networkx as nx

        if isinstance(graph, nx.Graph):
            if graph.is_directed():
                raise SggmError(f"{name}: a directed graph was given; pass an undirected networkx.Graph")
            return nx.to_numpy_array(graph, nodelist=sorted(graph.nodes), dtype=np.float64)
    except ImportError:  # pragma: no cover
        pass
    a = np.asarray(graph, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise SggmError(f"{name} must be a square [n, n] matrix, got shape {a.shape}")
    if a.shape[0] < 1:
        raise SggmError(f"{name} must have at least one node")
    if not np.isfinite(a).all():
        raise SggmError(f"{name} contains NaN or inf")
    if not np.allclose(a, a.T, atol=1e-10, rtol=0):
        raise SggmError(f"{name} must be symmetric (undirected graph); max |A - Aᵀ| = {np.abs(a - a.T).max():.3g}")
    return 0.5 * (a + a.T)


def as_features(x: Any, n: int, *, name: str = "X") -> np.ndarray:
    """Validated float64 node features ``[n, F]``."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise SggmError(f"{name} must be [n, F], got shape {x.shape}")
    if x.shape[0] != n:
        raise SggmError(f"{name} must have one row per node: {x.shape[0]} rows for n = {n} nodes")
    if not np.isfinite(x).all():
        raise SggmError(f"{name} contains NaN or inf")
    return x


def degrees(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).sum(axis=1)


def normalized_adjacency(a: np.ndarray) -> np.ndarray:
    """``D^{-1/2} A D^{-1/2}`` (isolated nodes: zero rows)."""
    a = as_adjacency(a)
    d = degrees(a)
    inv = np.where(d > 0, 1.0 / np.sqrt(np.where(d > 0, d, 1.0)), 0.0)
    return inv[:, None] * a * inv[None, :]


def laplacian(a: np.ndarray, kind: Laplacian = "combinatorial") -> np.ndarray:
    """``L = D - A`` (combinatorial) or ``L_sym = I - D^{-1/2} A D^{-1/2}`` (normalized; 0 on isolated nodes)."""
    a = as_adjacency(a)
    if kind == "combinatorial":
        return np.diag(degrees(a)) - a
    if kind == "normalized":
        d = degrees(a)
        return np.diag((d > 0).astype(np.float64)) - normalized_adjacency(a)
    raise SggmError(f"laplacian must be 'combinatorial' or 'normalized', got {kind!r}")


def ring_lattice_spectrum(n: int, d: int) -> np.ndarray:
    """Eigenvalues ``[n]`` (ascending) of the combinatorial Laplacian of the d-regular ring lattice (node i joined to
    i ± 1, …, i ± d/2 mod n), in closed form: a circulant, so ``μ_k = Σ_{j=1}^{d/2} (2 - 2 cos(2π j k / n))``. Lets
    paradigm 1 run at n = 10⁴ and beyond without an O(n³) eigendecomposition."""
    n, d = _int("n", n, 3), _int("d", d, 2)
    if d % 2 or d >= n:
        raise SggmError(f"d must be even and < n for a ring lattice, got n={n}, d={d}")
    k = np.arange(n)[:, None]
    j = np.arange(1, d // 2 + 1)[None, :]
    return np.sort(np.clip((2.0 - 2.0 * np.cos(2 * np.pi * j * k / n)).sum(1), 0.0, None))


def standardize_features(x: np.ndarray) -> np.ndarray:
    """Zero mean and unit variance per feature column (columns with zero spread are only centred)."""
    x = np.asarray(x, dtype=np.float64)
    mu, sd = x.mean(axis=0, keepdims=True), x.std(axis=0, keepdims=True)
    return (x - mu) / np.where(sd > 0, sd, 1.0)


def upper(a: np.ndarray) -> np.ndarray:
    """Strict upper triangle of ``[..., n, n]`` as ``[..., n(n-1)/2]`` (row-major ``np.triu_indices(n, 1)``)."""
    n = a.shape[-1]
    i, j = np.triu_indices(n, 1)
    return a[..., i, j]


def from_upper(u: np.ndarray, n: int) -> np.ndarray:
    """Inverse of :func:`upper`: a symmetric ``[..., n, n]`` with zero diagonal."""
    i, j = np.triu_indices(n, 1)
    out = np.zeros(u.shape[:-1] + (n, n), dtype=u.dtype)
    out[..., i, j] = u
    out[..., j, i] = u
    return out
