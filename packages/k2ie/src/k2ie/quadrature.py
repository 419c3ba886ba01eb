"""Composite Gauss–Legendre quadrature over a union of boxes (for the integrals that have no closed form:
ISE/IAE against the truth, ``∫ λ̂`` of the edge-corrected KIE, ``∫ λ̂²`` of KIE and Flaxman's estimator)."""

from __future__ import annotations

import numpy as np

from k2ie.window import Window


def nodes_1d(lo: float, hi: float, n_sub: int, order: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of ``n_sub`` equal panels of ``order``-point Gauss–Legendre on ``[lo, hi]``."""
    g, w = np.polynomial.legendre.leggauss(order)
    edges = np.linspace(lo, hi, n_sub + 1)
    half = 0.5 * np.diff(edges)  # (n_sub,)
    mid = 0.5 * (edges[1:] + edges[:-1])
    x = (mid[:, None] + half[:, None] * g[None, :]).ravel()
    wt = (half[:, None] * w[None, :]).ravel()
    return x, wt


def window_nodes(window: Window, *, per_unit: float = 4.0, order: int = 6, min_sub: int = 2
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Tensor Gauss–Legendre nodes ``(n, d)`` and weights ``(n,)`` over every box of ``window``.

    Each box side of length ``L`` gets ``max(min_sub, ceil(per_unit·L))`` panels of ``order`` nodes.
    """
    xs, ws = [], []
    for box in window.boxes:
        axes = [nodes_1d(lo, hi, max(min_sub, int(np.ceil(per_unit * (hi - lo)))), order) for lo, hi in box]
        grids = np.meshgrid(*[a[0] for a in axes], indexing="ij")
        wgrids = np.meshgrid(*[a[1] for a in axes], indexing="ij")
        xs.append(np.stack([g.ravel() for g in grids], axis=-1))
        ws.append(np.prod(np.stack([g.ravel() for g in wgrids], axis=-1), axis=-1))
    return np.concatenate(xs), np.concatenate(ws)


def integrate(fn, window: Window, *, per_unit: float = 4.0, order: int = 6) -> float:
    """``∫_T fn(x) dx`` with ``fn: (n, d) -> (n,)``."""
    x, w = window_nodes(window, per_unit=per_unit, order=order)
    return float(w @ fn(x))
