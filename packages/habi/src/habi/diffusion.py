"""A tiny DDPM over actions (the Diffusion-QL actor used as Habi's goal-directed planner).

Forward process (Ho et al. 2020) with ``T`` steps, ``ᾱ_t = Π_{u≤t} (1 - β_u)``::

    q(x_t | x_0) = N(√ᾱ_t x_0, (1 - ᾱ_t) I)                      (q_sample)
    x_0 = √(1/ᾱ_t) x_t - √(1/ᾱ_t - 1) ε                           (predict_start_from_noise, its inverse)
    q(x_{t-1} | x_t, x_0) = N(c0_t x_0 + c1_t x_t, β̃_t I),  β̃_t = β_t (1 - ᾱ_{t-1}) / (1 - ᾱ_t)

Reverse (ancestral) sampling predicts ε with a state-conditioned MLP ``ε_θ(x_t, t, s)``, clips the implied x_0 to
[-1, 1] (Diffusion-QL and the official code both do) and samples the posterior; no noise is added at t = 0.

Schedules: ``"vp"`` (default) is Diffusion-QL's variance-preserving schedule
``β_t = 1 - exp(-b_min/T - (b_max - b_min)(2t - 1)/(2T²))`` with ``b_min = 0.1, b_max = 10``; ``"cosine"`` is the
Nichol-Dhariwal cosine schedule, closer to the official CleanDiffuser default (audit note).

Temperature: by default it scales only the initial noise ``x_T ~ N(0, τ² I)`` (the official behaviour);
``temperature_all_steps=True`` also scales the noise of every intermediate step.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import nn

from habi.errors import HabiConfigError
from habi.nets import mlp


def vp_beta_schedule(T: int, *, b_min: float = 0.1, b_max: float = 10.0) -> torch.Tensor:
    """Diffusion-QL's VP schedule, ``(T,)`` float64."""
    t = torch.arange(1, T + 1, dtype=torch.float64)
    alpha = torch.exp(-b_min / T - 0.5 * (b_max - b_min) * (2 * t - 1) / T**2)
    return 1.0 - alpha


def cosine_beta_schedule(T: int, *, s: float = 0.008) -> torch.Tensor:
    """Nichol & Dhariwal cosine schedule, ``(T,)`` float64, β clipped to [1e-4, 0.999]."""
    x = torch.linspace(0, T, T + 1, dtype=torch.float64)
    ac = torch.cos(((x / T) + s) / (1 + s) * math.pi * 0.5) ** 2
    ac = ac / ac[0]
    return torch.clip(1 - ac[1:] / ac[:-1], 1e-4, 0.999)


class SinusoidalEmbedding(nn.Module):
    """``t (B,) -> (B, dim)`` sinusoidal time embedding."""

    def __init__(self, *, dim: int) -> None:
        super().__init__()
        half = dim // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / max(half - 1, 1))
        self.register_buffer("freqs", freqs, persistent=False)

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        arg = t.float()[:, None] * self.freqs[None, :]  # (B, half)
        return torch.cat([arg.sin(), arg.cos()], dim=-1)


class NoiseMLP(nn.Module):
    """Diffusion-QL noise network ``ε_θ(x_t, t, s)``: ``[x_t, emb(t), s] -> hidden×3 (Mish) -> act_dim``.

    Shapes: ``x (B, act_dim)``, ``t (B,)`` long, ``s (B, obs_dim)`` -> ``(B, act_dim)``.
    """

    def __init__(self, *, obs_dim: int, act_dim: int, hidden: int = 256, t_dim: int = 64) -> None:
        super().__init__()
        self.time_mlp = nn.Sequential(SinusoidalEmbedding(dim=t_dim), nn.Linear(t_dim, 2 * t_dim), nn.Mish(),
                                      nn.Linear(2 * t_dim, t_dim))
        self.net = mlp(act_dim + t_dim + obs_dim, [hidden, hidden, hidden], act_dim)

    def forward(self, x: torch.Tensor, t: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, self.time_mlp(t), s], dim=-1))


class DDPM(nn.Module):
    """DDPM over actions with ``T`` steps and an :class:`NoiseMLP`; see the module docstring for the equations."""

    def __init__(self, *, obs_dim: int, act_dim: int, steps: int = 5, hidden: int = 256, t_dim: int = 64,
                 schedule: Literal["vp", "cosine"] = "vp", clip_x0: bool = True) -> None:
        super().__init__()
        if steps < 1:
            raise HabiConfigError(f"diffusion steps must be >= 1, got {steps}")
        if schedule not in ("vp", "cosine"):
            raise HabiConfigError(f"schedule must be 'vp' or 'cosine', got {schedule!r}")
        self.obs_dim, self.act_dim, self.steps, self.clip_x0 = obs_dim, act_dim, steps, clip_x0
        self.model = NoiseMLP(obs_dim=obs_dim, act_dim=act_dim, hidden=hidden, t_dim=t_dim)
        betas = vp_beta_schedule(steps) if schedule == "vp" else cosine_beta_schedule(steps)
        alphas = 1.0 - betas
        ac = torch.cumprod(alphas, 0)
        ac_prev = torch.cat([torch.ones(1, dtype=torch.float64), ac[:-1]])
        post_var = betas * (1.0 - ac_prev) / (1.0 - ac)
        bufs = {
            "betas": betas, "alphas_cumprod": ac, "alphas_cumprod_prev": ac_prev,
            "sqrt_ac": ac.sqrt(), "sqrt_one_minus_ac": (1 - ac).sqrt(),
            "sqrt_recip_ac": (1 / ac).sqrt(), "sqrt_recipm1_ac": (1 / ac - 1).sqrt(),
            "post_log_var": torch.log(post_var.clamp(min=1e-20)),
            "post_c0": betas * ac_prev.sqrt() / (1 - ac),
            "post_c1": (1 - ac_prev) * alphas.sqrt() / (1 - ac),
        }
        for k, v in bufs.items():
            self.register_buffer(k, v.float(), persistent=False)
        self._c = {k: [float(x) for x in bufs[k].float()] for k in  # scalar copies for the sampling loop
                   ("sqrt_recip_ac", "sqrt_recipm1_ac", "post_c0", "post_c1", "post_log_var")}

    @staticmethod
    def _g(buf: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return buf[t][:, None]  # (B,) -> (B, 1) for broadcasting over action dims

    def q_sample(self, x0: torch.Tensor, t: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """``x_t = √ᾱ_t x_0 + √(1-ᾱ_t) ε``; shapes ``(B, act_dim)``, ``t (B,)``."""
        return self._g(self.sqrt_ac, t) * x0 + self._g(self.sqrt_one_minus_ac, t) * noise

    def predict_start_from_noise(self, x_t: torch.Tensor, t: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """Inverse of :meth:`q_sample` in ``x_0``: ``x_0 = √(1/ᾱ_t) x_t - √(1/ᾱ_t - 1) ε``."""
        return self._g(self.sqrt_recip_ac, t) * x_t - self._g(self.sqrt_recipm1_ac, t) * noise

    def q_posterior(self, x0: torch.Tensor, x_t: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and log-variance of ``q(x_{t-1} | x_t, x_0)``."""
        mean = self._g(self.post_c0, t) * x0 + self._g(self.post_c1, t) * x_t
        return mean, self._g(self.post_log_var, t).expand_as(mean)

    def p_sample(self, x_t: torch.Tensor, t: torch.Tensor, s: torch.Tensor, *, noise_scale: float = 1.0,
                 eps: torch.Tensor | None = None) -> torch.Tensor:
        """One ancestral step ``x_t -> x_{t-1}``; ``eps`` overrides the network's prediction (used by tests)."""
        if eps is None:
            eps = self.model(x_t, t, s)
        x0 = self.predict_start_from_noise(x_t, t, eps)
        if self.clip_x0:
            x0 = x0.clamp(-1.0, 1.0)
        mean, log_var = self.q_posterior(x0, x_t, t)
        nonzero = (t > 0).float()[:, None]  # no noise at the last step
        return mean + nonzero * noise_scale * torch.exp(0.5 * log_var) * torch.randn_like(x_t)

    def sample(self, s: torch.Tensor, *, temperature: float = 1.0, temperature_all_steps: bool = False,
               noise: torch.Tensor | None = None) -> torch.Tensor:
        """Ancestral sampling ``x_T ~ N(0, τ²I) -> x_0``; ``s (B, obs_dim) -> (B, act_dim)`` in [-1, 1].

        Same computation as iterating :meth:`p_sample` (a test checks it), but with the T time embeddings computed
        in one call and scalar coefficients, to keep the per-step Python overhead low. Differentiable (Diffusion-QL's Q term backpropagates through it).
        ``noise (T, B, act_dim)`` optionally supplies the standard-normal draws (``noise[0]`` for x_T, ``noise[j]``
        for the step from t = T - j; used to check the numpy fast path against this one).
        """
        if temperature <= 0:
            raise HabiConfigError(f"temperature must be > 0, got {temperature}")
        b = s.shape[0]
        net = self.model.net
        temb = self.model.time_mlp(torch.arange(self.steps, device=s.device))  # (T, t_dim)
        if noise is not None and tuple(noise.shape) != (self.steps, b, self.act_dim):
            raise HabiConfigError(f"noise must have shape {(self.steps, b, self.act_dim)}, got {tuple(noise.shape)}")
        x = temperature * (torch.randn(b, self.act_dim, device=s.device) if noise is None else noise[0])
        scale = temperature if temperature_all_steps else 1.0
        for j, i in enumerate(reversed(range(self.steps))):
            eps = net(torch.cat([x, temb[i].expand(b, -1), s], dim=-1))
            x0 = self._c["sqrt_recip_ac"][i] * x - self._c["sqrt_recipm1_ac"][i] * eps
            if self.clip_x0:
                x0 = x0.clamp(-1.0, 1.0)
            x = self._c["post_c0"][i] * x0 + self._c["post_c1"][i] * x
            if i > 0:
                z = torch.randn_like(x) if noise is None else noise[j + 1]
                x = x + (scale * math.exp(0.5 * self._c["post_log_var"][i])) * z
        return x.clamp(-1.0, 1.0)

    def loss(self, x0: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        """Denoising BC loss ``E_{t, ε} ‖ε - ε_θ(√ᾱ_t x_0 + √(1-ᾱ_t) ε, t, s)‖²`` (scalar)."""
        t = torch.randint(0, self.steps, (x0.shape[0],), device=x0.device)
        noise = torch.randn_like(x0)
        return ((self.model(self.q_sample(x0, t, noise), t, s) - noise) ** 2).mean()
