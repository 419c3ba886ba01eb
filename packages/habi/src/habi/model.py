"""The habitual model (official ``Synergy``): prior p(z|s), posterior q(z|s, a), decoder D(z) and critic C(z, a).

Habi (Lu et al., ICML 2025, Sec. 3)::

    prior      p(z | s)    = N(μ_p(s), diag σ_p(s)²)          two separate MLPs  s -> h -> h -> d_z (Mish)
    posterior  q(z | s, a) = N(μ_q(s, a), diag σ_q(s, a)²)    same, on [s, a]
    scale      σ = softplus(·) + 0.01                          (floor 0.01)
    decoder    D(z) -> a                                       MLP d_z -> h -> h -> act_dim   (or D(z, s))
    critic     C(z, a) -> Q                                    LayerNorm MLP, :class:`habi.nets.HabiCritic`

Shapes: ``s (B, obs_dim)``, ``a (B, act_dim)``, ``z (B, d_z)``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from habi.config import HabiConfig  # noqa: F401 (defined in the light habi.config)
from habi.errors import HabiConfigError
from habi.nets import HabiCritic, mlp

SIGMA_FLOOR = 0.01


class GaussianEncoder(nn.Module):
    """``x -> (μ, σ)`` with two separate MLPs (official layout); ``σ = softplus(·) + 0.01``."""

    def __init__(self, *, inp: int, hidden: int, latent_dim: int) -> None:
        super().__init__()
        self.mu = mlp(inp, [hidden, hidden], latent_dim)
        self.sigma = mlp(inp, [hidden, hidden], latent_dim)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.mu(x), F.softplus(self.sigma(x)) + SIGMA_FLOOR


class Synergy(nn.Module):
    """Prior, posterior, decoder and habitual critic of Habi (see module docstring)."""

    def __init__(self, *, cfg: HabiConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.prior = GaussianEncoder(inp=cfg.obs_dim, hidden=cfg.hidden, latent_dim=cfg.latent_dim)
        self.posterior = GaussianEncoder(inp=cfg.obs_dim + cfg.act_dim, hidden=cfg.hidden, latent_dim=cfg.latent_dim)
        dec_in = cfg.latent_dim + (cfg.obs_dim if cfg.conditional_decoder else 0)
        self.decoder = mlp(dec_in, [cfg.hidden, cfg.hidden], cfg.act_dim)
        self.critic = HabiCritic(latent_dim=cfg.latent_dim, act_dim=cfg.act_dim, hidden=cfg.critic_hidden)

    def encode_prior(self, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.prior(s)

    def encode_posterior(self, s: torch.Tensor, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.posterior(torch.cat([s, a], dim=-1))

    def decode(self, z: torch.Tensor, s: torch.Tensor | None = None) -> torch.Tensor:
        if self.cfg.conditional_decoder:
            if s is None:
                raise HabiConfigError("conditional_decoder=True needs the state s to decode")
            z = torch.cat([z, s], dim=-1)
        return self.decoder(z)

    def habit_parameters(self) -> list[nn.Parameter]:
        """Parameters trained by the VAE loss (everything except the critic)."""
        return [*self.prior.parameters(), *self.posterior.parameters(), *self.decoder.parameters()]
