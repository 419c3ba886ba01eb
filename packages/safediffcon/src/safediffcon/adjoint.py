"""Classical baseline: direct optimisation of the control through the differentiable solver (adjoint method).

For each instance, minimise ``J(f) + mu * max(s(u(f)) - s0, 0)^2`` over ``f [10, nx]`` with Adam, where
``u(f) = simulate(u0, f)``, ``J = mean_x (u(T) - u_d)^2`` and ``s = max_{t,x} u^2`` over the recorded frames; the
gradient is backpropagated through all Euler steps. Several ``mu`` are optimised in one batch
(``[len(mus) * N, 10, nx]``): the instances are independent, so batching changes nothing but speed.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from safediffcon.burgers import simulate
from safediffcon.errors import SafediffconError
from safediffcon.metrics import control_objective, safety_score


def adjoint_control(u0: torch.Tensor, u_target: torch.Tensor, *, mus: Sequence[float], nu: float, dt: float,
                    u_bound: float, iters: int = 40, lr: float = 0.5) -> dict[float, torch.Tensor]:
    """Controls ``{mu: f [N, 10, nx]}`` from Adam on ``J + mu max(s - s0, 0)^2`` (``f`` starts at 0), computed on
    ``u0``'s device (and returned there)."""
    if iters < 1:
        raise SafediffconError(f"iters must be >= 1, got {iters}")
    if any(m < 0 for m in mus):
        raise SafediffconError(f"every mu must be >= 0, got {list(mus)}")
    n, nx = u0.shape
    k = len(mus)
    dev = u0.device  # the solver, the controls and their gradients live on u0's device
    mu = torch.tensor([float(m) for m in mus], device=dev).repeat_interleave(n)  # [k N]
    u0k, utk = u0.repeat(k, 1), u_target.to(dev).repeat(k, 1)  # [k N, nx]
    f = torch.zeros(k * n, 10, nx, device=dev, requires_grad=True)
    opt = torch.optim.Adam([f], lr=lr)
    s0 = u_bound**2
    for _ in range(iters):
        u = simulate(u0k, f, nu=nu, dt=dt)
        loss = (control_objective(u, utk) + mu * torch.relu(safety_score(u) - s0).square()).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    f = f.detach()
    return {float(m): f[i * n:(i + 1) * n] for i, m in enumerate(mus)}
