"""FedOTP and FedPGP, written from their papers on the shared prompt learner (no code of theirs is used).

**FedOTP** (Li et al., *Global and Local Prompts Cooperation via Optimal Transport for Federated Learning*, CVPR
2024). Each client holds a shared global prompt (FedAvg-ed) and a private local prompt (one learned context each,
shared over classes). For class c the two prompts give text features t_c = [t_c^G, t_c^L] ∈ R^{2×e}; an image gives
N patch features F ∈ R^{N×e} (L2-normalised, projected into the joint space). With sim = F t_cᵀ (N×2) and cost
1 − sim, an entropic **partial** (unbalanced) transport plan

    T* = argmin_{T ≥ 0, T1 ≤ 1/N, Tᵀ1 ≤ 1/2, 1ᵀT1 = γ} ⟨T, 1 − sim⟩ − ε H(T)

(Benamou et al. 2015's Dykstra iterations, the algorithm of ``ot.partial.entropic_partial_wasserstein``, batched over
images and classes, computed without gradient as in PLOT/FedOTP) aligns patches with prompts, and the class logit is
s·⟨T*, sim⟩/γ (divided by the mass γ so that the logit scale stays that of CLIP; with one patch and two equal prompts
it is exactly s·⟨f, t⟩). Defaults ε = 0.1, γ = 0.8 [derived, unverified: γ = 0.8 is our reading of FedOTP's default
"top percent"]. Gradients reach both prompts through sim; only the global prompt is uploaded.

**FedPGP** (Cui et al., *Harmonizing Generalization and Personalization in Federated Prompt Learning*, ICML 2024).
The personalised context is the global one plus a private low-rank term, ctx_P = ctx_G + U V (U ∈ R^{M×r} starts at
0, V ∈ R^{r×w} random, rank r = 1), and the loss adds a prompt-wise contrastive term anchored at the global prompt's
features t^G: the hand-crafted CLIP prompt's features t^CLIP are the positive, the personalised features t^P the
negative,

    L_con = mean_c −log( e^{cos(t^G_c, t^CLIP_c)/τ} / (e^{cos(t^G_c, t^CLIP_c)/τ} + e^{cos(t^G_c, t^P_c)/τ}) ),

L = CE(s·f t^Pᵀ, y) + μ·L_con (μ = 1, τ = 0.5 [derived, unverified: the paper text we could read gives the loss
structure, not these constants]). The global context is uploaded; U, V never leave the client.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


@torch.no_grad()
def partial_ot_plan(cost: torch.Tensor, *, eps: float = 0.1, mass: float = 0.8, n_iter: int = 20,
                    a: torch.Tensor | None = None, b: torch.Tensor | None = None) -> torch.Tensor:
    """Entropic partial OT plans for a batch of cost matrices ``cost`` (..., N, P).

    Marginal bounds a (N,) (default uniform 1/N) and b (P,) (default 1/P), total mass ``mass`` ≤ min(Σa, Σb).
    Dykstra's iterations over the three constraint sets (rows ≤ a, columns ≤ b, total = mass), as in Benamou et al.
    (2015) / ``ot.partial.entropic_partial_wasserstein``, in the dtype of ``cost``. Returns plans of the shape of ``cost``.
    """
    c = cost
    dt = c.dtype
    tiny = 1e-300 if dt == torch.float64 else 1e-30
    n, p = c.shape[-2], c.shape[-1]
    a = torch.full((n,), 1.0 / n, dtype=dt, device=c.device) if a is None else a.to(c.device, dt)
    b = torch.full((p,), 1.0 / p, dtype=dt, device=c.device) if b is None else b.to(c.device, dt)
    # subtract each problem's minimum cost: a constant shift does not change the plan, it avoids underflow
    shift = c.amin(dim=(-2, -1), keepdim=True)
    k = torch.exp(-(c - shift) / eps)
    k = k * (mass / k.sum(dim=(-2, -1), keepdim=True))
    q1 = torch.ones_like(k)
    q2 = torch.ones_like(k)
    q3 = torch.ones_like(k)
    for _ in range(n_iter):
        k_prev = k
        k = k * q1
        k1 = k * torch.clamp(a[:, None] / k.sum(-1, keepdim=True).clamp_min(tiny), max=1.0)
        q1 = q1 * k_prev / k1.clamp_min(tiny)
        k1_prev = k1
        k1 = k1 * q2
        k2 = k1 * torch.clamp(b[None, :] / k1.sum(-2, keepdim=True).clamp_min(tiny), max=1.0)
        q2 = q2 * k1_prev / k2.clamp_min(tiny)
        k2_prev = k2
        k2 = k2 * q3
        k = k2 * (mass / k2.sum(dim=(-2, -1), keepdim=True).clamp_min(tiny))
        q3 = q3 * k2_prev / k.clamp_min(tiny)
    return k


def otp_logits(tokens: torch.Tensor, prompts: torch.Tensor, *, scale: float, eps: float = 0.1, mass: float = 0.8,
               n_iter: int = 20) -> torch.Tensor:
    """FedOTP class logits (B, C) from patch features ``tokens`` (B, N, e) and prompt features ``prompts``
    (C, P, e) (all L2-normalised): s·Σ_{n,p} T*_{b c n p} sim_{b c n p} / γ with the plan of :func:`partial_ot_plan`
    on the cost 1 − sim (no gradient through the plan)."""
    sim = torch.einsum("bne,cpe->bcnp", tokens, prompts)  # (B, C, N, P)
    plan = partial_ot_plan(1.0 - sim.detach(), eps=eps, mass=mass, n_iter=n_iter)
    return scale * (plan * sim).sum(dim=(-2, -1)) / mass


def pgp_contrastive_loss(t_global: torch.Tensor, t_clip: torch.Tensor, t_personal: torch.Tensor, *,
                         temperature: float = 0.5) -> torch.Tensor:
    """FedPGP's prompt-wise contrastive loss (scalar): anchor t^G, positive t^CLIP, negative t^P; rows (C, e)."""
    pos = F.cosine_similarity(t_global, t_clip, dim=-1) / temperature
    neg = F.cosine_similarity(t_global, t_personal, dim=-1) / temperature
    return -(pos - torch.logsumexp(torch.stack([pos, neg]), dim=0)).mean()
