"""BOS: bi-level distributionally robust optimisation on the client (FOCoOp, Alg. 2).

Notation: f (B, e) L2-normalised image features (frozen), T_id (C, e) and T_ood (K, e) L2-normalised text
features of the ID and OOD prompts, s = exp(logit_scale), y (B,) labels in [0, C).

* Detection loss (per sample): L_det(f) = LSE_k(l_k) − mean_k(l_k) with l = s·f T_oodᵀ; by Jensen L_det ≥ log K
  with equality iff all OOD logits are equal (:func:`detection_loss`).
* Level 1, class level: δ_id ≈ argmax_δ CE(s·f[T_id + δ; T_ood]ᵀ, y) − γ₁·mean_c‖δ_c‖₂, by ``n_iter`` steps of
  normalised gradient ascent from δ ~ U(0, 1e-4) (row-L2-normalise the gradient, clamp to [−1, 1], step
  ``adv_step``). Features are detached: a feature-space adversary.
* Level 2, distribution level: with δ_id fixed, δ_ood ≈ argmax CE + L_det − γ₂·mean_k‖δ_ood,k‖₂.
* Per-sample robust loss ℓ_i = CE_i([T_id + δ_id; T_ood + δ_ood]) + λ_det·L_det,i − γ₁·mean|δ_id| − γ₂·mean|δ_ood|
  (δ detached; gradients reach the prompts through T_id and T_ood).
* Outer sample-level KL-DRO: L = t·(log Σ_i exp(ℓ_i/t) − log B), t = τ·γ₂ — the dual of sup_{KL(Q‖P̂)≤ρ} E_Q ℓ.
  It lies in [mean ℓ, max ℓ]; t → ∞ gives the mean, t → 0 the max; its gradient weights are softmax(ℓ/t)
  (:func:`kl_dro_loss`). The released code omits the constant −t·log B (same gradient).
* Multipliers after each batch: γ_j ← clamp(γ_j − β(ρ − mean|δ_j|), γ_floor, γ_init) — dual ascent on
  mean|δ| ≤ ρ, with a positive floor (the released code's floor 0 sends t to 0 and the loss to NaN).

Without OOD prompts (K = 0, the "−OOD prompts" ablation) the distribution level has nothing to perturb: δ_ood is
empty, L_det = 0, and only the class-level adversary and the KL-DRO remain (mean|δ_ood| counts as 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from focoop.errors import FOCoOpConfigError


def detection_loss(ood_logits: torch.Tensor) -> torch.Tensor:
    """Per-sample L_det = LSE_k(l_k) − mean_k(l_k) for ood_logits (B, K); returns (B,), ≥ log K."""
    return torch.logsumexp(ood_logits, dim=-1) - ood_logits.mean(dim=-1)


def kl_dro_loss(losses: torch.Tensor, *, temperature: float) -> torch.Tensor:
    """Sample-level KL-DRO: t·(LSE(ℓ/t) − log n) for losses (n,); a scalar in [mean ℓ, max ℓ]."""
    if not temperature > 0:
        raise FOCoOpConfigError(f"DRO temperature tau*gamma must be positive, got {temperature}")
    n = losses.numel()
    return temperature * (torch.logsumexp(losses / temperature, dim=0) - math.log(n))


def dro_weights(losses: torch.Tensor, *, temperature: float) -> torch.Tensor:
    """Gradient weights of :func:`kl_dro_loss`: softmax(ℓ/t), shape (n,)."""
    return torch.softmax(losses.detach() / temperature, dim=0)


def effective_sample_size(weights: torch.Tensor) -> float:
    """ESS = 1 / Σ w² of normalised weights (n when uniform, 1 when one sample carries all the mass)."""
    return float(1.0 / (weights**2).sum())


def _abs_mean(d: torch.Tensor) -> torch.Tensor:
    """mean|δ|, 0 for an empty δ (no OOD prompts)."""
    return d.abs().mean() if d.numel() else d.new_zeros(())


@dataclass
class DROState:
    """Per-client multipliers γ₁ (class level) and γ₂ (distribution level); persists across rounds."""

    gamma_id: float
    gamma_ood: float


def _logits(f: torch.Tensor, t_id: torch.Tensor, t_ood: torch.Tensor, scale: float) -> torch.Tensor:
    return scale * f @ torch.cat([t_id, t_ood], dim=0).T  # (B, C + K)


def _ascend(delta: torch.Tensor, objective, *, n_iter: int, step: float) -> torch.Tensor:
    for _ in range(n_iter):
        delta = delta.detach().requires_grad_(True)
        (grad,) = torch.autograd.grad(objective(delta), delta)
        grad = F.normalize(grad, dim=-1).clamp(-1.0, 1.0)
        delta = delta.detach() + step * grad
    return delta.detach()


def adversarial_perturbations(f: torch.Tensor, y: torch.Tensor, t_id: torch.Tensor, t_ood: torch.Tensor, *,
                              scale: float, state: DROState, n_iter: int = 4, adv_step: float = 1e-3,
                              generator: torch.Generator | None = None,
                              official_reg: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Inner maximisation of both levels; returns detached (δ_id (C, e), δ_ood (K, e)).

    ``official_reg`` reproduces the released code's slip of penalising ‖δ_id‖ (a constant) at level 2.
    """
    f, t_id, t_ood = f.detach(), t_id.detach(), t_ood.detach()
    if n_iter == 0:
        return torch.zeros_like(t_id), torch.zeros_like(t_ood)
    d_id = torch.rand(t_id.shape, generator=generator, dtype=t_id.dtype).to(t_id.device) * 1e-4  # CPU draw

    def obj_id(d):
        return F.cross_entropy(_logits(f, t_id + d, t_ood, scale), y) - state.gamma_id * d.norm(dim=-1).mean()

    d_id = _ascend(d_id, obj_id, n_iter=n_iter, step=adv_step)
    if t_ood.shape[0] == 0:  # no OOD prompts: no distribution level
        return d_id, torch.zeros_like(t_ood)
    d_ood = torch.rand(t_ood.shape, generator=generator, dtype=t_ood.dtype).to(t_ood.device) * 1e-4

    def obj_ood(d):
        logits = _logits(f, t_id + d_id, t_ood + d, scale)
        reg = d_id.norm(dim=-1).mean() if official_reg else d.norm(dim=-1).mean()
        det = detection_loss(logits[:, t_id.shape[0]:]).mean()
        return F.cross_entropy(logits, y) + det - state.gamma_ood * reg

    d_ood = _ascend(d_ood, obj_ood, n_iter=n_iter, step=adv_step)
    return d_id, d_ood


def robust_sample_losses(f: torch.Tensor, y: torch.Tensor, t_id: torch.Tensor, t_ood: torch.Tensor,
                         d_id: torch.Tensor, d_ood: torch.Tensor, *, scale: float, state: DROState,
                         det_weight: float = 0.5) -> torch.Tensor:
    """Per-sample ℓ_i (B,) with the detached perturbations added to the (differentiable) text features."""
    logits = _logits(f, t_id + d_id.detach(), t_ood + d_ood.detach(), scale)  # (B, C + K)
    ce = F.cross_entropy(logits, y, reduction="none")
    det = detection_loss(logits[:, t_id.shape[0]:]) if t_ood.shape[0] else torch.zeros_like(ce)
    const = state.gamma_id * d_id.abs().mean() + state.gamma_ood * _abs_mean(d_ood)
    return ce + det_weight * det - const


def update_multipliers(state: DROState, d_id: torch.Tensor, d_ood: torch.Tensor, *, beta: float = 0.005,
                       rho: float = 10.0, gamma_init: float = 10.0, gamma_floor: float = 0.1) -> DROState:
    """γ_j ← clamp(γ_j − β(ρ − mean|δ_j|), γ_floor, γ_init) for both levels; returns a new state."""
    def step(g: float, d: torch.Tensor) -> float:
        return float(min(max(g - beta * (rho - float(_abs_mean(d))), gamma_floor), gamma_init))

    return DROState(gamma_id=step(state.gamma_id, d_id), gamma_ood=step(state.gamma_ood, d_ood))


def bidro_loss(f: torch.Tensor, y: torch.Tensor, t_id: torch.Tensor, t_ood: torch.Tensor, *, scale: float,
               state: DROState, tau: float = 0.1, n_iter: int = 4, adv_step: float = 1e-3, det_weight: float = 0.5,
               generator: torch.Generator | None = None, official_reg: bool = False):
    """Full BiDRO objective for one batch; returns (loss scalar, δ_id, δ_ood, ESS of the DRO weights)."""
    d_id, d_ood = adversarial_perturbations(f, y, t_id, t_ood, scale=scale, state=state, n_iter=n_iter,
                                            adv_step=adv_step, generator=generator, official_reg=official_reg)
    losses = robust_sample_losses(f, y, t_id, t_ood, d_id, d_ood, scale=scale, state=state, det_weight=det_weight)
    temp = tau * state.gamma_ood
    loss = kl_dro_loss(losses, temperature=temp)
    return loss, d_id, d_ood, effective_sample_size(dro_weights(losses, temperature=temp))
