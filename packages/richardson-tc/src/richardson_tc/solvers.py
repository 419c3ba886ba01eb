"""Solvers of one ALS block: full-data structured solvers (the lifting black boxes) and direct masked solvers.

Full-data (black-box) solvers, each a callable ``target -> x`` with ``.predict(x) -> A x``:

* :class:`CPModeSolver` — CP-ALS mode-``n`` step ``A^{(n)} = X_(n) K_n (K_nᵀK_n)⁻¹`` on an unfolded target
  ``[I_n, J]``; Gram = Hadamard product of factor Grams, Cholesky-factored once per ALS step.
* :class:`KroneckerSolver` — Tucker core regression ``min_𝒢 ‖(U_1 ⊗ … ⊗ U_N) vec 𝒢 − vec 𝒯‖``, solved by
  ``𝒢 = 𝒯 ×_1 U_1⁺ … ×_N U_N⁺`` with ``U⁺ = (UᵀU)⁻¹Uᵀ`` (never forming the Kronecker product).
* :class:`TTCoreSolver` — tensor-train ALS core update: with the other cores fixed the model is
  ``𝒳[p, i, q] = Σ_{a,b} L[p, a] 𝒢_k[a, i, b] R[b, q]`` (``L`` [∏_{j<k} I_j, r_{k−1}] the left interface, ``R``
  [r_k, ∏_{j>k} I_j] the right one), a regression with the Kronecker design ``L ⊗ I ⊗ Rᵀ``, solved by
  ``𝒢_k = L⁺ ×_1 𝒯 ×_3 R⁺`` without forming the design.
* :class:`SampledCPModeSolver` — the mode-``n`` step on ``s`` rows of ``K_n`` drawn from the product of the factors'
  leverage-score distributions (``ℓ_{K}(j) ≤ ∏_k ℓ_k(j_k)``), reweighted by ``1/(s q_j)``; it reads only the sampled
  mode-``n`` fibres of the lifted target, so one step costs O(s I_n R + R³), sublinear in ∏ I_k.

Direct masked solver (:func:`masked_lstsq`) of ``min_{A^{(n)}} Σ_{i∈Ω} (x_i − ⟨A^{(n)}[i_n], z_i⟩)²`` with design
rows ``z_i = ∗_{k≠n} A^{(k)}[i_k]``: one R × R system per row of ``A^{(n)}``,
``(Σ_{i∈Ω, i_n=r} z_i z_iᵀ + λI) a_r = Σ x_i z_i`` — vectorised (entries sorted by their mode-``n`` index, Grams
formed by one batched product over zero-padded groups, one batched solve) or the official per-entry Python loop (``loop=True``).
Both use Cholesky (``method="cholesky"``, per-row ``lstsq`` fallback for singular rows) or ``lstsq``, never pinv.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from richardson_tc.cp import gram_hadamard, khatri_rao_except
from richardson_tc.data import ObservedEntries
from richardson_tc.errors import RichardsonTcError

METHODS = ("cholesky", "lstsq")


class _GramSolve:
    """``G⁻¹ B`` for an R × R Gram ``G`` (+ ridge): Cholesky, or ``lstsq`` with a relative cut-off if singular."""

    def __init__(self, gram: np.ndarray, ridge: float = 0.0) -> None:
        r = gram.shape[0]
        self.gram = gram + ridge * np.eye(r)
        self.singular = False
        try:
            self.cho = cho_factor(self.gram, lower=True)
        except np.linalg.LinAlgError:
            self.cho, self.singular = None, True

    def __call__(self, rhs: np.ndarray) -> np.ndarray:
        """``G⁻¹ rhs`` for ``rhs [R, m]``."""
        if self.cho is not None:
            return cho_solve(self.cho, rhs)
        return np.linalg.lstsq(self.gram, rhs, rcond=1e-12)[0]


class CPModeSolver:
    """Full-data CP-ALS mode-``n`` solver: ``target [I_n, J] -> A^{(n)} = target K_n (K_nᵀK_n + λI)⁻¹`` [I_n, R]."""

    def __init__(self, factors: Sequence[np.ndarray], mode: int, *, ridge: float = 0.0) -> None:
        self.mode = mode
        self.k = khatri_rao_except(factors, mode)  # [J, R]
        self.solve_gram = _GramSolve(gram_hadamard(factors, mode), ridge)

    def __call__(self, target: np.ndarray) -> np.ndarray:
        return self.solve_gram((target @ self.k).T).T  # MTTKRP [I_n, R], then the R × R solve

    def predict(self, a: np.ndarray) -> np.ndarray:
        return a @ self.k.T  # [I_n, J]


class KroneckerSolver:
    """Full-data Tucker core solver: ``target [I_1, …, I_N] -> 𝒢 [r_1, …, r_N]`` for the design ``⊗_k U_k``."""

    def __init__(self, factors: Sequence[np.ndarray], *, ridge: float = 0.0) -> None:
        self.factors = [np.asarray(u, dtype=np.float64) for u in factors]
        self.pinvs = [_GramSolve(u.T @ u, ridge)(u.T) for u in self.factors]  # U⁺ = (UᵀU)⁻¹Uᵀ [r_k, I_k]

    def __call__(self, target: np.ndarray) -> np.ndarray:
        from tensorly.tenalg import multi_mode_dot

        return multi_mode_dot(target, self.pinvs)

    def predict(self, core: np.ndarray) -> np.ndarray:
        from tensorly.tenalg import multi_mode_dot

        return multi_mode_dot(core, self.factors)


class TTCoreSolver:
    """Full-data TT-ALS core solver: ``target [I_1, …, I_N] -> 𝒢_k [r_{k−1}, I_k, r_k]`` (the other cores fixed).

    ``cores[j]`` has shape ``[r_{j−1}, I_j, r_j]`` with ``r_0 = r_N = 1`` (tensorly's TT convention).
    """

    def __init__(self, cores: Sequence[np.ndarray], k: int, *, ridge: float = 0.0) -> None:
        cores = [np.asarray(c, dtype=np.float64) for c in cores]
        if not 0 <= k < len(cores):
            raise RichardsonTcError(f"k must be in [0, {len(cores)}), got {k}")
        self.k, self.shape = k, tuple(c.shape[1] for c in cores)
        left = np.ones((1, 1))  # [∏_{j<k} I_j, r_{k−1}]
        for c in cores[:k]:
            left = (left @ c.reshape(c.shape[0], -1)).reshape(-1, c.shape[2])
        right = np.ones((1, 1))  # [r_k, ∏_{j>k} I_j]
        for c in reversed(cores[k + 1:]):
            right = (c.reshape(-1, c.shape[2]) @ right).reshape(c.shape[0], -1)
        self.left, self.right = left, right
        self.left_pinv = _GramSolve(left.T @ left, ridge)(left.T)  # (LᵀL)⁻¹Lᵀ  [r_{k−1}, P]
        self.right_pinv = _GramSolve(right @ right.T, ridge)(right).T  # Rᵀ(RRᵀ)⁻¹  [Q, r_k]
        self.core_shape = (left.shape[1], self.shape[k], right.shape[0])

    def __call__(self, target: np.ndarray) -> np.ndarray:
        t = np.asarray(target).reshape(self.left.shape[0], self.shape[self.k], self.right.shape[1])  # [P, I_k, Q]
        return np.einsum("ap,piq,qb->aib", self.left_pinv, t, self.right_pinv, optimize=True)

    def predict(self, core: np.ndarray) -> np.ndarray:
        out = np.einsum("pa,aib,bq->piq", self.left, core, self.right, optimize=True)
        return out.reshape(self.shape)


def leverage_scores(a: np.ndarray) -> np.ndarray:
    """Row leverage scores ``ℓ_i = ‖Q_i‖²`` of ``a [I, R]`` (thin QR; they sum to rank(a))."""
    q, _ = np.linalg.qr(a)
    return np.sum(q * q, axis=1)


class SampledCPModeSolver:
    """Leverage-score sampled CP mode-``n`` step, reading only the sampled fibres of the lifted target.

    Rows ``j = (j_k)_{k≠n}`` of ``K_n`` are drawn i.i.d. from ``q(j) = ∏_{k≠n} ℓ_k(j_k)/Σℓ_k`` (each index from its
    factor's leverage distribution); repeated draws are merged. With weights ``w_j = c_j/(s q(j))`` (c_j the
    multiplicity) the step is ``A^{(n)} = (T_S W Z)(Zᵀ W Z + λI)⁻¹``, ``Z = K_n[S]`` [s', R], ``T_S`` the lifted
    target's columns S [I_n, s']. If ``s`` reaches ``J`` the exact solve is used instead.
    """

    def __init__(self, factors: Sequence[np.ndarray], mode: int, *, n_samples: int, rng: np.random.Generator,
                 ridge: float = 0.0) -> None:
        self.mode, self.factors, self.ridge, self.rng = mode, list(factors), ridge, rng
        self.others = [k for k in range(len(factors)) if k != mode]
        self.dims = [factors[k].shape[0] for k in self.others]
        self.probs = []
        for k in self.others:
            lev = leverage_scores(factors[k])
            self.probs.append(lev / lev.sum())
        self.n_samples = int(n_samples)

    def draw(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sampled unfolding columns ``cols [s']``, their design rows ``Z [s', R]`` and weights ``w [s']``."""
        s = self.n_samples
        idx = [self.rng.choice(d, size=s, p=pr) for d, pr in zip(self.dims, self.probs)]
        q = np.prod([pr[i] for pr, i in zip(self.probs, idx)], axis=0)  # [s]
        cols = np.ravel_multi_index(tuple(idx), tuple(self.dims))  # unfolding column ids (C order)
        uniq, first, counts = np.unique(cols, return_index=True, return_counts=True)
        w = counts / (s * q[first])
        z = np.ones((uniq.size, self.factors[0].shape[1]))
        for k, i in zip(self.others, idx):
            z *= self.factors[k][i[first]]
        return uniq, z, w

    def solve(self, fibres: np.ndarray, z: np.ndarray, w: np.ndarray) -> np.ndarray:
        """``A^{(n)}`` from the lifted target's sampled columns ``fibres [I_n, s']``."""
        zw = z * w[:, None]
        return _GramSolve(z.T @ zw, self.ridge)((fibres @ zw).T).T


def _solve_rows(grams: np.ndarray, rhs: np.ndarray, counts: np.ndarray, prev: np.ndarray, *, method: str,
                ridge: float) -> np.ndarray:
    """Solve ``grams[r] a_r = rhs[r]`` for every row ``r`` with observations; rows without any keep ``prev``."""
    n, r = rhs.shape
    out = prev.astype(np.float64, copy=True)
    rows = np.flatnonzero(counts > 0)
    g = grams[rows] + ridge * np.eye(r)
    b = rhs[rows]
    if method == "cholesky":
        try:
            chol = np.linalg.cholesky(g)  # [m, R, R], raises if any Gram is not positive definite
        except np.linalg.LinAlgError:
            chol = None
        if chol is not None:
            y = np.linalg.solve(chol, b[..., None])
            out[rows] = np.linalg.solve(np.swapaxes(chol, 1, 2), y)[..., 0]
            return out
    for j, row in enumerate(rows):  # lstsq (method="lstsq", or singular rows): minimum-norm, relative cut-off
        out[row] = np.linalg.lstsq(g[j], b[j], rcond=1e-12)[0]
    return out


def masked_lstsq(
    observed: ObservedEntries,
    factors: Sequence[np.ndarray],
    mode: int,
    *,
    ridge: float = 0.0,
    method: str = "cholesky",
    loop: bool = False,
) -> np.ndarray:
    """Direct solve of the masked mode-``mode`` regression (module docstring); returns the new ``A^{(n)}`` [I_n, R].

    ``observed`` holds Ω (``ObservedEntries.from_mask(tensor, mask)`` or ``.from_coo``); ``loop=True`` runs the
    official-style per-entry Python loop (same solution, much slower). Rows of ``A^{(n)}`` with no observed entry
    keep their current value.
    """
    if method not in METHODS:
        raise RichardsonTcError(f"method must be one of {METHODS}, got {method!r}")
    if not (0 <= mode < len(factors)):
        raise RichardsonTcError(f"mode must be in [0, {len(factors)}), got {mode}")
    if ridge < 0 or not np.isfinite(ridge):
        raise RichardsonTcError(f"ridge must be a finite number >= 0, got {ridge}")
    n_rows, r = factors[mode].shape
    grams = np.zeros((n_rows, r, r))
    rhs = np.zeros((n_rows, r))
    counts = np.zeros(n_rows, dtype=np.int64)
    if loop:
        coords, values = observed.coords, observed.values
        rows_z: dict[int, list[np.ndarray]] = {}
        rows_x: dict[int, list[float]] = {}
        for t in range(coords.shape[0]):  # one Python iteration per observed entry, as the released code
            z = np.ones(r)
            for k in range(len(factors)):
                if k != mode:
                    z = z * factors[k][coords[t, k]]
            i = int(coords[t, mode])
            rows_z.setdefault(i, []).append(z)
            rows_x.setdefault(i, []).append(values[t])
        for i, zs in rows_z.items():
            zm = np.asarray(zs)
            grams[i] = zm.T @ zm
            rhs[i] = zm.T @ np.asarray(rows_x[i])
            counts[i] = len(zs)
    else:
        g = observed.by_mode(mode)
        counts, width = g.counts, g.width
        z = np.ones((g.coords.shape[0], r))
        for k in range(len(factors)):
            if k != mode:
                z *= factors[k][g.coords[:, k]]  # design rows z_i [m, R], entries sorted by their mode-n index
        # group by the mode-n index: zero-pad each row's entries to the longest group, one batched product
        zp = np.zeros((n_rows * width, r))
        zp[g.slot] = z
        zp = zp.reshape(n_rows, width, r)  # [I_n, max count, R]
        xp = np.zeros(n_rows * width)
        xp[g.slot] = g.values
        grams = np.matmul(np.swapaxes(zp, 1, 2), zp)  # Σ_{i: i_n = row} z_i z_iᵀ  [I_n, R, R]
        rhs = np.matmul(np.swapaxes(zp, 1, 2), xp.reshape(n_rows, width, 1))[..., 0]  # Σ x_i z_i  [I_n, R]
    return _solve_rows(grams, rhs, counts, factors[mode], method=method, ridge=ridge)


def cp_block_radius(factors: Sequence[np.ndarray], mode: int, mask_unfolded: np.ndarray) -> float:
    """Spectral radius ``ρ(M)`` of the lifted iteration's error map for a CP mode-``mode`` block.

    ``(AᵀA)⁻¹ = (K_nᵀK_n)⁻¹`` acts on each row of ``A^{(n)}`` separately, so ``M`` is block diagonal with blocks
    ``I − G⁻¹ G_Ω,i`` (``G = K_nᵀK_n``, ``G_Ω,i = Σ_{j observed in row i} z_j z_jᵀ``) and
    ``ρ = max_i (1 − λ_min(G_Ω,i, G))`` (generalised symmetric eigenvalues). ``mask_unfolded`` is ``[I_n, J]``.
    """
    from scipy.linalg import eigh

    k = khatri_rao_except(factors, mode)
    g = k.T @ k
    rho = 0.0
    for row in np.asarray(mask_unfolded, dtype=bool):
        ko = k[row]
        lam = eigh(ko.T @ ko, g, eigvals_only=True)
        rho = max(rho, 1.0 - float(lam.min()))
    return rho
