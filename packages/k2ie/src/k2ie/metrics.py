"""Errors against the truth (ISE, IAE; optionally per unit volume, the released tables' convention) and the
edge band of a window."""

from __future__ import annotations

import numpy as np

from k2ie.quadrature import window_nodes
from k2ie.window import Window


def integrated_errors(estimate, truth, window: Window, *, per_unit: float = 4.0, order: int = 6,
           normalize: str = "none", mask=None) -> dict[str, float]:
    """``ISE = ∫_T (λ̂ − λ)²`` and ``IAE = ∫_T |λ̂ − λ|`` by Gauss–Legendre quadrature (raw ``λ̂``, negatives
    included). ``normalize="volume"`` divides by ``|T|`` (what the released scripts report). ``mask(x) -> bool``
    restricts both integrals to a sub-region (e.g. :func:`edge_mask`)."""
    if normalize not in ("none", "volume"):
        raise ValueError(f"normalize must be 'none' or 'volume', got {normalize!r}")
    x, w = window_nodes(window, per_unit=per_unit, order=order)
    if mask is not None:
        keep = mask(x)
        x, w = x[keep], w[keep]
    diff = estimate(x) - truth(x)
    ise, iae = float(w @ diff ** 2), float(w @ np.abs(diff))
    if normalize == "volume":
        vol = float(w.sum())
        ise, iae = ise / vol, iae / vol
    return {"ise": ise, "iae": iae}


def edge_mask(window: Window, width: float):
    """``mask(x)``: points within ``width`` (per axis) of the window's boundary, i.e. moving by ``±width`` along
    some axis leaves the window."""
    def mask(x: np.ndarray) -> np.ndarray:
        out = np.zeros(len(x), dtype=bool)
        for i in range(window.d):
            for s in (-1.0, 1.0):
                y = x.copy()
                y[:, i] += s * width
                out |= ~window.contains(y)
        return out
    return mask
