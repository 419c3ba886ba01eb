"""Shift-invariant base kernels and their random Fourier features with closed-form box integrals.

Base kernels (product over dimensions, inverse scale ``b`` per dimension, ``k(x, x) = 1``):

* gaussian ``k(x, y) = Π_i exp(−(b_i δ_i)²)``, spectral density ``N(0, 2)``;
* laplace  ``k(x, y) = Π_i exp(−|b_i δ_i|)``, spectral density ``Cauchy(0, 1)``;
* cauchy   ``k(x, y) = Π_i 1 / (1 + (b_i δ_i)²)``, spectral density ``Laplace(0, 1)`` (two-sided),

with ``δ = x − y``. Random Fourier features (Rahimi & Recht 2007), ``M = 2·M₂``::

    φ(x) = M₂^{-1/2} [cos(u_j·x), sin(u_j·x)]_{j=1..M₂},   u_j = ω_j ∘ b,   ω_j ~ spectral density,

so that ``φ(x)ᵀφ(y) = M₂^{-1} Σ_j cos(u_j·(x − y)) → k(x, y)``. With ``qmc=True`` the ω_j are scrambled Halton
points mapped through the inverse CDF of the spectral density (K²IE, Kim et al. ICML 2025, Sec. 4).

The window integrals are closed form. For one box ``B = Π_i [lo_i, hi_i]`` with centre ``c`` and side ``L``::

    ∫_B exp(i v·t) dt = Π_i L_i sinc(v_i L_i / 2) · exp(i v·c),   sinc(z) = sin(z)/z,

and the products ``cos·cos``, ``sin·sin``, ``cos·sin`` of two features are half-sums of ``cos``/``sin`` at
``u_j ± u_k``; ``Φ_T = ∫_T φφᵀ`` is the sum of the per-box matrices.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from k2ie.errors import K2ieError
from k2ie.window import Window

KERNELS = ("gaussian", "laplace", "cauchy")


def check_kernel(kernel: str) -> str:
    if kernel not in KERNELS:
        raise K2ieError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    return kernel


def check_b(b: float | np.ndarray, d: int | None = None) -> np.ndarray:
    """Inverse scales as a 1-D float64 array (a scalar is broadcast to ``d`` dimensions)."""
    try:
        arr = np.atleast_1d(np.asarray(b, dtype=np.float64))
    except (TypeError, ValueError) as exc:
        raise K2ieError(f"b must be a positive number or one per dimension, got {b!r}") from exc
    if arr.ndim != 1 or not np.isfinite(arr).all() or (arr <= 0).any():
        raise K2ieError(f"b must be positive and finite (a number or one per dimension), got {b!r}")
    if d is not None:
        if arr.size == 1:
            arr = np.full(d, float(arr[0]))
        elif arr.size != d:
            raise K2ieError(f"b has {arr.size} entries but the data have d={d} dimensions; give one b or {d}")
    return arr


def sinc(z: np.ndarray) -> np.ndarray:
    """``sin(z)/z`` (unnormalised), with the Taylor series ``1 − z²/6 + z⁴/120`` for ``|z| < 1e-4``."""
    z = np.asarray(z, dtype=np.float64)
    small = np.abs(z) < 1e-4
    zs = np.where(small, 1.0, z)
    z2 = z * z
    return np.where(small, 1.0 - z2 / 6.0 + z2 * z2 / 120.0, np.sin(zs) / zs)


def base_kernel(kernel: str, x: np.ndarray, y: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact base kernel matrix ``k(x_i, y_j)``: ``x (n, d)``, ``y (m, d)`` -> ``(n, m)``."""
    check_kernel(kernel)
    xb, yb = x * b, y * b
    if kernel == "gaussian":  # exp(−‖xb − yb‖²) through one matrix product
        sq = (xb * xb).sum(1)[:, None] + (yb * yb).sum(1)[None, :] - 2.0 * xb @ yb.T
        return np.exp(-np.maximum(sq, 0.0))
    out = np.ones((len(x), len(y)))
    for i in range(x.shape[1]):  # product over dimensions, one (n, m) slice at a time
        delta = xb[:, i, None] - yb[None, :, i]
        out *= np.exp(-np.abs(delta)) if kernel == "laplace" else 1.0 / (1.0 + delta * delta)
    return out


def kernel_box_integral(kernel: str, x: np.ndarray, window: Window, b: np.ndarray) -> np.ndarray:
    """``∫_T k(x, t) dt`` in closed form for ``x (n, d)`` -> ``(n,)``: per dimension

    gaussian ``√π/(2b) [erf(b(hi − x)) − erf(b(lo − x))]``; laplace ``G(hi − x) − G(lo − x)`` with
    ``G(s) = sign(s)(1 − e^{−b|s|})/b``; cauchy ``[atan(b(hi − x)) − atan(b(lo − x))]/b``; products over
    dimensions, sums over boxes.
    """
    check_kernel(kernel)
    lo = window.boxes[None, :, :, 0] - x[:, None, :]  # (n, n_box, d)
    hi = window.boxes[None, :, :, 1] - x[:, None, :]
    bb = b[None, None, :]
    if kernel == "gaussian":
        per = np.sqrt(np.pi) / (2 * bb) * (special.erf(bb * hi) - special.erf(bb * lo))
    elif kernel == "laplace":
        def g(s):
            return np.sign(s) * (-np.expm1(-bb * np.abs(s))) / bb
        per = g(hi) - g(lo)
    else:
        per = (np.arctan(bb * hi) - np.arctan(bb * lo)) / bb
    return np.prod(per, axis=-1).sum(axis=-1)


def box_fourier(v: np.ndarray, window: Window) -> tuple[np.ndarray, np.ndarray]:
    """Real and imaginary parts of ``∫_T exp(i v·t) dt`` for frequencies ``v (..., d)`` -> two ``(...)`` arrays."""
    total = np.zeros(v.shape[:-1], dtype=np.complex128)
    for box in window.boxes:  # (d, 2)
        length = box[:, 1] - box[:, 0]
        centre = 0.5 * (box[:, 1] + box[:, 0])
        total += np.prod(length * sinc(v * (0.5 * length)), axis=-1) * np.exp(1j * (v @ centre))
    return total.real, total.imag


def _pair_fourier(u: np.ndarray, window: Window, sign: float) -> np.ndarray:
    """``∫_T exp(i (u_j + sign·u_k)·t) dt`` for all pairs: ``(M2, M2)`` complex.

    Per box the integral is ``amp(length) · z_j · z_k^{±}`` with ``z = exp(i u·centre)``: the sinc amplitude depends
    only on the box's side lengths and the phase factorises. Boxes with the same side lengths (the cells of a
    fragmented window) share one amplitude, and their phases sum as one matrix product ``Z Z^{±ᵀ}``
    (``Z (M2, n_boxes)``), so a window of many equal cells costs about as much as one box."""
    total = np.zeros((len(u), len(u)), dtype=np.complex128)
    lengths = window.boxes[:, :, 1] - window.boxes[:, :, 0]  # (n_box, d)
    centres = 0.5 * (window.boxes[:, :, 1] + window.boxes[:, :, 0])  # (n_box, d)
    groups, inverse = np.unique(lengths, axis=0, return_inverse=True)
    for g, length in enumerate(groups):
        amp = np.full((len(u), len(u)), float(np.prod(length)))
        for i in range(u.shape[1]):
            amp *= sinc((u[:, i, None] + sign * u[None, :, i]) * (0.5 * length[i]))
        z = np.exp(1j * (u @ centres[np.ravel(inverse) == g].T))  # (M2, n_boxes in the group)
        total += amp * (z @ (z if sign > 0 else z.conj()).T)
    return total


class RandomFourierFeatures:
    """``φ: R^d -> R^M`` with ``φ(x)ᵀφ(y) ≈ k(x, y)`` (see the module docstring).

    Args:
        kernel: ``gaussian`` | ``laplace`` | ``cauchy``.
        b: inverse scale, a number or one per dimension (``(d,)``).
        d: dimension.
        n_features: ``M`` (even, >= 2): ``M/2`` cosine and ``M/2`` sine features.
        qmc: scrambled Halton frequencies (True) or i.i.d. draws (False).
        seed: seeds the scrambler or the i.i.d. draws.
    """

    def __init__(self, *, kernel: str, b: float | np.ndarray, d: int, n_features: int = 500, qmc: bool = True,
                 seed: int = 0) -> None:
        self.kernel = check_kernel(kernel)
        if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)) or n_features < 2 \
                or n_features % 2:
            raise K2ieError(f"n_features must be an even integer >= 2 (cos/sin pairs), got {n_features!r}")
        self.d = int(d)
        self.b = check_b(b, self.d)
        self.n_features = int(n_features)
        self.qmc, self.seed = bool(qmc), int(seed)
        self.omega = unit_frequencies(kernel, self.d, self.n_features // 2, qmc=self.qmc, seed=self.seed)
        self.u = self.omega * self.b  # (M2, d) frequencies in the data's units

    @property
    def m2(self) -> int:
        return self.n_features // 2

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """``φ(x)``: ``(n, d)`` -> ``(n, M)``."""
        z = x @ self.u.T  # (n, M2)
        return np.concatenate([np.cos(z), np.sin(z)], axis=1) / np.sqrt(self.m2)

    def integral(self, window: Window) -> np.ndarray:
        """``∫_T φ(t) dt``: ``(M,)``."""
        re, im = box_fourier(self.u, window)
        return np.concatenate([re, im]) / np.sqrt(self.m2)

    def gram_integral(self, window: Window) -> np.ndarray:
        """``Φ_T = ∫_T φ(t)φ(t)ᵀ dt``: ``(M, M)``, symmetric positive semi-definite, additive over boxes."""
        minus = _pair_fourier(self.u, window, -1.0)  # at u_j − u_k, (M2, M2)
        plus = _pair_fourier(self.u, window, 1.0)  # at u_j + u_k
        re_m, im_m, re_p, im_p = minus.real, minus.imag, plus.real, plus.imag
        cc = 0.5 * (re_m + re_p)
        ss = 0.5 * (re_m - re_p)
        cs = 0.5 * (im_p - im_m)  # ∫ cos(u_j·t) sin(u_k·t)
        out = np.block([[cc, cs], [cs.T, ss]]) / self.m2
        return 0.5 * (out + out.T)


_SPECTRAL = {"gaussian": (stats.norm, {"scale": np.sqrt(2.0)}), "laplace": (stats.cauchy, {}),
             "cauchy": (stats.laplace, {})}
_FREQ_CACHE: dict[tuple, np.ndarray] = {}


def unit_frequencies(kernel: str, d: int, m2: int, *, qmc: bool, seed: int) -> np.ndarray:
    """``(m2, d)`` frequencies of the unit-scale kernel (spectral density sample), QMC or i.i.d.

    Memoised on ``(kernel, d, m2, qmc, seed)`` (read-only result): the draw is deterministic, and hold-out selection
    builds the same features for every grid point and split (drawing them anew was a third of K²IE's selection
    time)."""
    check_kernel(kernel)
    key = (kernel, int(d), int(m2), bool(qmc), int(seed))
    hit = _FREQ_CACHE.get(key)
    if hit is not None:
        return hit
    dist, kw = _SPECTRAL[kernel]
    if qmc:
        u = stats.qmc.Halton(d=d, scramble=True, seed=seed).random(m2)
        u = np.clip(u, 1e-12, 1 - 1e-12)
        out = dist.ppf(u, **kw)
    else:
        out = dist.rvs(size=(m2, d), random_state=np.random.default_rng(seed), **kw)
    out = np.asarray(out, dtype=np.float64)
    out.setflags(write=False)
    if len(_FREQ_CACHE) >= 64:
        _FREQ_CACHE.pop(next(iter(_FREQ_CACHE)))
    _FREQ_CACHE[key] = out
    return out


_GRAM_CACHE: dict[tuple, np.ndarray] = {}
_GRAM_CACHE_SIZE = 16


def cached_gram(features: RandomFourierFeatures, window: Window) -> np.ndarray:
    """``features.gram_integral(window)``, memoised on (kernel, b, M, qmc, seed, boxes): hold-out selection refits
    on the same window many times and ``Φ_T`` does not depend on the points or on ``a``. Read-only result."""
    key = (features.kernel, features.b.tobytes(), features.n_features, features.qmc, features.seed,
           window.boxes.tobytes(), window.boxes.shape)
    gram = _GRAM_CACHE.get(key)
    if gram is None:
        gram = features.gram_integral(window)
        gram.setflags(write=False)
        if len(_GRAM_CACHE) >= _GRAM_CACHE_SIZE:
            _GRAM_CACHE.pop(next(iter(_GRAM_CACHE)))
        _GRAM_CACHE[key] = gram
    return gram


def clear_cache() -> None:
    """Forget every memoised ``Φ_T`` and frequency draw (timings start from a cold cache)."""
    _GRAM_CACHE.clear()
    _FREQ_CACHE.clear()
