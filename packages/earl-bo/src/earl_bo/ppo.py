"""A small PPO actor-critic over set observations (Schulman et al., 2017), as EARL-BO trains it.

Policy: a Gaussian over pre-squash actions ``u ~ N(mu(z), sigma^2)``, ``sigma >= min_std``, squashed into the unit
cube by ``a = sigmoid(u)`` (the query is ``unnormalize(a)``); the deterministic query is ``sigmoid(mu)``. Log-probs are
those of ``u``: the squash's Jacobian cancels in the PPO ratio.

* clipped surrogate:  ``L = -E[min(rho A, clip(rho, 1 - eps, 1 + eps) A)]``,  ``rho = exp(logp_new - logp_old)``
* GAE (finite horizon, ``gamma = 1``):  ``delta_t = r_t + V_{t+1} - V_t`` (``V_H = 0``),
  ``A_t = sum_l (gamma lambda)^l delta_{t+l}``; with ``gamma = lambda = 1``, ``A_t = G_t - V_t``.
* off-policy stage (TuRBO actions, no behaviour log-prob): advantage-weighted behaviour cloning
  ``-E[w_t log pi(u_t | s_t)]``, ``w_t = min(exp(A_t / beta), w_max)`` (Peng et al., 2019), plus value regression.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from earl_bo.encoder import SetEncoder

_EPS = 1e-4
ACTIONS = ("box", "incumbent")
"""Parametrisations of the policy's mean (:class:`ActorCritic`)."""


class ActorCritic(nn.Module):
    """Encoder + Gaussian actor head + value head; ``forward(x, y, mask, steps_left) -> (mu [B, d], log_std [d],
    value [B])``.

    ``action="box"``: ``mu = actor(z)``, an absolute point of the box (its untrained mean is near the box centre);
    ``action="incumbent"``: ``mu = logit(x*) + actor(z)`` with ``x*`` the incumbent of the set, so the actor learns
    a step from the best point so far (a trust-region-like parametrisation; the action is still any point of the box).
    """

    def __init__(self, *, dim: int, width: int = 64, heads: int = 4, blocks: int = 1, min_std: float = 0.05,
                 init_std: float = 0.5, action: str = "box") -> None:
        super().__init__()
        self.encoder = SetEncoder(dim=dim, width=width, heads=heads, blocks=blocks)
        self.actor = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, dim))
        self.critic = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, 1))
        self.log_std = nn.Parameter(torch.full((dim,), math.log(init_std)))
        self.min_log_std = math.log(min_std)
        if action not in ACTIONS:
            raise ValueError(f"action must be one of {ACTIONS}, got {action!r}")
        self.action = action

    def forward(self, x, y, mask=None, steps_left=None):
        z = self.encoder(x, y, mask, steps_left)
        log_std = self.log_std.clamp_min(self.min_log_std)
        mu = self.actor(z)
        if self.action == "incumbent":
            yy = y if mask is None else y.masked_fill(~mask, float("-inf"))
            best = x[torch.arange(x.shape[0], device=x.device), yy.argmax(-1)]  # [B, d] the incumbent of each set
            mu = mu + unsquash(best)
        return mu, log_std, self.critic(z).squeeze(-1)

    @staticmethod
    def log_prob(u: torch.Tensor, mu: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
        """``log N(u; mu, diag(exp(log_std)^2))`` summed over dimensions -> ``[B]``."""
        z = (u - mu) / log_std.exp()
        return (-0.5 * z.pow(2) - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)


def squash(u: torch.Tensor) -> torch.Tensor:
    """Pre-squash action -> unit cube."""
    return torch.sigmoid(u)


def unsquash(a: torch.Tensor) -> torch.Tensor:
    """Unit cube -> pre-squash action (clipped away from the faces so the logit stays finite)."""
    a = a.clamp(_EPS, 1 - _EPS)
    return torch.log(a) - torch.log1p(-a)


def gae(rewards: torch.Tensor, values: torch.Tensor, *, gamma: float = 1.0, lam: float = 0.95):
    """Generalised advantage estimates of finite episodes: ``rewards, values [B, H]`` -> ``(advantages, returns)``
    both ``[B, H]``; the value after the last step is 0 (the episode ends)."""
    b, h = rewards.shape
    adv = torch.zeros_like(rewards)
    last = torch.zeros(b, dtype=rewards.dtype, device=rewards.device)
    for t in reversed(range(h)):
        nxt = values[:, t + 1] if t + 1 < h else torch.zeros(b, dtype=rewards.dtype, device=rewards.device)
        delta = rewards[:, t] + gamma * nxt - values[:, t]
        last = delta + gamma * lam * last
        adv[:, t] = last
    return adv, adv + values


def clipped_surrogate(logp_new: torch.Tensor, logp_old: torch.Tensor, adv: torch.Tensor, *, clip: float = 0.2):
    """PPO's clipped surrogate loss ``-mean(min(rho A, clip(rho) A))``."""
    ratio = torch.exp(logp_new - logp_old)
    return -torch.min(ratio * adv, ratio.clamp(1 - clip, 1 + clip) * adv).mean()


def unclipped_surrogate(logp_new: torch.Tensor, logp_old: torch.Tensor, adv: torch.Tensor) -> torch.Tensor:
    """The policy-gradient surrogate ``-mean(rho A)`` without clipping."""
    return -(torch.exp(logp_new - logp_old) * adv).mean()


def normalise(adv: torch.Tensor) -> torch.Tensor:
    """Advantages with mean 0 and standard deviation 1 (unchanged up to centring when they are all equal)."""
    if adv.numel() < 2:
        return adv - adv.mean()
    return (adv - adv.mean()) / (adv.std() + 1e-8)


def awr_weights(adv: torch.Tensor, *, beta: float = 1.0, w_max: float = 20.0) -> torch.Tensor:
    """Advantage weights ``min(exp(A / beta), w_max)`` of advantage-weighted behaviour cloning."""
    return torch.exp(adv / beta).clamp_max(w_max)
