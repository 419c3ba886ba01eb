"""Habitization losses: the diagonal-Gaussian KL and the adaptive KL weight (dual update in log space).

KL between diagonal Gaussians, summed over the ``d_z`` latent dimensions (per sample)::

    KL(q ‖ p) = Σ_k [ log σ_p - log σ_q + (σ_q² + (μ_q - μ_p)²) / (2 σ_p²) - ½ ]        (B, d_z) -> (B,)

Adaptive weight (official ``learn_kl_eta``): ``log η_KL`` is a learnable scalar (init ``log 1e-6``, Adam lr 3e-4)
minimising ``-log η_KL · (ℓ(KL) - log10 KL_target)`` with KL detached, where by default
``ℓ(KL) = mean_b log10 KL_b`` (per-sample, so it drives the *geometric* mean KL to the target) and with
``mode="arithmetic"`` ``ℓ(KL) = log10 mean_b KL_b``. The gradient w.r.t. ``log η_KL`` is ``-(ℓ - log10 target)``,
so a descent step raises η_KL when the KL is above the target and lowers it when below: dual ascent in log space.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import nn

from habi.errors import HabiConfigError


def gaussian_kl(mu_q: torch.Tensor, sigma_q: torch.Tensor, mu_p: torch.Tensor, sigma_p: torch.Tensor) -> torch.Tensor:
    """Closed-form ``KL(N(μ_q, σ_q²) ‖ N(μ_p, σ_p²))`` summed over the last dim; ``(..., d_z) -> (...)``."""
    return (torch.log(sigma_p) - torch.log(sigma_q)
            + (sigma_q**2 + (mu_q - mu_p) ** 2) / (2.0 * sigma_p**2) - 0.5).sum(-1)


class AdaptiveKLWeight(nn.Module):
    """Learnable ``η_KL = exp(log_eta)`` driven towards ``KL_target`` by :meth:`loss`.

    Args:
        target: KL target (> 0; official ``kld_target = 1``).
        init: initial η_KL (> 0; official 1e-6).
        mode: ``"geometric"`` (official, per-sample log10) or ``"arithmetic"`` (log10 of the batch-mean KL).
    """

    def __init__(self, *, target: float = 1.0, init: float = 1e-6,
                 mode: Literal["geometric", "arithmetic"] = "geometric") -> None:
        super().__init__()
        if not target > 0:
            raise HabiConfigError(f"kld_target must be > 0 (log10 is undefined otherwise), got {target}")
        if not init > 0:
            raise HabiConfigError(f"initial KL weight must be > 0, got {init}")
        if mode not in ("geometric", "arithmetic"):
            raise HabiConfigError(f"KL mode must be 'geometric' or 'arithmetic', got {mode!r}")
        self.target, self.mode = float(target), mode
        self.log_eta = nn.Parameter(torch.tensor(math.log(init)))

    @property
    def eta(self) -> torch.Tensor:
        """Current η_KL, detached (it multiplies the KL in the VAE loss as a constant)."""
        return self.log_eta.detach().exp()

    def log_kl(self, kl: torch.Tensor) -> torch.Tensor:
        """``ℓ(KL)`` for per-sample KLs ``(B,)``, detached."""
        kl = kl.detach().clamp(min=1e-12)
        return torch.log10(kl).mean() if self.mode == "geometric" else torch.log10(kl.mean())

    def loss(self, kl: torch.Tensor) -> torch.Tensor:
        """``-log η_KL · (ℓ(KL) - log10 target)`` (scalar); only ``log_eta`` receives gradient."""
        return -self.log_eta * (self.log_kl(kl) - math.log10(self.target))
