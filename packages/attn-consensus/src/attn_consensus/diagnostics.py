"""Consensus diagnostics: the paper's ``1 − mean_j cos(h_1, h_j)``, the geodesic diameter, and decay-rate fits.

* :func:`consensus_gap` ``g(h) = 1 − (1/n) Σ_{j=1..n} cos(h_1, h_j)`` (``j = 1`` included, as in the official
  code), signed by default; ``absolute=True`` gives ``1 − mean_j |cos|`` (the docstring / earlier revisions of the
  official code), which reads 0 for two antipodal clusters. ``g = 0`` iff every ``h_j`` is a positive multiple of
  ``h_1``; ``g`` is invariant to per-token positive rescaling.
* :func:`geodesic_diameter` ``max_{i,j} arccos⟨h_i/‖h_i‖, h_j/‖h_j‖⟩``: the quantity the theorems drive to 0.
* :func:`decay_rate`: ``λ`` of the log-linear fit ``log y(t) ≈ c − λ t`` over the tail of a curve above a floor.

Inputs ``h [..., n, d]`` (numpy or torch); computed in float64; returns ``[...]`` of the input's kind.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from attn_consensus.errors import AttnConsensusError


def _tokens(h: Any, name: str = "h") -> tuple[torch.Tensor, bool]:
    was_numpy = not isinstance(h, torch.Tensor)
    try:
        t = torch.as_tensor(np.asarray(h)) if was_numpy else h
    except Exception as exc:  # noqa: BLE001
        raise AttnConsensusError(f"{name} must be an array of shape [..., n, d]") from exc
    t = t.detach().to(torch.float64)
    if t.ndim < 2 or t.shape[-2] < 1 or t.shape[-1] < 1:
        raise AttnConsensusError(f"{name} must have shape [..., n, d] with n >= 1 tokens, got {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise AttnConsensusError(f"{name} must be finite (found NaN or inf)")
    norms = torch.linalg.vector_norm(t, dim=-1, keepdim=True)
    if (norms == 0).any():
        raise AttnConsensusError(f"{name} holds a zero-norm token: its cosine with other tokens is undefined")
    return t / norms, was_numpy


def _out(t: torch.Tensor, as_numpy: bool) -> Any:
    return t.numpy() if as_numpy else t


def consensus_gap(h: Any, *, absolute: bool = False) -> Any:
    """``1 − mean_j cos(h_1, h_j)`` over all tokens ``j`` (``j = 1`` included): ``[..., n, d] -> [...]``."""
    u, as_np = _tokens(h)
    cos = (u[..., :1, :] * u).sum(-1)  # [..., n]
    if absolute:
        cos = cos.abs()
    return _out((1.0 - cos.mean(-1)).clamp_min(0.0), as_np)


def geodesic_diameter(h: Any) -> Any:
    """``max_{i,j} arccos cos(h_i, h_j)`` in radians: ``[..., n, d] -> [...]``."""
    u, as_np = _tokens(h)
    flat = u.reshape(-1, u.shape[-2], u.shape[-1])  # [B, n, d]
    # the chord |u_i - u_j| = 2 sin(θ/2) keeps its precision near θ = 0, where arccos of the Gram matrix does not
    chord = torch.cdist(flat, flat, compute_mode="donot_use_mm_for_euclid_dist")  # [B, n, n]
    theta = 2.0 * torch.asin((chord / 2.0).clamp(0.0, 1.0)).reshape(*u.shape[:-1], u.shape[-2])
    return _out(theta.amax(dim=(-1, -2)), as_np)


def first_token_drift(x: Any) -> float:
    """``max |x_1(t) − x_1(0)|`` over a trajectory ``[S, ..., n, d]`` (0 when the leader stays fixed)."""
    t = torch.as_tensor(np.asarray(x)) if not isinstance(x, torch.Tensor) else x
    return float((t[:, ..., 0, :] - t[:1, ..., 0, :]).abs().max())


def decay_rate(values: Any, times: Any, *, floor: float = 1e-12, tail: float = 0.5) -> float:
    """Exponential decay rate ``λ`` of ``y(t) ≈ C e^{−λ t}``: least squares of ``log y`` on ``t`` over the last
    ``tail`` fraction of the points with ``y > floor`` (the asymptotic regime, before rounding noise).

    Returns ``nan`` when fewer than 3 such points exist (e.g. the curve hit the floor at once).
    """
    y = np.asarray(values, dtype=np.float64).reshape(-1)
    t = np.asarray(times, dtype=np.float64).reshape(-1)
    if y.shape != t.shape:
        raise AttnConsensusError(f"values and times must have the same length, got {y.shape} and {t.shape}")
    if not 0 < tail <= 1:
        raise AttnConsensusError(f"tail must be in (0, 1], got {tail}")
    ok = np.flatnonzero(np.isfinite(y) & (y > floor))
    if ok.size < 3:
        return float("nan")
    above = ok[: int(np.argmax(np.diff(np.r_[ok, -1]) != 1)) + 1]  # the first contiguous run above the floor
    if above.size < 3:
        return float("nan")
    keep = above[int(np.floor(above.size * (1.0 - tail))):]
    if keep.size < 3:
        keep = above[-3:]
    slope = np.polyfit(t[keep], np.log(y[keep]), 1)[0]
    return float(-slope)


def cross_cluster_attention(attention: Any, h: Any, *, min_angle: float = 0.1) -> Any:
    """The largest attention weight between two tokens more than ``min_angle`` radians apart:
    ``max_{h, i, j : ∠(h_i, h_j) > min_angle} A^h_ij`` from ``attention [..., H, n, n]`` and ``h [..., n, d]``
    (0 when every pair is closer). The pull that could still merge separate clusters: with ``V = I`` a cluster moves
    towards another one at a speed of at most this weight, so a merge takes a time of order its inverse (the
    metastable regime of large ``QᵀK``)."""
    u, as_np = _tokens(h)
    a = torch.as_tensor(np.asarray(attention)) if not isinstance(attention, torch.Tensor) else attention
    a = a.detach().to(torch.float64)
    if a.shape[-1] != u.shape[-2] or a.shape[-2] != u.shape[-2] or a.shape[:-3] != u.shape[:-2]:
        raise AttnConsensusError(f"attention must have shape [..., H, n, n] matching h {tuple(u.shape)}, got "
                                 f"{tuple(a.shape)}")
    cos = (u @ u.transpose(-1, -2)).clamp(-1.0, 1.0)  # [..., n, n]
    far = torch.arccos(cos) > min_angle  # [..., n, n]
    w = torch.where(far.unsqueeze(-3), a, torch.zeros_like(a))  # [..., H, n, n]
    return _out(w.amax(dim=(-1, -2, -3)), as_np)
