"""Lifting + (approximate) Richardson iteration with a black-box full-data solver (Ghadiri et al., ICML 2025, §3).

The tensor-completion regression ``min_x ‖S(Ax − b)‖²`` (S keeps the observed rows Ω) has lost the structure of A.
*Lifting* fills the unobserved rows with the current model and solves the *full* structured regression:

    b̃^{(t)} = SᵀS b + (I − SᵀS) A x^{(t)},    x^{(t+1)} = argmin_x ‖Ax − b̃^{(t)}‖² = (AᵀA)⁻¹Aᵀ b̃^{(t)}

i.e. ``x^{(t+1)} = x^{(t)} + (AᵀA)⁻¹ A_Ωᵀ (b_Ω − A_Ω x^{(t)})``: Richardson iteration on the TC normal equations,
preconditioned by ``(AᵀA)⁻¹``. The error map is ``e^{(t+1)} = M e^{(t)}``, ``M = (AᵀA)⁻¹ A_Ω̄ᵀ A_Ω̄``, self-adjoint in
the ``AᵀA`` inner product, with spectral radius ``ρ = 1 − λ_min((AᵀA)^{-1/2} A_ΩᵀA_Ω (AᵀA)^{-1/2}) < 1`` iff A_Ω has
full column rank (ρ ≈ 1 − p for uniform sampling at rate p and an incoherent A). One update is EM-ALS
(Tomasi & Bro, 2005).

``full_solve(target) -> x`` is any solver of the full regression (exact, or approximate, e.g. leverage-score
sampled); ``predict(x) -> A x`` gives the model in the target's shape.

Stopping (``stop_rule``):

* ``"step"`` (default): stop when the estimated distance to the limit, ``ρ̂‖Δx_t‖/(1 − ρ̂)`` with
  ``ρ̂ = ‖Δx_t‖/‖Δx_{t−1}‖`` (clamped to ≤ 0.99), is at most ``tol·‖x_t‖`` — a convergence test on the block;
* ``"official"``: the released code's rule, stop when the relative decrease of the training loss
  ``1 − L_t/L_{t−1} < tol`` (also on an increase). It certifies only an excess of about tol/(2p) of the loss
  and often stops after one update (the package README, "Deviations").

Acceleration (``accelerate=True``): after two consecutive plain updates, ``α = ‖Δx_t‖/‖Δx_{t−1}‖`` (clamped
≤ 0.99) and the iterate jumps to the limit of the geometric series, ``x ← x_{t−1} + (x_t − x_{t−1})/(1 − α)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from richardson_tc.errors import RichardsonTcError

ALPHA_MAX = 0.99
"""Clamp of the estimated contraction α (the official code has no guard: α ≥ 1 divides by ≤ 0)."""
STOP_RULES = ("step", "official")


@dataclass
class RichardsonResult:
    """Outcome of :func:`lifted_richardson`.

    ``updates``: calls of ``full_solve`` (the official logs count loss evaluations = updates + 1);
    ``losses``: training loss ``‖b_Ω − (Ax)_Ω‖²`` before each update and after the last one (when tracked);
    ``step_norms``: ``‖Δx_t‖`` of each plain update; ``jumps``: accelerated extrapolations made;
    ``reason``: why it stopped (``"converged"``, ``"max_inner"``, ``"complete"`` when Ω is everything).
    """

    x: np.ndarray
    updates: int
    losses: list[float] = field(default_factory=list)
    step_norms: list[float] = field(default_factory=list)
    jumps: int = 0
    reason: str = ""

    @property
    def evaluations(self) -> int:
        """The official code's count (loss evaluations): updates + 1."""
        return self.updates + 1


def check_tol(tol: float, name: str = "tol") -> None:
    if not (isinstance(tol, (int, float)) and not isinstance(tol, bool) and 0 < tol < 1):
        raise RichardsonTcError(f"{name} (ε) must be in (0, 1), got {tol!r}")


def check_max_inner(max_inner: int) -> None:
    if not (isinstance(max_inner, (int, np.integer)) and not isinstance(max_inner, bool) and max_inner >= 1):
        raise RichardsonTcError(f"max_inner must be an integer >= 1, got {max_inner!r}")


def aitken_jump(x_prev: np.ndarray, x_new: np.ndarray, alpha: float) -> np.ndarray:
    """``x_{t−1} + (x_t − x_{t−1})/(1 − α)``: the limit of a sequence whose errors shrink by ``α`` per step
    (exact for an exactly geometric sequence); ``α`` is clamped to ``[0, ALPHA_MAX]``."""
    a = min(max(float(alpha), 0.0), ALPHA_MAX)
    return x_prev + (x_new - x_prev) / (1.0 - a)


def rho_hat(step_norms: list[float]) -> float | None:
    """Contraction estimate ``‖Δx_t‖/‖Δx_{t−1}‖`` from the last two plain steps (clamped), or ``None``."""
    if len(step_norms) < 2 or step_norms[-2] <= 0:
        return None
    return min(step_norms[-1] / step_norms[-2], ALPHA_MAX)


class Stopper:
    """The two stopping rules, shared by the exact and the sampled inner loops."""

    def __init__(self, rule: str, tol: float) -> None:
        if rule not in STOP_RULES:
            raise RichardsonTcError(f"stop_rule must be one of {STOP_RULES}, got {rule!r}")
        check_tol(tol)
        self.rule, self.tol = rule, float(tol)

    @property
    def needs_loss(self) -> bool:
        return self.rule == "official"

    def by_step(self, step_norms: list[float], x_norm: float) -> bool:
        last = step_norms[-1]
        if last == 0.0:
            return True
        r = rho_hat(step_norms)
        if r is None:
            return False
        return r * last / (1.0 - r) <= self.tol * x_norm

    def by_loss(self, prev_loss: float, loss: float) -> bool:
        if prev_loss <= 0.0:
            return True
        return 1.0 - loss / prev_loss < self.tol


@dataclass(frozen=True)
class Observed:
    """Ω prepared once for many :func:`lifted_richardson` calls: ``mask`` (bool) and ``b_obs`` (float64, the
    observed values on Ω and 0 elsewhere), validated once (same shape, Ω non-empty, finite values). ALS calls the
    inner solver once per mode and sweep on the same Ω: preparing it once removes the per-call passes over the full
    array (rebuilding ``b_obs``, the finiteness check) that otherwise dominate EM-ALS's time."""

    mask: np.ndarray
    b_obs: np.ndarray

    @classmethod
    def prepare(cls, mask: np.ndarray, values: np.ndarray) -> Observed:
        mask, values = np.asarray(mask, dtype=bool), np.asarray(values, dtype=np.float64)
        if mask.shape != values.shape:
            raise RichardsonTcError(f"observed mask {mask.shape} and values {values.shape} differ in shape")
        if not mask.any():
            raise RichardsonTcError("observed mask is empty (empty Ω)")
        b_obs = np.where(mask, values, 0.0)
        if not np.isfinite(b_obs).all():
            raise RichardsonTcError("observed values contain NaN or inf")
        return cls(mask=mask, b_obs=b_obs)


def lifted_richardson(
    full_solve: Callable[[np.ndarray], np.ndarray],
    x0: np.ndarray,
    observed: tuple[np.ndarray, np.ndarray] | Observed,
    *,
    predict: Callable[[np.ndarray], np.ndarray] | None = None,
    tol: float = 1e-3,
    max_inner: int = 1024,
    accelerate: bool = False,
    stop_rule: str = "step",
    track_loss: bool = False,
) -> RichardsonResult:
    """Solve ``min_x ‖(b − A x)_Ω‖²`` by lifting: ``x ← full_solve(fill(b_Ω, A x))`` until the stop rule fires.

    Args:
        full_solve: black-box solver of the *full* regression ``argmin_x ‖A x − target‖²``; ``target`` has the
            shape of ``observed``'s arrays, the result the shape of ``x0``. ``full_solve.predict`` is used
            when ``predict`` is not given.
        x0: starting point (e.g. the current factor of an ALS step).
        observed: ``(mask, values)`` in the target's shape (entries of ``values`` outside ``mask`` are ignored), or
            an :class:`Observed` prepared once for repeated calls on the same Ω (no per-call pass over the data).
        predict: ``x -> A x`` in the target's shape.
        tol: ε of the stop rule, in (0, 1).
        max_inner: at most this many updates (≥ 1); ``max_inner=1`` is EM-ALS.
        accelerate: geometric-series jumps (module docstring).
        stop_rule: ``"step"`` (default) or ``"official"``.
        track_loss: record the training loss at every iterate (always on for the official rule).

    When ``mask`` observes everything, one update is exact and the loop stops after it (no confirming update).
    """
    check_tol(tol)
    check_max_inner(max_inner)
    stopper = Stopper(stop_rule, tol)
    predict = predict if predict is not None else getattr(full_solve, "predict", None)
    if predict is None:
        raise RichardsonTcError("predict is required (or a full_solve with a .predict method)")
    if not isinstance(observed, Observed):
        observed = Observed.prepare(observed[0], observed[1])
    mask, b_obs = observed.mask, observed.b_obs
    x = np.asarray(x0, dtype=np.float64)

    def _solve(target: np.ndarray) -> np.ndarray:
        out = np.asarray(full_solve(target))
        if out.shape != x.shape:
            raise RichardsonTcError(f"full_solve returned shape {out.shape}, expected {x.shape} (the shape of x0)")
        return out

    def _predict(v: np.ndarray) -> np.ndarray:
        y = np.asarray(predict(v))
        if y.shape != mask.shape:
            raise RichardsonTcError(f"predict returned shape {y.shape}, expected {mask.shape} (the target's)")
        return y

    res = RichardsonResult(x=x, updates=0)
    if mask.all():  # Ω is everything: one full solve is the answer
        res.x = _solve(b_obs)
        res.updates, res.reason = 1, "complete"
        if track_loss:
            res.losses.append(float(np.sum((b_obs - _predict(res.x)) ** 2)))
        return res

    track = track_loss or stopper.needs_loss

    def _loss(y: np.ndarray) -> float:  # ‖b_Ω − (Ax)_Ω‖², only when a rule or the caller reads it
        r = np.where(mask, b_obs - y, 0.0)
        return float(np.vdot(r, r))

    y = _predict(x)
    loss = _loss(y) if track else float("nan")
    if track:
        res.losses.append(loss)
    plain_streak: list[float] = []  # step norms of consecutive plain updates since the last jump
    for _ in range(max_inner):
        x_plain = _solve(np.where(mask, b_obs, y))  # the lifted target b̃ = b_Ω on Ω, A x elsewhere (one pass)
        res.updates += 1
        step = float(np.linalg.norm(x_plain - x))
        res.step_norms.append(step)
        plain_streak.append(step)
        x_next = x_plain
        converged = stopper.rule == "step" and stopper.by_step(res.step_norms, float(np.linalg.norm(x_plain)))
        if accelerate and len(plain_streak) >= 2 and not converged:
            alpha = rho_hat(plain_streak)
            if alpha is not None and alpha > 0:
                x_next = aitken_jump(x, x_plain, alpha)
                res.jumps += 1
                plain_streak = []
        x = x_next
        if converged:
            res.reason = "converged"
            break
        if res.updates == max_inner and not track:
            break
        y = _predict(x)
        if not track:
            continue
        new_loss = _loss(y)
        res.losses.append(new_loss)
        if stopper.rule == "official" and stopper.by_loss(loss, new_loss):
            loss = new_loss
            res.reason = "converged"
            break
        loss = new_loss
    if not res.reason:
        res.reason = "max_inner"
    res.x = x
    return res


def error_map_radius(design: np.ndarray, observed_rows: np.ndarray) -> float:
    """``ρ(M)``, ``M = (AᵀA)⁻¹ A_Ω̄ᵀA_Ω̄`` for a dense design ``A [m, d]`` and a boolean row mask (tests, small d)."""
    a = np.asarray(design, dtype=np.float64)
    miss = a[~np.asarray(observed_rows, dtype=bool)]
    m = np.linalg.solve(a.T @ a, miss.T @ miss)
    return float(np.max(np.abs(np.linalg.eigvals(m))))


