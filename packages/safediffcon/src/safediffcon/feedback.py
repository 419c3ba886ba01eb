"""A simple closed-loop baseline: the proportional (P) feedback controller on the recorded frames.

At the start of each control interval ``k = 0..9`` the controller reads the true state ``u(t_k) [N, nx]`` and
applies the constant force ``f_k = K (u_d - u(t_k))`` over the interval (zero-order hold, the task's piecewise
constant control). For the linear part ``du/dt = f`` one interval of length 0.1 maps the error ``e = u - u_d`` to
``(1 - 0.1 K) e``, so ``K = 10`` is dead-beat and ``K > 20`` unstable; advection and diffusion act on top. It needs
no model and no training: with the zero control (``f = 0``) it is the package's trivial control, the floor a learned
controller must beat before its comparison with the paper's baselines means anything.

The returned ``f [N, 10, nx]`` is open-loop equivalent: re-simulating it from ``u0`` reproduces the closed-loop
trajectory exactly (the solver is deterministic), so it is scored like every other control.
"""

from __future__ import annotations

import math

import torch

from safediffcon.burgers import NT, advance
from safediffcon.errors import SafediffconError


def proportional_control(u0: torch.Tensor, u_target: torch.Tensor, *, gain: float, nu: float,
                         dt: float) -> torch.Tensor:
    """``f [N, 10, nx]`` of the P controller ``f_k = gain (u_target - u(t_k))`` from ``u0, u_target [N, nx]``."""
    if not (isinstance(gain, (int, float)) and math.isfinite(gain) and gain >= 0):
        raise SafediffconError(f"the feedback gain must be a finite number >= 0, got {gain!r}")
    u0, ut = torch.as_tensor(u0, dtype=torch.float32), torch.as_tensor(u_target, dtype=torch.float32)
    if u0.ndim != 2 or u0.shape != ut.shape:
        raise SafediffconError(f"u0 and u_target must both be [N, nx], got {tuple(u0.shape)} and {tuple(ut.shape)}")
    u, fs = u0, []
    with torch.no_grad():
        for _ in range(NT - 1):
            fk = gain * (ut - u)
            fs.append(fk)
            u = advance(u, fk, nu=nu, dt=dt)
    return torch.stack(fs, dim=1)  # [N, 10, nx]
