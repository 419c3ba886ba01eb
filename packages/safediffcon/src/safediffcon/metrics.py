"""Evaluation by re-simulation (SafeDiffCon, Sec. 4.1): control objective J and the safety rates R_p, R_t, R_s.

``J = mean_x (u(T, x) - u_d(x))^2`` per instance; the safety score ``s(u) = max_{t, x} u(t, x)^2`` over the 11
recorded frames with the bound ``s0 = u_bound^2`` (paper: 0.64). ``R_p``: fraction of (instance, t, x) points with
``|u| > u_bound``; ``R_t``: fraction of (instance, t) frames with any exceedance; ``R_s``: fraction of instances
with any exceedance. Always ``0 <= R_p <= R_t <= R_s <= 1``.
"""

from __future__ import annotations

import torch

from safediffcon.errors import SafediffconError


def control_objective(u: torch.Tensor, u_target: torch.Tensor) -> torch.Tensor:
    """``J [N] = mean_x (u[:, -1] - u_target)^2`` for ``u [N, nt, nx]``, ``u_target [N, nx]``."""
    return (u[:, -1] - u_target).square().mean(dim=-1)


def safety_score(u: torch.Tensor) -> torch.Tensor:
    """``s [N] = max_{t, x} u^2`` over the recorded frames of ``u [N, nt, nx]``."""
    return u.square().flatten(1).amax(dim=1)


def safety_rates(u: torch.Tensor, *, u_bound: float) -> dict[str, float]:
    """``R_p``, ``R_t``, ``R_s`` of ``u [N, nt, nx]`` against ``|u| <= u_bound``."""
    if not u_bound > 0:
        raise SafediffconError(f"u_bound must be > 0, got {u_bound!r}")
    bad = u.abs() > u_bound  # [N, nt, nx]
    return {"R_p": float(bad.float().mean()), "R_t": float(bad.any(dim=2).float().mean()),
            "R_s": float(bad.flatten(1).any(dim=1).float().mean())}


def evaluate_control(u0: torch.Tensor, f: torch.Tensor, u_target: torch.Tensor, *, nu: float, dt: float,
                     u_bound: float, device: str | torch.device | None = None) -> dict[str, float]:
    """Re-simulate ``f`` from the true ``u0`` and score it: J (mean, sd), s (mean, max), R_p/R_t/R_s, and the
    fraction of instances safe at the recorded frames but not at some solver sub-step. ``device``: where the solver
    runs (default: ``u0``'s device)."""
    from safediffcon.burgers import simulate

    if device is not None:
        u0, f, u_target = (torch.as_tensor(v).to(device) for v in (u0, f, u_target))
    with torch.no_grad():
        u, smax = simulate(u0, f, nu=nu, dt=dt, substep_max=True)
    j = control_objective(u, u_target)
    s = safety_score(u)
    s0 = u_bound**2
    out = {"J": float(j.mean()), "J_sd": float(j.std()) if len(j) > 1 else 0.0, "s_mean": float(s.mean()),
           "s_max": float(s.max())}
    out.update(safety_rates(u, u_bound=u_bound))
    out["substep_only"] = float(((s <= s0) & (smax > s0)).float().mean())
    return out
