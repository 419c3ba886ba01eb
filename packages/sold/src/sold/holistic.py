"""The holistic-latent baseline: one vector per frame instead of slots ("Dreamer-lite", deterministic GRU latent).

* :class:`HolisticAE`: a CNN encoder (3 stride-2 convolutions, then a linear map) to a latent ``z_t ∈ R^Z`` and a
  transposed-CNN decoder back to ``[3, H, W]`` (sigmoid). Pre-trained on the same random frames as SAVi with the same
  budget and objective (image MSE).
* :class:`GRUDynamics`: ``h_t = GRU([z_t, a_t], h_{t−1})``, ``ẑ_{t+1} = z_t + W h_t`` — the same residual form and the
  same autoregressive training as the slot dynamics, with a deterministic GRU latent (no stochastic RSSM: our
  environment is deterministic and the comparison is about the representation).

The actor, critic and reward head are per-step MLPs on ``z_t`` (``sold.aggregator.PerStepMLP``) and are trained by
the same :class:`sold.dreamer.ImaginationLearner`, so only the representation differs from SOLD.
"""

from __future__ import annotations

import torch
from torch import nn

from sold.errors import SoldError
from sold.rollout import autoregressive_rollout
from sold.savi import as_video


class HolisticAE(nn.Module):
    """``encode(video [B, T, 3, H, W]) → z [B, T, Z]``; ``decode(z [..., Z]) → image [..., 3, H, W]``."""

    def __init__(self, *, image_size: int = 32, latent_dim: int = 64, channels: int = 32):
        super().__init__()
        if image_size % 8:
            raise SoldError(f"image_size must be divisible by 8 for the holistic autoencoder, got {image_size}")
        for name, v in (("latent_dim", latent_dim), ("channels", channels)):
            if not isinstance(v, int) or v < 1:
                raise SoldError(f"{name} must be a positive integer, got {v!r}")
        self.image_size, self.latent_dim, self.channels = image_size, latent_dim, channels
        g, c = image_size // 8, channels
        self.g = g
        self.enc = nn.Sequential(nn.Conv2d(3, c, 4, 2, 1), nn.ReLU(), nn.Conv2d(c, c, 4, 2, 1), nn.ReLU(),
                                 nn.Conv2d(c, c, 4, 2, 1), nn.ReLU(), nn.Flatten(), nn.Linear(c * g * g, latent_dim))
        self.dec_in = nn.Linear(latent_dim, c * g * g)
        self.dec = nn.Sequential(nn.ReLU(), nn.ConvTranspose2d(c, c, 4, 2, 1), nn.ReLU(),
                                 nn.ConvTranspose2d(c, c, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(c, 3, 4, 2, 1))

    def encode(self, video) -> torch.Tensor:
        x = as_video(video, self.image_size)
        b, t = x.shape[:2]
        return self.enc(x.flatten(0, 1)).unflatten(0, (b, t))                     # [B, T, Z]

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        lead = z.shape[:-1]
        h = self.dec_in(z.reshape(-1, self.latent_dim)).reshape(-1, self.channels, self.g, self.g)
        return torch.sigmoid(self.dec(h)).reshape(*lead, 3, self.image_size, self.image_size)

    def loss(self, video) -> torch.Tensor:
        x = as_video(video, self.image_size)
        return ((self.decode(self.encode(x)) - x) ** 2).mean()


class GRUDynamics(nn.Module):
    """``forward(z [B, T, Z], actions [B, T, A]) → ẑ_{t+1} [B, T, Z]`` (causal by construction)."""

    def __init__(self, *, latent_dim: int, action_dim: int, hidden: int = 128):
        super().__init__()
        self.latent_dim, self.action_dim = latent_dim, action_dim
        self.inp = nn.Linear(latent_dim + action_dim, hidden)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, latent_dim)

    def forward(self, z: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        if z.ndim != 3 or z.shape[-1] != self.latent_dim:
            raise SoldError(f"latents must have shape [B, T, {self.latent_dim}], got {tuple(z.shape)}")
        if actions.ndim != 3 or actions.shape[-1] != self.action_dim or actions.shape[:2] != z.shape[:2]:
            raise SoldError(f"actions must have shape [B, T, {self.action_dim}] matching the latents, got "
                            f"{tuple(actions.shape)}")
        h, _ = self.gru(torch.relu(self.inp(torch.cat([z, actions], -1))))
        return z + self.out(h)

    can_cache = True
    """The GRU's hidden state is an exact cache of the history (no dropout)."""

    def step(self, z: torch.Tensor, actions: torch.Tensor, cache: torch.Tensor | None = None):
        """Incremental ``forward``: the new steps ``z [B, Tn, Z]``, ``actions [B, Tn, A]`` after the history summarised
        by the GRU state ``cache [1, B, hidden]`` (``None``: none yet) → (predictions ``[B, Tn, Z]``, new state)."""
        if z.ndim != 3 or z.shape[-1] != self.latent_dim or actions.shape[:2] != z.shape[:2]:
            raise SoldError(f"latents [B, T, {self.latent_dim}] and actions [B, T, {self.action_dim}] must match, "
                            f"got {tuple(z.shape)} and {tuple(actions.shape)}")
        h, hn = self.gru(torch.relu(self.inp(torch.cat([z, actions], -1))), cache)
        return z + self.out(h), hn

    def rollout(self, context: torch.Tensor, actions: torch.Tensor, horizon: int, *,
                cache: bool = True) -> torch.Tensor:
        """Autoregressive prediction of ``horizon`` latents after ``context [B, c, Z]`` → ``[B, horizon, Z]``
        (``cache``: carry the GRU state instead of re-running the history at every step; same outputs)."""
        return autoregressive_rollout(self, context, actions, horizon, cache=cache)
