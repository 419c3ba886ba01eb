"""Controlled 1D viscous Burgers equation: a batched, differentiable torch solver (SafeDiffCon, Sec. 4.1).

PDE on x in [0, 1], t in [0, T = 1] with homogeneous Dirichlet boundaries ``u(t, 0) = u(t, 1) = 0``::

    du/dt = -1/2 d(u^2)/dx + nu d^2u/dx^2 + f(t, x)

Discretisation (the official solver's scheme, re-implemented): ``nx`` interior points ``x_i = i dx``,
``dx = 1 / (nx + 1)``, one zero ghost node on each side, central differences (``(u_{i+1}^2 - u_{i-1}^2) / (4 dx)`` for
the flux and the 3-point Laplacian over ``dx^2``), explicit Euler with step ``dt``. The state is recorded at the
``nt = 11`` times ``t = 0, 0.1, ..., 1``; the control ``f [N, nt - 1, nx]`` is piecewise constant in time: interval
``k`` uses ``f[:, k]`` on the steps ``[k m, (k + 1) m)``, ``m = 1 / (dt (nt - 1))``.

Shapes: ``u0 [N, nx]``, ``f [N, 10, nx]`` -> ``u [N, 11, nx]``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from safediffcon.errors import SafediffconError

NT = 11
"""Recorded frames t = 0, 0.1, ..., 1."""


def grid(nx: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Interior points ``x_i = i / (nx + 1)``, i = 1..nx (``[nx]``)."""
    return torch.arange(1, nx + 1, dtype=dtype) / (nx + 1)


def steps_per_frame(dt: float, nt: int = NT) -> int:
    """Euler steps between two recorded frames; ``1 / dt`` must be a multiple of ``nt - 1``."""
    total = 1.0 / dt
    m = round(total / (nt - 1))
    if m < 1 or abs(m * (nt - 1) - total) > 1e-6 * total:
        raise SafediffconError(f"dt must divide T = 1 into a multiple of {nt - 1} steps, got dt={dt}")
    return m


def check_solver(nx: int, *, nu: float, dt: float) -> None:
    """Refuse ``nx < 4``, ``nu <= 0``, ``dt <= 0`` and the unstable ``nu dt / dx^2 > 0.5``."""
    if not isinstance(nx, int) or nx < 4:
        raise SafediffconError(f"nx must be an integer >= 4, got {nx!r}")
    if not (isinstance(nu, (int, float)) and math.isfinite(nu) and nu > 0):
        raise SafediffconError(f"nu must be a positive finite number, got {nu!r}")
    if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0):
        raise SafediffconError(f"dt must be a positive finite number, got {dt!r}")
    dx = 1.0 / (nx + 1)
    r = nu * dt / dx**2
    if r > 0.5:
        raise SafediffconError(f"unstable explicit scheme: nu*dt/dx^2 = {r:.3g} > 0.5 (nu={nu}, dt={dt}, nx={nx}); "
                               "lower dt or nx")
    steps_per_frame(dt)


def simulate(u0: torch.Tensor, f: torch.Tensor, *, nu: float = 0.01, dt: float = 1e-3,
             substep_max: bool = False) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Integrate Burgers from ``u0 [N, nx]`` under the control ``f [N, 10, nx]``; returns ``u [N, 11, nx]``.

    Differentiable in ``u0`` and ``f`` (plain torch ops); runs on ``u0``'s device (``f`` is moved there). With ``substep_max=True`` also returns ``max u^2`` over
    every Euler sub-step and point (``[N]``): the official safety check sees only the 11 recorded frames.
    """
    u0 = torch.as_tensor(u0)
    f = torch.as_tensor(f, dtype=u0.dtype, device=u0.device)  # the solver runs on u0's device
    if u0.ndim == 1:
        u0 = u0[None]
    if f.ndim == 2:
        f = f[None]
    if u0.ndim != 2:
        raise SafediffconError(f"u0 must be [N, nx], got shape {tuple(u0.shape)}")
    n, nx = u0.shape
    check_solver(nx, nu=nu, dt=dt)
    if f.ndim != 3 or f.shape[1] != NT - 1:
        raise SafediffconError(f"f must be [N, {NT - 1}, nx] (one force per time interval), got {tuple(f.shape)}")
    if f.shape[2] != nx:
        raise SafediffconError(f"f has {f.shape[2]} points in space but u0 has nx={nx}")
    if f.shape[0] != n:
        raise SafediffconError(f"f has {f.shape[0]} trajectories but u0 has {n}")
    if not (torch.isfinite(u0).all() and torch.isfinite(f).all()):
        raise SafediffconError("u0 and f must be finite (found NaN or inf)")
    m = steps_per_frame(dt)
    dx = 1.0 / (nx + 1)
    a, b = dt / (4 * dx), nu * dt / dx**2
    u = u0
    frames = [u0]
    smax = u0.detach().square().amax(dim=1) if substep_max else None
    for k in range(NT - 1):
        fk = dt * f[:, k]
        for _ in range(m):
            p = F.pad(u, (1, 1))  # [N, nx + 2], zero ghost nodes (Dirichlet)
            left, right = p[:, :-2], p[:, 2:]
            u = u - a * (right.square() - left.square()) + b * (right - 2 * u + left) + fk
            if substep_max:
                smax = torch.maximum(smax, u.detach().square().amax(dim=1))
        frames.append(u)
    traj = torch.stack(frames, dim=1)  # [N, 11, nx]
    return (traj, smax) if substep_max else traj


def advance(u: torch.Tensor, fk: torch.Tensor, *, nu: float = 0.01, dt: float = 1e-3) -> torch.Tensor:
    """One control interval (``1 / (10 dt)`` Euler steps of :func:`simulate`) from ``u [N, nx]`` under the constant
    force ``fk [N, nx]``: ``simulate(u, f)[:, 1]`` with ``f[:, 0] = fk``, without integrating the other intervals
    (closed-loop controllers step interval by interval)."""
    nx = u.shape[-1]
    check_solver(nx, nu=nu, dt=dt)
    m = steps_per_frame(dt)
    dx = 1.0 / (nx + 1)
    a, b = dt / (4 * dx), nu * dt / dx**2
    g = dt * fk
    for _ in range(m):
        p = F.pad(u, (1, 1))  # [N, nx + 2], zero ghost nodes (Dirichlet)
        left, right = p[:, :-2], p[:, 2:]
        u = u - a * (right.square() - left.square()) + b * (right - 2 * u + left) + g
    return u


def simulate_loop(u0: torch.Tensor, f: torch.Tensor, *, nu: float = 0.01, dt: float = 1e-3) -> torch.Tensor:
    """Reference: :func:`simulate` one trajectory at a time (the per-trajectory loop the batched solver replaces)."""
    return torch.cat([simulate(u0[i:i + 1], f[i:i + 1], nu=nu, dt=dt) for i in range(u0.shape[0])], dim=0)


def initial_state(n: int, nx: int, *, amp: float = 2.0, generator: torch.Generator | None = None,
                  dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Two-Gaussian initial states ``a1 N(c1, s1) + a2 N(c2, s2)`` (``[n, nx]``).

    ``c1 ~ U(0.2, 0.4)``, ``a1 ~ U(0, amp)``, ``c2 ~ U(0.6, 0.8)``, ``a2 ~ U(-amp, 0)``, ``s1, s2 ~ U(0.05, 0.15)``;
    the official generator uses ``amp = 2``.
    """
    g = generator
    x = grid(nx, dtype=dtype)[None]
    r = torch.rand(n, 6, generator=g, dtype=dtype)
    c1, a1, s1 = 0.2 + 0.2 * r[:, 0:1], amp * r[:, 1:2], 0.05 + 0.1 * r[:, 2:3]
    c2, a2, s2 = 0.6 + 0.2 * r[:, 3:4], -amp * r[:, 4:5], 0.05 + 0.1 * r[:, 5:6]
    return a1 * torch.exp(-(x - c1) ** 2 / (2 * s1**2)) + a2 * torch.exp(-(x - c2) ** 2 / (2 * s2**2))


def random_force(n: int, nx: int, *, terms: int = 8, amp: float = 1.5, generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Data-generating control: a sum of ``terms`` separable space-time Gaussians (``[n, 10, nx]``).

    Term: ``A exp(-(x - lx)^2 / (2 sx^2)) * 2 exp(-(t_k - lt)^2 / (2 st^2))`` at ``t_k = linspace(1/11, 10/11, 10)``,
    ``lx, lt ~ U(0, 1)``, ``sx, st ~ 0.5 U(0.1, 0.4)``; the first term has ``A ~ U(-amp, amp)``, the others
    ``A = Bernoulli(1/2) U(-amp, amp)``.
    """
    g = generator
    x = grid(nx, dtype=dtype)[None, None, :]  # [1, 1, nx]
    tk = torch.linspace(1 / 11, 10 / 11, NT - 1, dtype=dtype)[None, None, :]  # [1, 1, 10]
    r = torch.rand(n, terms, 6, generator=g, dtype=dtype)
    lx, lt = r[..., 0:1], r[..., 1:2]
    sx, st = 0.5 * (0.1 + 0.3 * r[..., 2:3]), 0.5 * (0.1 + 0.3 * r[..., 3:4])
    a = amp * (2 * r[..., 4:5] - 1)
    on = (r[..., 5:6] < 0.5).to(dtype)
    on[:, 0] = 1.0
    space = torch.exp(-(x - lx) ** 2 / (2 * sx**2))  # [n, terms, nx]
    time = 2 * torch.exp(-(tk - lt) ** 2 / (2 * st**2))  # [n, terms, 10]
    # f[n, k, x] = sum_j on_j a_j time[j, k] space[j, x]
    return torch.einsum("njk,njx->nkx", on * a * time, space)
