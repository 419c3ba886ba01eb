"""CP completion by ALS with a choice of block solver: lifted (approximate) Richardson, direct, or EM-ALS.

``cp_complete(tensor, mask, rank=R)`` minimises ``Σ_{i∈Ω} (𝒳_i − [[A^{(1)}, …, A^{(N)}]]_i)²`` by sweeping over the
modes (``n_sweeps`` ALS sweeps, the official ``NUM_ITERATIONS = 10``); each mode step is the masked regression of
:mod:`richardson_tc.solvers`, solved by

* ``"lifted"`` — :func:`~richardson_tc.richardson.lifted_richardson` with the CP-ALS step as the black box
  (exact, or leverage-score sampled with ``sampled=True``), warm-started at the current factor;
* ``"em"`` — one lifted update per step (EM-ALS, Tomasi & Bro 2005);
* ``"direct"`` / ``"direct-loop"`` — the exact masked solve, vectorised or as the official per-entry loop.

The initialisation is the official ``A^{(k)} ~ N(0, 0.1²)`` (seeded by ``seed``); all solvers share it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from richardson_tc.cp import cp_reconstruct, init_factors, relative_error, unfold
from richardson_tc.data import ObservedEntries, check_tensor_and_mask
from richardson_tc.errors import RichardsonTcError
from richardson_tc.richardson import Observed, Stopper, check_max_inner, check_tol, lifted_richardson
from richardson_tc.solvers import METHODS, CPModeSolver, SampledCPModeSolver, masked_lstsq

SOLVERS = ("lifted", "direct", "direct-loop", "em")
MAX_ENTRIES = 50_000_000
"""Default cap on ∏ I_k for the lifted/EM solvers: they rebuild the full tensor at every inner step and keep
unfolded copies of the data and mask (about 3 × 8 bytes per entry)."""


@dataclass
class History:
    """What a :func:`cp_complete` run did.

    ``steps``: one dict per ALS step (``sweep``, ``mode``, ``updates`` of the inner loop, ``jumps``, ``seconds``);
    ``sweeps``: one dict per sweep (``train_rre`` on Ω, ``test_rre`` on the held-out complement of Ω where the
    tensor is finite, ``whole_rre`` over every entry — the official "test" metric —, cumulative ``seconds``);
    ``setup_seconds``: one-off preparation (unfoldings, or sorting Ω by mode), included in ``seconds``.
    RREs are ``‖𝒳 − 𝒳̂‖/‖𝒳‖`` (not squared).
    """

    solver: str
    rank: int
    steps: list[dict[str, Any]] = field(default_factory=list)
    sweeps: list[dict[str, Any]] = field(default_factory=list)
    setup_seconds: float = 0.0
    seconds: float = 0.0
    singular_grams: int = 0

    @property
    def inner_updates(self) -> list[int]:
        return [s["updates"] for s in self.steps]

    @property
    def step_seconds(self) -> list[float]:
        return [s["seconds"] for s in self.steps]

    def final(self, key: str = "test_rre") -> float:
        return float(self.sweeps[-1][key]) if self.sweeps else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {"solver": self.solver, "rank": self.rank, "steps": self.steps, "sweeps": self.sweeps,
                "setup_seconds": self.setup_seconds, "seconds": self.seconds, "singular_grams": self.singular_grams}


def _check_int(name: str, v: Any, low: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
        raise RichardsonTcError(f"{name} must be an integer >= {low}, got {v!r}")
    return int(v)


def default_n_samples(rank: int) -> int:
    """Rows drawn per sampled inner step: ``64·R``, our choice (see the README: the paper's sampling constants are
    not reproduced here; the official Kronecker code uses 200·d² for a d²-column design)."""
    return 64 * rank


def cp_complete(
    tensor: np.ndarray,
    mask: np.ndarray,
    *,
    rank: int,
    solver: str = "lifted",
    tol: float = 1e-3,
    max_inner: int = 1024,
    accelerate: bool = False,
    sampled: bool = False,
    n_sweeps: int = 10,
    seed: int = 0,
    stop_rule: str = "step",
    ridge: float = 0.0,
    method: str = "cholesky",
    n_samples: int | None = None,
    init: list[np.ndarray] | None = None,
    max_entries: int = MAX_ENTRIES,
    track_error: bool = True,
):
    """Rank-``rank`` CP completion of ``tensor`` from the entries where ``mask`` is True.

    Args:
        tensor: float array ``[I_1, …, I_N]`` (N ≥ 2); entries outside ``mask`` are never read by the solvers
            (they may be NaN) and, where finite, score the held-out error.
        mask: boolean array of the same shape (Ω).
        rank: CP rank R ≥ 1.
        solver: ``"lifted"`` (default), ``"direct"``, ``"direct-loop"`` or ``"em"``.
        tol: ε of the inner stop rule, in (0, 1) (lifted only).
        max_inner: cap on inner updates per ALS step (lifted only; the official 1024).
        accelerate: geometric-series extrapolation of the inner iterates (lifted only).
        sampled: leverage-score sampled inner solves (lifted only; ``n_samples`` rows per step).
        n_sweeps: ALS sweeps over all modes (official 10).
        seed: seed of the N(0, 0.1²) initialisation and of the row sampling.
        stop_rule: ``"step"`` (convergence of the block, default) or ``"official"`` (relative loss decrease).
        ridge: optional ridge λ ≥ 0 on every block regression (official 0).
        method: ``"cholesky"`` or ``"lstsq"`` for the direct solvers' R × R systems.
        init: optional starting factors ``[I_k, R]``.
        max_entries: refuse lifted/EM on tensors larger than this (full tensor rebuilt per inner step).
        track_error: compute train/held-out RRE after each sweep (not timed).

    Returns:
        ``(tl.cp_tensor.CPTensor, History)``.
    """
    from tensorly.cp_tensor import CPTensor

    tensor, mask = check_tensor_and_mask(tensor, mask)
    rank = _check_int("rank", rank)
    n_sweeps = _check_int("n_sweeps", n_sweeps)
    if solver not in SOLVERS:
        raise RichardsonTcError(f"solver must be one of {SOLVERS}, got {solver!r}")
    if method not in METHODS:
        raise RichardsonTcError(f"method must be one of {METHODS}, got {method!r}")
    check_tol(tol)
    check_max_inner(max_inner)
    stopper = Stopper(stop_rule, tol)
    if not (np.isfinite(ridge) and ridge >= 0):
        raise RichardsonTcError(f"ridge must be a finite number >= 0, got {ridge!r}")
    if sampled and solver != "lifted":
        raise RichardsonTcError(f"sampled=True needs solver='lifted', got solver={solver!r}")
    if sampled and accelerate:
        raise RichardsonTcError("sampled=True cannot be combined with accelerate=True (extrapolating sampling noise "
                                "diverges)")
    if sampled and stop_rule != "step":
        raise RichardsonTcError("sampled=True supports stop_rule='step' only (the loss needs the full tensor)")
    shape = tensor.shape
    size = int(np.prod(shape))
    if solver in ("lifted", "em") and size > max_entries:
        raise RichardsonTcError(
            f"tensor has {size} entries > max_entries={max_entries}: lifting rebuilds the full tensor at every inner "
            f"step (about {24 * size / 2**20:,.0f} MiB of working arrays); raise max_entries or use solver='direct'")
    if init is None:
        factors = init_factors(shape, rank, seed=seed)
    else:
        if len(init) != len(shape) or any(np.shape(a) != (s, rank) for a, s in zip(init, shape)):
            raise RichardsonTcError(f"init must be {len(shape)} factors of shapes [I_k, {rank}] for shape {shape}")
        factors = [np.array(a, dtype=np.float64) for a in init]
    rng = np.random.default_rng(seed + 7919)
    hist = History(solver=("lifted-sampled" if sampled else solver), rank=rank)
    test_where = ~mask & np.isfinite(tensor)
    t_start = time.perf_counter()
    if solver in ("direct", "direct-loop"):
        obs = ObservedEntries.from_mask(tensor, mask)
        if solver == "direct":
            for n in range(len(shape)):
                obs.by_mode(n)  # sort Ω by each mode once (the official code times this as "step 0")
    else:
        clean = np.where(mask, tensor, 0.0)
        x_unf = [unfold(clean, n) for n in range(len(shape))]  # [I_n, J]
        m_unf = [unfold(mask, n) for n in range(len(shape))]
        prepared = [Observed.prepare(m_unf[n], x_unf[n]) for n in range(len(shape))]  # Ω checked once
    hist.setup_seconds = time.perf_counter() - t_start
    elapsed = hist.setup_seconds
    for sweep in range(n_sweeps):
        for n in range(len(shape)):
            t0 = time.perf_counter()
            updates, jumps = 1, 0
            if solver == "direct":
                factors[n] = masked_lstsq(obs, factors, n, ridge=ridge, method=method)
            elif solver == "direct-loop":
                factors[n] = masked_lstsq(obs, factors, n, ridge=ridge, method=method, loop=True)
            elif sampled:
                factors[n], updates, jumps = _sampled_block(
                    factors, n, x_unf[n], m_unf[n], stopper=stopper, max_inner=max_inner,
                    n_samples=n_samples or default_n_samples(rank), rng=rng, ridge=ridge)
            else:
                block = CPModeSolver(factors, n, ridge=ridge)
                hist.singular_grams += int(block.solve_gram.singular)
                res = lifted_richardson(block, factors[n], prepared[n], tol=tol,
                                        max_inner=1 if solver == "em" else max_inner,
                                        accelerate=accelerate and solver != "em", stop_rule=stop_rule)
                factors[n], updates, jumps = res.x, res.updates, res.jumps
            dt = time.perf_counter() - t0
            elapsed += dt
            hist.steps.append({"sweep": sweep, "mode": n, "updates": updates, "jumps": jumps, "seconds": dt})
        rec: dict[str, Any] = {"sweep": sweep, "seconds": elapsed}
        if track_error:
            full = cp_reconstruct(factors)
            rec["train_rre"] = relative_error(tensor, full, mask)
            rec["test_rre"] = relative_error(tensor, full, test_where) if test_where.any() else float("nan")
            rec["whole_rre"] = (relative_error(tensor, full) if np.isfinite(tensor).all() else float("nan"))
        hist.sweeps.append(rec)
    hist.seconds = elapsed
    return CPTensor((np.ones(rank), factors)), hist


def _sampled_block(factors, n, x_unf, m_unf, *, stopper, max_inner, n_samples, rng, ridge):
    """Inner loop of the leverage-sampled lifted solver: fresh samples every update; it stops on the step rule or
    when the step norms stop shrinking (the sampling-noise floor, :func:`_stagnated`)."""
    x = factors[n]
    j_total = x_unf.shape[1]
    if n_samples >= j_total:  # sampling would read everything: the exact block is cheaper
        res = lifted_richardson(CPModeSolver(factors, n, ridge=ridge), x, (m_unf, x_unf), tol=stopper.tol,
                                max_inner=max_inner)
        return res.x, res.updates, res.jumps
    solver = SampledCPModeSolver(factors, n, n_samples=n_samples, rng=rng, ridge=ridge)
    norms: list[float] = []
    updates = 0
    for _ in range(max_inner):
        cols, z, w = solver.draw()
        fib = np.where(m_unf[:, cols], x_unf[:, cols], x @ z.T)  # lifted target on the sampled fibres [I_n, s']
        x_plain = solver.solve(fib, z, w)
        updates += 1
        norms.append(float(np.linalg.norm(x_plain - x)))
        x = x_plain
        if stopper.by_step(norms, float(np.linalg.norm(x_plain))) or _stagnated(norms):
            break
    return x, updates, 0


STAGNATION_WINDOW = 4


def _stagnated(norms: list[float], w: int = STAGNATION_WINDOW) -> bool:
    """True when the mean of the last ``w`` step norms is not below the mean of the ``w`` before: with fresh samples
    per update the iterates reach a noise floor where the step rule alone would run to ``max_inner``."""
    if len(norms) < 2 * w:
        return False
    return float(np.mean(norms[-w:])) >= float(np.mean(norms[-2 * w:-w]))
