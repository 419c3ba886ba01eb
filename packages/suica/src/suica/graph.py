"""The spatial k-NN graph of SUICA's graph-augmented autoencoder.

``A in {0,1}^{n x n}``: row ``i`` has ones at the ``k`` nearest spots of ``i`` *including i itself* (sklearn
``kneighbors_graph(..., include_self=True)``, connectivity mode), as in the official code. The graph convolution
uses a propagation matrix ``Â`` built from ``A``:

* ``norm="sym"`` (default, the fix): ``Ã = max(A, Aᵀ)`` (symmetrised, self loops kept), ``Â = D^{-1/2} Ã D^{-1/2}``
  (Kipf & Welling), so the aggregate does not grow with ``k``;
* ``norm="row"``: ``Â = D^{-1} A`` (mean over the k-NN list);
* ``norm="raw"``: ``Â = A`` (official behaviour: binary, not symmetrised, not normalised; scale ∝ k).

``space="spatial"`` (default, the current release and the paper) builds neighbours on coordinates;
``space="expression"`` on log1p expression (the earlier release).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import scipy.sparse as sp

from suica.errors import SUICAInputError

GraphNorm = Literal["sym", "row", "raw"]


def knn_adjacency(points: np.ndarray, *, k: int = 5) -> sp.csr_matrix:
    """Binary k-NN connectivity ``(n, n)`` with ``k`` ones per row, self included (``A[i, i] = 1``).

    ``points`` is ``(n, d)``, dense or scipy-sparse (expression-space graphs stay sparse: sklearn searches CSR rows
    by brute force in chunks, never densifying the matrix).
    """
    from sklearn.neighbors import NearestNeighbors

    x = sp.csr_matrix(points, dtype=np.float64) if sp.issparse(points) else np.asarray(points, dtype=np.float64)
    n = x.shape[0]
    if k < 1:
        raise SUICAInputError(f"k must be >= 1, got {k}")
    if n < k + 1:
        raise SUICAInputError(f"need at least k+1 = {k + 1} spots for a {k}-NN graph, got {n}")
    nn = NearestNeighbors(n_neighbors=k).fit(x)
    idx = nn.kneighbors(x, return_distance=False)  # (n, k); first column is the spot itself for distinct points
    # force self into each row (ties between duplicate coordinates could otherwise drop it)
    has_self = (idx == np.arange(n)[:, None]).any(axis=1)
    idx[~has_self, -1] = np.arange(n)[~has_self]
    rows = np.repeat(np.arange(n), k)
    a = sp.csr_matrix((np.ones(n * k), (rows, idx.reshape(-1))), shape=(n, n))
    a.data[:] = 1.0  # duplicates (impossible after the fix above, but keep binary)
    return a


def normalize_adjacency(a: sp.spmatrix, *, norm: GraphNorm = "sym") -> sp.csr_matrix:
    """Propagation matrix ``Â`` from a binary adjacency (see module docstring)."""
    a = sp.csr_matrix(a, dtype=np.float64)
    if norm == "raw":
        return a
    if norm == "row":
        deg = np.asarray(a.sum(axis=1)).ravel()
        return sp.diags(1.0 / deg) @ a
    if norm == "sym":
        s = a.maximum(a.T).tocsr()
        deg = np.asarray(s.sum(axis=1)).ravel()
        dinv = sp.diags(1.0 / np.sqrt(deg))
        return (dinv @ s @ dinv).tocsr()
    raise SUICAInputError(f"graph_norm must be one of 'sym', 'row', 'raw', got {norm!r}")


def build_graph(points: np.ndarray, *, k: int = 5, norm: GraphNorm = "sym"):
    """``Â`` as a torch sparse COO tensor ``(n, n)`` (float32)."""
    import torch

    a = normalize_adjacency(knn_adjacency(points, k=k), norm=norm).tocoo()
    idx = torch.as_tensor(np.vstack([a.row, a.col]), dtype=torch.long)
    return torch.sparse_coo_tensor(idx, torch.as_tensor(a.data, dtype=torch.float32), a.shape,
                                   check_invariants=False).coalesce()


def subgraph(a: sp.spmatrix, batch: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """Mini-batch subgraph (official ``construct_subgraph`` semantics).

    Nodes = the batch spots plus the union of their neighbour lists; returns ``(A_sub, nodes, local)`` where
    ``A_sub = A[nodes][:, nodes]`` and ``nodes[local] == batch`` (positions of the batch spots inside ``nodes``).
    """
    a = sp.csr_matrix(a)
    batch = np.asarray(batch, dtype=np.int64)
    neigh = a[batch].indices
    nodes = np.union1d(batch, neigh)
    local = np.searchsorted(nodes, batch)
    return a[nodes][:, nodes].tocsr(), nodes, local
