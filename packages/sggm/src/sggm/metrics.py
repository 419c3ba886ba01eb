"""Graph statistics for the learned-score check: degree and spectrum MMD (GraphRNN / GDSS style).

Each graph becomes a normalised histogram (degrees, or the eigenvalues of ``L_sym`` in ``[0, 2]`` with 200 bins);
two sets of histograms are compared by the squared MMD with the Gaussian total-variation kernel
``k(p, q) = exp(-TV(p, q)² / (2σ²))``, ``TV = ½‖p - q‖₁``:
``MMD² = E k(p, p') + E k(q, q') - 2 E k(p, q)`` (biased V-statistic).
"""

from __future__ import annotations

import numpy as np

from sggm.graphs import laplacian


def quantize(A: np.ndarray, *, threshold: float = 0.5) -> np.ndarray:
    """Continuous adjacencies ``[..., n, n]`` -> 0/1 (symmetric, zero diagonal)."""
    b = (np.asarray(A) > threshold).astype(np.float64)
    b = np.maximum(b, np.swapaxes(b, -1, -2))
    idx = np.arange(b.shape[-1])
    b[..., idx, idx] = 0.0
    return b


def degree_histogram(A: np.ndarray, *, max_degree: int | None = None) -> np.ndarray:
    a = np.asarray(A)
    n = a.shape[-1]
    deg = a.sum(-1).astype(int)
    bins = (max_degree or n) + 1
    h = np.stack([np.bincount(d, minlength=bins)[:bins] for d in deg.reshape(-1, n)]).astype(np.float64)
    return h / h.sum(-1, keepdims=True)


def spectrum_histogram(A: np.ndarray, *, bins: int = 200) -> np.ndarray:
    out = []
    for a in np.asarray(A).reshape(-1, A.shape[-1], A.shape[-1]):
        ev = np.linalg.eigvalsh(laplacian(a, "normalized"))
        h, _ = np.histogram(ev, bins=bins, range=(-1e-5, 2.0 + 1e-5))
        out.append(h / max(h.sum(), 1))
    return np.asarray(out, dtype=np.float64)


def mmd_tv(p: np.ndarray, q: np.ndarray, *, sigma: float = 1.0) -> float:
    """Squared MMD between the rows of ``p [M, K]`` and ``q [M', K]`` (Gaussian TV kernel)."""

    def k(x, y):
        tv = 0.5 * np.abs(x[:, None, :] - y[None, :, :]).sum(-1)
        return np.exp(-(tv**2) / (2 * sigma**2))

    return float(k(p, p).mean() + k(q, q).mean() - 2 * k(p, q).mean())


def degree_mmd(A_gen: np.ndarray, A_ref: np.ndarray) -> float:
    n = max(A_gen.shape[-1], A_ref.shape[-1])
    return mmd_tv(degree_histogram(A_gen, max_degree=n), degree_histogram(A_ref, max_degree=n))


def spectrum_mmd(A_gen: np.ndarray, A_ref: np.ndarray) -> float:
    return mmd_tv(spectrum_histogram(A_gen), spectrum_histogram(A_ref))


def to_signed(A: np.ndarray) -> np.ndarray:
    """0/1 adjacencies ``[..., n, n]`` -> ±1 off the diagonal, 0 on it (the continuous relaxation that is noised;
    :func:`quantize` with ``threshold=0`` inverts it)."""
    s = 2.0 * np.asarray(A, dtype=np.float64) - 1.0
    idx = np.arange(s.shape[-1])
    s[..., idx, idx] = 0.0
    return s
