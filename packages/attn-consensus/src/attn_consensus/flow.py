"""Continuous-depth attention dynamics on the sphere (Rodríguez Abella, Silvestre & Tabuada, ICML 2025).

Tokens ``x_i ∈ R^d`` (``i = 1..n``) evolve as

    ẋ_i = P_{x_i}( Σ_h Σ_{j ∈ N(i)} A^h_ij(x, t) V_h(t) x_j ),
    A^h_ij = exp(⟨Q_h(t) x_i, K_h(t) x_j⟩) / Σ_{k ∈ N(i)} exp(⟨Q_h(t) x_i, K_h(t) x_k⟩),
    P_x = I − x xᵀ / ‖x‖²,

with ``N(i) = {j ≤ i}`` (``mask="causal"``, auto-regressive) or all tokens (``mask="full"``). Multi-head attention is
the sum over heads ``h``. There is no ``1/√d_k`` factor: the scale of ``QᵀK`` plays its role. ``Q, K, V`` are
constant or piecewise constant per "layer" of duration ``layer_time`` (cycled, so they stay bounded for all t).

Shapes: tokens ``x [..., n, d]``; ``q, k [d_k, d]`` (one head), ``[H, d_k, d]`` (H heads), ``[L, H, d_k, d]`` (L
layers), ``[B, L, H, d_k, d]`` (a batch of B independent flows, broadcast against the leading axes of ``x``);
``v`` likewise with ``d_k = d`` (``[d, d]``, ``[H, d, d]``, ...). ``None`` means the identity.

Integrators (:func:`integrate`): explicit Euler and classical RK4 on the ambient ODE, each followed by the retraction
``x ← x/‖x‖`` (applied to the tokens that moved, so a token whose update is exactly zero, such as the causal leader
with ``V = I``, stays bit-exactly fixed). :func:`reference_solution` integrates the same field with scipy's
``solve_ivp`` (DOP853, tight tolerances, no retraction: the exact flow keeps ``‖x_i‖``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from attn_consensus.errors import AttnConsensusError

MASKS = ("causal", "full")
METHODS = ("rk4", "euler")


def _as_tensor(name: str, value: Any, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    try:
        t = torch.as_tensor(np.asarray(value) if not isinstance(value, torch.Tensor) else value)
    except Exception as exc:  # noqa: BLE001 - anything that is not an array
        raise AttnConsensusError(f"{name} must be an array of numbers, got {type(value).__name__}") from exc
    if not (t.is_floating_point() or t.dtype in (torch.int32, torch.int64)):
        raise AttnConsensusError(f"{name} must hold real numbers, got dtype {t.dtype}")
    t = t.to(dtype)
    if not torch.isfinite(t).all():
        raise AttnConsensusError(f"{name} must be finite (found NaN or inf)")
    return t


def _canonical(name: str, m: torch.Tensor | None, dim: int, *, square: bool) -> torch.Tensor:
    """Bring a weight to ``[B, L, H, d_out, d]`` (B = 1 unless batched)."""
    if m is None:
        return torch.eye(dim, dtype=torch.float64).reshape(1, 1, 1, dim, dim)  # [B=1, L=1, H=1, d, d]
    if m.ndim < 2 or m.ndim > 5:
        raise AttnConsensusError(f"{name} must have shape [d_k, d], [H, d_k, d], [L, H, d_k, d] or [B, L, H, d_k, d] "
                                 f"with d = dim = {dim}, got {tuple(m.shape)}")
    if m.shape[-1] != dim:
        raise AttnConsensusError(f"{name} must act on R^dim (last axis {dim}), got shape {tuple(m.shape)}")
    if square and m.shape[-2] != dim:
        raise AttnConsensusError(f"{name} must be d×d per head with d = dim = {dim}, got shape {tuple(m.shape)}")
    while m.ndim < 5:
        m = m.unsqueeze(0)  # prepend the missing H / L / B axes of size 1
    return m


class AttentionFlow:
    """The attention vector field ``ẋ = F(x, t)`` on ``(S^{d-1})^n`` (module docstring: equation and shapes).

    Args:
        dim: token dimension ``d >= 2``.
        mask: ``"causal"`` (``N(i) = {j ≤ i}``) or ``"full"`` (every token).
        q, k: query and key matrices (``None`` = identity); equal shapes ``[..., H, d_k, d]``.
        v: value matrices ``[..., H, d, d]`` (``None`` = identity); one head or as many heads as ``q``.
        layer_time: duration of each "layer" when the weights have an ``L`` axis (piecewise constant, cycled).
    """

    def __init__(self, *, dim: int, mask: str = "causal", q: Any = None, k: Any = None, v: Any = None,
                 layer_time: float = 1.0) -> None:
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 2:
            raise AttnConsensusError(f"dim must be an integer >= 2 (tokens live on the sphere S^(d-1)), got {dim!r}")
        if mask not in MASKS:
            raise AttnConsensusError(f"mask must be one of {MASKS}, got {mask!r}")
        if not (isinstance(layer_time, (int, float)) and math.isfinite(layer_time) and layer_time > 0):
            raise AttnConsensusError(f"layer_time must be a finite number > 0, got {layer_time!r}")
        self.dim, self.mask, self.layer_time = int(dim), mask, float(layer_time)
        qt = None if q is None else _as_tensor("q", q)
        kt = None if k is None else _as_tensor("k", k)
        vt = None if v is None else _as_tensor("v", v)
        if (qt is None) != (kt is None):
            if qt is None:
                qt = torch.eye(self.dim, dtype=torch.float64).expand_as(kt) if kt.shape[-2] == self.dim else None
            else:
                kt = torch.eye(self.dim, dtype=torch.float64).expand_as(qt) if qt.shape[-2] == self.dim else None
            if qt is None or kt is None:
                raise AttnConsensusError("q and k must both be given when d_k != dim (the other defaults to identity)")
        self.q = _canonical("q", qt, self.dim, square=False)
        self.k = _canonical("k", kt, self.dim, square=False)
        self.v = _canonical("v", vt, self.dim, square=True)
        if self.q.shape != self.k.shape:
            raise AttnConsensusError(f"q and k must have the same shape, got {tuple(qt.shape)} and {tuple(kt.shape)}")
        bq, lq, hq = self.q.shape[:3]
        bv, lv, hv = self.v.shape[:3]
        if hv not in (1, hq):
            raise AttnConsensusError(f"v must have one head or as many heads as q ({hq}), got {hv}")
        if lv not in (1, lq) and lq != 1:
            raise AttnConsensusError(f"q/k and v must have the same number of layers (or one), got {lq} and {lv}")
        if bv not in (1, bq) and bq != 1:
            raise AttnConsensusError(f"q/k and v must have the same batch size (or one), got {bq} and {bv}")
        self.layers = max(lq, lv)
        self.heads = max(hq, hv)
        self.batch = max(bq, bv)
        self._cache: dict[tuple[torch.dtype, torch.device], tuple[torch.Tensor, ...]] = {}
        self._future: dict[tuple[int, torch.device], torch.Tensor] = {}

    @property
    def v_is_identity(self) -> bool:
        """Whether every ``V_h`` equals the identity (the paper's assumption ``V = Id``)."""
        eye = torch.eye(self.dim, dtype=self.v.dtype)
        return bool((self.v == eye).all())

    def _weights(self, x: torch.Tensor, t: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(Q, K, V)`` of the layer active at ``t``: ``[B, H, ·, d]`` (no ``B`` axis for one flow)."""
        return self._layer(x, t)[:3]

    def _layer(self, x: torch.Tensor, t: float) -> tuple[torch.Tensor, ...]:
        """``(Q, K, V, M = QᵀK)`` of the layer active at ``t``, cast to ``x``'s dtype once and cached."""
        key = (x.dtype, x.device)
        if key not in self._cache:
            q, k, v = (w.to(dtype=x.dtype, device=x.device) for w in (self.q, self.k, self.v))
            # the bilinear form of the logits, M_h = Q_hᵀ K_h : [B, L, H, d, d] (⟨Q x_i, K x_j⟩ = x_iᵀ M x_j)
            self._cache[key] = (q, k, v, q.transpose(-1, -2) @ k)
        q, k, v, m = self._cache[key]
        idx = int(math.floor(t / self.layer_time + 1e-9))  # layer active at time t (cycled)
        q = q[:, idx % q.shape[1]]  # [B, H, d_k, d]
        k = k[:, idx % k.shape[1]]
        v = v[:, idx % v.shape[1]]  # [B, H, d, d]
        m = m[:, idx % m.shape[1]]  # [B, H, d, d]
        if self.batch == 1:
            q, k, v, m = q[0], k[0], v[0], m[0]  # no batch axis: broadcast against any leading axes of x
        return q, k, v, m

    def _causal(self, n: int, device: torch.device) -> torch.Tensor:
        key = (n, device)
        if key not in self._future:
            self._future[key] = torch.ones(n, n, dtype=torch.bool, device=device).triu(1)  # [n, n]
        return self._future[key]

    def attention(self, x: torch.Tensor, t: float = 0.0) -> torch.Tensor:
        """The attention matrices ``A [..., H, n, n]`` (rows sum to 1 over ``N(i)``)."""
        m = self._layer(x, t)[3]
        xm = torch.einsum("...nd,...hde->...hne", x, m)  # x_iᵀ Q_hᵀ K_h : [..., H, n, d]
        logits = xm @ x.unsqueeze(-3).transpose(-1, -2)  # ⟨Q_h x_i, K_h x_j⟩ : [..., H, n, n]
        if self.mask == "causal":
            logits = logits.masked_fill(self._causal(x.shape[-2], x.device), float("-inf"))
        return torch.softmax(logits, dim=-1)

    def vector_field(self, x: Any, t: float = 0.0) -> torch.Tensor:
        """``F(x, t) [..., n, d]``: the projected attention update of every token (module docstring)."""
        if not isinstance(x, torch.Tensor):
            x = _as_tensor("x", x)
        if x.ndim < 2 or x.shape[-1] != self.dim:
            raise AttnConsensusError(f"x must have shape [..., n, d] with d = dim = {self.dim}, got {tuple(x.shape)}")
        a = self.attention(x, t)  # [..., H, n, n]
        _, _, v = self._weights(x, t)
        vx = torch.einsum("...nd,...hed->...hne", x, v)  # [..., H', n, d] with H' in {1, H}
        u = (a @ vx).sum(dim=-3)  # Σ_h A_h V_h x : [..., n, d]
        return project(x, u)

    def __call__(self, x: Any, t: float = 0.0) -> torch.Tensor:
        return self.vector_field(x, t)

    def __repr__(self) -> str:
        return (f"AttentionFlow(dim={self.dim}, mask={self.mask!r}, heads={self.heads}, layers={self.layers}, "
                f"batch={self.batch}, v_is_identity={self.v_is_identity})")


def project(x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """``P_x u = u − x ⟨x, u⟩ / ‖x‖²`` per token (last axis)."""
    return u - x * ((x * u).sum(-1, keepdim=True) / (x * x).sum(-1, keepdim=True))


def retract(x: torch.Tensor) -> torch.Tensor:
    """``x / ‖x‖`` per token."""
    return x / torch.linalg.vector_norm(x, dim=-1, keepdim=True)


def check_tokens(x0: Any, *, dim: int | None = None, name: str = "x0") -> torch.Tensor:
    """Validate tokens ``[..., n, d]``: finite, non-zero, ``n >= 1``, ``d >= 2`` (and ``d == dim``)."""
    x = _as_tensor(name, x0) if not isinstance(x0, torch.Tensor) else x0
    if not x.is_floating_point():
        x = x.to(torch.float64)
    if x.ndim < 2:
        raise AttnConsensusError(f"{name} must have shape [..., n, d] (n tokens of dimension d), got {tuple(x.shape)}")
    n, d = x.shape[-2], x.shape[-1]
    if n < 1:
        raise AttnConsensusError(f"{name} must hold n >= 1 tokens, got n = {n}")
    if d < 2:
        raise AttnConsensusError(f"{name}: tokens must have dimension d >= 2, got d = {d}")
    if dim is not None and d != dim:
        raise AttnConsensusError(f"{name} has token dimension {d} but the flow has dim = {dim}")
    if not torch.isfinite(x).all():
        raise AttnConsensusError(f"{name} must be finite (found NaN or inf)")
    if (torch.linalg.vector_norm(x, dim=-1) == 0).any():
        raise AttnConsensusError(f"{name} holds a zero-norm token: it has no direction on the sphere (cannot project)")
    return x


@dataclass
class Trajectory:
    """Saved states ``x [S, ..., n, d]`` at times ``t [S]`` (S = steps // save_every + 1, the start included)."""

    t: np.ndarray
    x: torch.Tensor

    @property
    def final(self) -> torch.Tensor:
        return self.x[-1]

    def __len__(self) -> int:
        return len(self.t)


def _check_step_args(dt: Any, steps: Any, method: str, save_every: Any) -> None:
    if isinstance(dt, bool) or not isinstance(dt, (int, float)) or not math.isfinite(dt) or dt <= 0:
        raise AttnConsensusError(f"dt must be a finite number > 0, got {dt!r}")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise AttnConsensusError(f"steps must be an integer >= 1, got {steps!r}")
    if method not in METHODS:
        raise AttnConsensusError(f"method must be one of {METHODS}, got {method!r}")
    if isinstance(save_every, bool) or not isinstance(save_every, (int, np.integer)) or save_every < 1:
        raise AttnConsensusError(f"save_every must be an integer >= 1, got {save_every!r}")


def integrate(flow: AttentionFlow, x0: Any, *, dt: float, steps: int, method: str = "rk4", t0: float = 0.0,
              save_every: int = 1) -> Trajectory:
    """Integrate ``ẋ = F(x, t)`` from ``x0 [..., n, d]`` (projected onto the sphere first) for ``steps`` steps of
    size ``dt`` with ``method`` (``"rk4"`` or ``"euler"``), retracting ``x ← x/‖x‖`` after every step.

    RK4: ``k1 = F(x, t)``, ``k2 = F(x + dt k1/2, t + dt/2)``, ``k3 = F(x + dt k2/2, t + dt/2)``,
    ``k4 = F(x + dt k3, t + dt)``, ``x ← R(x + dt (k1 + 2k2 + 2k3 + k4)/6)``. Euler: ``x ← R(x + dt F(x, t))``.
    Float64 unless ``x0`` is a float32 tensor. Returns a :class:`Trajectory` (every ``save_every``-th state).
    """
    if not isinstance(flow, AttentionFlow):
        raise AttnConsensusError(f"flow must be an AttentionFlow, got {type(flow).__name__}")
    _check_step_args(dt, steps, method, save_every)
    x = retract(check_tokens(x0, dim=flow.dim))
    dt, steps = float(dt), int(steps)
    saved, times = [x.clone()], [t0]
    t = float(t0)
    f = flow.vector_field
    with torch.no_grad():
        for s in range(1, steps + 1):
            if method == "euler":
                incr = dt * f(x, t)
            else:
                k1 = f(x, t)
                k2 = f(x + (0.5 * dt) * k1, t + 0.5 * dt)
                k3 = f(x + (0.5 * dt) * k2, t + 0.5 * dt)
                k4 = f(x + dt * k3, t + dt)
                incr = (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
            moved = (incr != 0).any(dim=-1, keepdim=True)  # the retraction is the identity on unmoved tokens
            x = torch.where(moved, retract(x + incr), x)
            t = t0 + s * dt
            if s % save_every == 0 or s == steps:
                if not torch.isfinite(x).all():
                    raise AttnConsensusError(f"the state became non-finite at t = {t:.4g}; lower dt or the scale "
                                             "of q, k")
                saved.append(x.clone())
                times.append(t)
    return Trajectory(t=np.asarray(times, dtype=np.float64), x=torch.stack(saved))


def reference_solution(flow: AttentionFlow, x0: Any, *, t_eval: Sequence[float], rtol: float = 1e-11,
                       atol: float = 1e-13, method: str = "DOP853") -> Trajectory:
    """The same ODE integrated by ``scipy.integrate.solve_ivp`` (float64, no retraction) at times ``t_eval``
    (starting at 0); the reference for the fixed-step integrators."""
    from scipy.integrate import solve_ivp

    x = retract(check_tokens(x0, dim=flow.dim)).to(torch.float64)
    shape = x.shape
    t_eval = np.asarray(t_eval, dtype=np.float64)
    if t_eval.ndim != 1 or t_eval.size < 1 or t_eval[0] < 0 or np.any(np.diff(t_eval) <= 0):
        raise AttnConsensusError("t_eval must be increasing times >= 0")

    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        xt = torch.from_numpy(y).reshape(shape)  # flat state -> [..., n, d]
        return flow.vector_field(xt, t).reshape(-1).numpy()

    sol = solve_ivp(rhs, (0.0, float(t_eval[-1])), x.reshape(-1).numpy(), method=method, t_eval=t_eval,
                    rtol=rtol, atol=atol)
    if not sol.success:  # pragma: no cover - scipy failure
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    xs = torch.from_numpy(sol.y.T.copy()).reshape(len(t_eval), *shape)  # [S, ..., n, d]
    return Trajectory(t=t_eval, x=xs)
