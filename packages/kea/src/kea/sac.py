"""Compact discrete and continuous soft actor-critic modules, as used twice inside KEA (Yang et al., ICML 2025).

One *module* = actor + twin critics + Polyak-averaged target critics + (optionally tuned) entropy coefficient α.
KEA instantiates two on one buffer: the novelty-augmented A^SAC and the standard A^B.

Discrete SAC (Christodoulou, 2019), as in the official code, with π(·|s): (B, |A|), Q(s, ·): (B, |A|):

    y      = r + γ(1−d) Σ_a π(a|s') [min(Q̄₁, Q̄₂)(s', a) − α log π(a|s')]                         (B,)
    L_Q    = Σ_i E[(y − Q_i(s, a))²]
    L_π    = E[Σ_a π(a|s)(α log π(a|s) − min(Q₁, Q₂)(s, a))]

Continuous SAC (Haarnoja et al., 2018): tanh-squashed Gaussian, a' ~ π(·|s'):

    y      = r + γ(1−d) [min(Q̄₁, Q̄₂)(s', a') − α log π(a'|s')]
    L_π    = E[α log π(ã|s) − min(Q₁, Q₂)(s, ã)],  ã ~ π(·|s);   L_α = −E[log α (log π(ã|s) + H̄)], H̄ = −dim(A)

``d`` is gymnasium's ``terminated`` only (truncation bootstraps). Hidden layers are followed by ReLU and
Dropout(0.1) active in every training-time pass (behaviour actions and targets included, as released); dropout
masks and action samples are drawn from the module's own ``torch.Generator``, so one module's randomness never
perturbs the other's. Targets are updated by SB3's ``polyak_update`` (θ̄ ← (1−τ)θ̄ + τθ).
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.utils import polyak_update
from torch import nn
from torch.nn import functional as F

from kea.errors import KEAConfigError
from kea.optim import Adam

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


class GenDropout(nn.Module):
    """Inverted dropout drawing its masks from an explicit ``torch.Generator`` (active when ``self.training``)."""

    def __init__(self, *, p: float, generator: torch.Generator) -> None:
        super().__init__()
        self.p = float(p)
        self.generator = generator

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p <= 0.0:
            return x
        # drawn by the module's CPU generator (the same numbers on every device), then moved
        keep = torch.rand(x.shape, generator=self.generator).to(x.device) >= self.p
        return x * keep / (1.0 - self.p)


def mlp(in_dim: int, hidden: tuple[int, ...], out_dim: int, *, dropout: float, generator: torch.Generator) -> nn.Sequential:
    """``in_dim → hidden… → out_dim`` with ReLU and :class:`GenDropout` after each hidden layer."""
    layers: list[nn.Module] = []
    d = in_dim
    for h in hidden:
        layers += [nn.Linear(d, h), nn.ReLU()]
        if dropout > 0:
            layers.append(GenDropout(p=dropout, generator=generator))
        d = h
    layers.append(nn.Linear(d, out_dim))
    return nn.Sequential(*layers)


def discrete_sac_target(*, reward: torch.Tensor, terminated: torch.Tensor, probs_next: torch.Tensor,
                        log_probs_next: torch.Tensor, q1_next: torch.Tensor, q2_next: torch.Tensor, gamma: float,
                        alpha: float | torch.Tensor) -> torch.Tensor:
    """``y = r + γ(1−d) Σ_a π(a|s')[min Q̄(s',a) − α log π(a|s')]``; reward/terminated (B,), the rest (B, |A|)."""
    soft_v = (probs_next * (torch.min(q1_next, q2_next) - alpha * log_probs_next)).sum(dim=-1)  # (B,)
    return reward + gamma * (1.0 - terminated) * soft_v


def continuous_sac_target(*, reward: torch.Tensor, terminated: torch.Tensor, q1_next: torch.Tensor,
                          q2_next: torch.Tensor, log_prob_next: torch.Tensor, gamma: float,
                          alpha: float | torch.Tensor) -> torch.Tensor:
    """``y = r + γ(1−d)[min Q̄(s',a') − α log π(a'|s')]``; all tensors (B,)."""
    return reward + gamma * (1.0 - terminated) * (torch.min(q1_next, q2_next) - alpha * log_prob_next)


def _weighted_twin_loss(q1: torch.Tensor, q2: torch.Tensor, y: torch.Tensor,
                        weights: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(E[w (q₁−y)²] + E[w (q₂−y)²], |q₁−y| + |q₂−y|)``; all ``(B,)``; ``w = 1`` when None (= MSE)."""
    d1, d2 = q1 - y, q2 - y
    if weights is None:
        loss = F.mse_loss(q1, y) + F.mse_loss(q2, y)
    else:
        loss = (weights * d1.pow(2)).mean() + (weights * d2.pow(2)).mean()
    return loss, (d1.abs() + d2.abs()).detach()


def check_common(*, gamma: float, tau: float, alpha: float | str, lr: float, dropout: float) -> None:
    if not (0.0 <= gamma < 1.0):
        raise KEAConfigError(f"gamma must be in [0, 1), got {gamma!r}")
    if not (0.0 < tau <= 1.0):
        raise KEAConfigError(f"tau must be in (0, 1], got {tau!r}")
    if isinstance(alpha, str):
        if alpha != "auto":
            raise KEAConfigError(f"alpha (entropy coefficient) must be a number >= 0 or 'auto', got {alpha!r}")
    elif not (alpha >= 0.0) or math.isinf(alpha):
        raise KEAConfigError(f"alpha (entropy coefficient) must be a finite number >= 0 or 'auto', got {alpha!r}")
    if not lr > 0:
        raise KEAConfigError(f"lr must be > 0, got {lr!r}")
    if not (0.0 <= dropout < 1.0):
        raise KEAConfigError(f"dropout must be in [0, 1), got {dropout!r}")


class _SACBase(nn.Module):
    """Shared plumbing: generator, α (fixed or tuned), Polyak update, target-network mode."""

    def _setup_alpha(self, alpha: float | str, target_entropy: float, lr: float, init: float) -> None:
        self.autotune = alpha == "auto"
        self.target_entropy = float(target_entropy)
        a0 = init if self.autotune else float(alpha)
        self.log_alpha = nn.Parameter(torch.tensor(math.log(a0) if a0 > 0 else -math.inf), requires_grad=self.autotune)
        self.alpha_opt = Adam([self.log_alpha], lr=lr) if self.autotune else None

    @property
    def alpha(self) -> torch.Tensor:
        return self.log_alpha.detach().exp()

    def polyak(self) -> None:
        polyak_update(self.critic_params(), self.target_critic_params(), self.tau)

    def critic_params(self) -> list[nn.Parameter]:
        return [*self.q1.parameters(), *self.q2.parameters()]

    def target_critic_params(self) -> list[nn.Parameter]:
        return [*self.q1_target.parameters(), *self.q2_target.parameters()]

    def _target_mode(self) -> None:
        # dropout inside the bootstrapped target as released, unless dropout_in_targets=False
        self.q1_target.train(self.dropout_in_targets)
        self.q2_target.train(self.dropout_in_targets)

    def _make_critics(self, in_dim: int, out_dim: int) -> None:
        kw = dict(dropout=self.dropout, generator=self.generator)
        self.q1 = mlp(in_dim, self.hidden, out_dim, **kw)
        self.q2 = mlp(in_dim, self.hidden, out_dim, **kw)
        self.q1_target = copy.deepcopy(self.q1)
        self.q2_target = copy.deepcopy(self.q2)
        for m in (self.q1_target, self.q2_target):
            for mod in m.modules():  # the deep copy shares the generator object, not a copy of it
                if isinstance(mod, GenDropout):
                    mod.generator = self.generator
            for p in m.parameters():
                p.requires_grad_(False)

    def alpha_step(self, log_prob_mean_or_entropy: torch.Tensor) -> None:
        """One α step on ``L_α = log α · (H(π) − H̄)`` (discrete, H = entropy) or ``−log α (log π + H̄)``."""
        if not self.autotune:
            return
        loss = self.log_alpha * log_prob_mean_or_entropy.detach()
        self.alpha_opt.zero_grad(set_to_none=True)
        loss.backward()
        self.alpha_opt.step()


class DiscreteSAC(_SACBase):
    """Discrete SAC module. Observations ``(B, obs_dim)``, actions ``(B,)`` int64, ``|A| = action_space.n``.

    Keyword-only args: ``observation_space`` (1-D Box), ``action_space`` (Discrete), ``hidden`` ((64, 64)),
    ``dropout`` (0.1), ``dropout_in_targets`` (True), ``alpha`` (0.1 or "auto": target entropy
    ``target_entropy_ratio · log|A|``), ``gamma`` (0.99), ``tau`` (0.005), ``lr`` (3e-4), ``seed``.
    """

    def __init__(self, *, observation_space: spaces.Space, action_space: spaces.Space,
                 hidden: tuple[int, ...] = (64, 64), dropout: float = 0.1, dropout_in_targets: bool = True,
                 alpha: float | str = 0.1, gamma: float = 0.99, tau: float = 0.005, lr: float = 3e-4,
                 target_entropy_ratio: float = 0.5, seed: int = 0) -> None:
        super().__init__()
        if not isinstance(action_space, spaces.Discrete):
            raise KEAConfigError(f"DiscreteSAC needs a Discrete action space, got {type(action_space).__name__}")
        if not isinstance(observation_space, spaces.Box) or len(observation_space.shape) != 1:
            raise KEAConfigError(f"observation_space must be a 1-D Box, got {observation_space!r}")
        check_common(gamma=gamma, tau=tau, alpha=alpha, lr=lr, dropout=dropout)
        if not (0.0 < target_entropy_ratio < 1.0):
            raise KEAConfigError(f"target_entropy_ratio must be in (0, 1) (a positive discrete target), got {target_entropy_ratio!r}")
        self.obs_dim, self.n_actions = int(observation_space.shape[0]), int(action_space.n)
        self.hidden, self.dropout, self.dropout_in_targets = tuple(hidden), float(dropout), bool(dropout_in_targets)
        self.gamma, self.tau = float(gamma), float(tau)
        self.generator = torch.Generator().manual_seed(int(seed))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            self.actor = mlp(self.obs_dim, self.hidden, self.n_actions, dropout=self.dropout, generator=self.generator)
            self._make_critics(self.obs_dim, self.n_actions)
        self._setup_alpha(alpha, target_entropy_ratio * math.log(self.n_actions), lr, init=1.0)
        self.actor_opt = Adam(self.actor.parameters(), lr=lr)
        self.critic_opt = Adam(self.critic_params(), lr=lr)

    def policy(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(π(·|s), log π(·|s))``, each ``(B, |A|)``."""
        logits = self.actor(obs)
        return F.softmax(logits, dim=-1), F.log_softmax(logits, dim=-1)

    @torch.no_grad()
    def act(self, obs: torch.Tensor, *, deterministic: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Sample (or argmax) actions ``(B,)`` and return them with the probabilities ``(B, |A|)``."""
        probs, _ = self.policy(obs)
        if deterministic:
            return probs.argmax(dim=-1), probs
        draw = torch.multinomial(probs.detach().cpu(), 1, generator=self.generator).to(probs.device)  # CPU generator
        return draw.squeeze(-1), probs  # (B, 1) -> (B,)

    @torch.no_grad()
    def target(self, reward: torch.Tensor, next_obs: torch.Tensor, terminated: torch.Tensor) -> torch.Tensor:
        self._target_mode()
        probs, logp = self.policy(next_obs)
        return discrete_sac_target(reward=reward, terminated=terminated, probs_next=probs, log_probs_next=logp,
                                   q1_next=self.q1_target(next_obs), q2_next=self.q2_target(next_obs),
                                   gamma=self.gamma, alpha=self.alpha)

    def critic_loss(self, obs: torch.Tensor, action: torch.Tensor, y: torch.Tensor,
                    weights: torch.Tensor | None = None) -> torch.Tensor:
        """``Σ_i E[w (y − Q_i(s, a))²]`` (``w`` = PER importance weights ``(B,)``, 1 when None)."""
        return self.critic_loss_td(obs, action, y, weights)[0]

    def critic_loss_td(self, obs: torch.Tensor, action: torch.Tensor, y: torch.Tensor,
                       weights: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(L_Q, |δ₁| + |δ₂|)``: the loss and the per-sample TD magnitudes ``(B,)`` (PER priorities)."""
        a = action.long().reshape(-1, 1)  # (B,) -> (B, 1)
        q1 = self.q1(obs).gather(1, a).squeeze(1)
        q2 = self.q2(obs).gather(1, a).squeeze(1)
        return _weighted_twin_loss(q1, q2, y, weights)

    def actor_loss(self, obs: torch.Tensor, weights: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(L_π, H(π))`` with the critics held fixed; ``L_π = E[w Σ_a π(α log π − min Q)]``."""
        probs, logp = self.policy(obs)
        with torch.no_grad():
            q = torch.min(self.q1(obs), self.q2(obs))
        per = (probs * (self.alpha * logp - q)).sum(dim=-1)  # (B,)
        loss = (per * weights).mean() if weights is not None else per.mean()
        entropy = -(probs * logp).sum(dim=-1).mean()
        return loss, entropy

    def alpha_update(self, entropy: torch.Tensor) -> None:
        # L_α = log α · (H(π) − H̄): α grows when the entropy falls below the (positive) target
        self.alpha_step(entropy - self.target_entropy)


class ContinuousSAC(_SACBase):
    """Continuous SAC module (tanh-squashed Gaussian). Observations ``(B, obs_dim)``, actions ``(B, act_dim)``.

    Keyword-only args as :class:`DiscreteSAC`; ``alpha`` defaults to "auto" (target entropy −dim(A), start 1.0 as in
    SB3). Actions are rescaled from (−1, 1) to the Box bounds.
    """

    def __init__(self, *, observation_space: spaces.Space, action_space: spaces.Space,
                 hidden: tuple[int, ...] = (64, 64), dropout: float = 0.0, dropout_in_targets: bool = True,
                 alpha: float | str = "auto", gamma: float = 0.99, tau: float = 0.005, lr: float = 3e-4,
                 alpha_init: float = 1.0, seed: int = 0) -> None:
        super().__init__()
        if not isinstance(action_space, spaces.Box):
            raise KEAConfigError(f"ContinuousSAC needs a Box action space, got {type(action_space).__name__}")
        if not isinstance(observation_space, spaces.Box) or len(observation_space.shape) != 1:
            raise KEAConfigError(f"observation_space must be a 1-D Box, got {observation_space!r}")
        check_common(gamma=gamma, tau=tau, alpha=alpha, lr=lr, dropout=dropout)
        self.obs_dim = int(observation_space.shape[0])
        self.act_dim = int(np.prod(action_space.shape))
        self.hidden, self.dropout, self.dropout_in_targets = tuple(hidden), float(dropout), bool(dropout_in_targets)
        self.gamma, self.tau = float(gamma), float(tau)
        self.generator = torch.Generator().manual_seed(int(seed))
        low = torch.as_tensor(action_space.low, dtype=torch.float32).reshape(-1)
        high = torch.as_tensor(action_space.high, dtype=torch.float32).reshape(-1)
        self.register_buffer("action_scale", (high - low) / 2)
        self.register_buffer("action_bias", (high + low) / 2)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            self.actor = mlp(self.obs_dim, self.hidden, 2 * self.act_dim, dropout=self.dropout, generator=self.generator)
            self._make_critics(self.obs_dim + self.act_dim, 1)
        self._setup_alpha(alpha, -float(self.act_dim), lr, init=alpha_init)
        self.actor_opt = Adam(self.actor.parameters(), lr=lr)
        self.critic_opt = Adam(self.critic_params(), lr=lr)

    def sample(self, obs: torch.Tensor, *, deterministic: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Reparameterised action ``(B, act_dim)`` in the Box bounds and its log-density ``(B,)``."""
        out = self.actor(obs)
        mean, log_std = out.chunk(2, dim=-1)  # (B, 2·act_dim) -> 2 × (B, act_dim)
        log_std = log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
        std = log_std.exp()
        if deterministic:
            u = mean
        else:
            u = mean + std * torch.randn(mean.shape, generator=self.generator).to(mean.device)  # CPU generator
        a = torch.tanh(u)
        logp = (-0.5 * ((u - mean) / std).pow(2) - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        logp = logp - (torch.log(self.action_scale * (1 - a.pow(2)) + 1e-6)).sum(-1)
        return a * self.action_scale + self.action_bias, logp

    @torch.no_grad()
    def act(self, obs: torch.Tensor, *, deterministic: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        a, logp = self.sample(obs, deterministic=deterministic)
        return a, logp

    def _q(self, net: nn.Module, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return net(torch.cat([obs, action.reshape(obs.shape[0], -1)], dim=-1)).squeeze(-1)  # (B, 1) -> (B,)

    @torch.no_grad()
    def target(self, reward: torch.Tensor, next_obs: torch.Tensor, terminated: torch.Tensor) -> torch.Tensor:
        self._target_mode()
        a2, logp2 = self.sample(next_obs)
        return continuous_sac_target(reward=reward, terminated=terminated, q1_next=self._q(self.q1_target, next_obs, a2),
                                     q2_next=self._q(self.q2_target, next_obs, a2), log_prob_next=logp2,
                                     gamma=self.gamma, alpha=self.alpha)

    def critic_loss(self, obs: torch.Tensor, action: torch.Tensor, y: torch.Tensor,
                    weights: torch.Tensor | None = None) -> torch.Tensor:
        return self.critic_loss_td(obs, action, y, weights)[0]

    def critic_loss_td(self, obs: torch.Tensor, action: torch.Tensor, y: torch.Tensor,
                       weights: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        return _weighted_twin_loss(self._q(self.q1, obs, action), self._q(self.q2, obs, action), y, weights)

    def actor_loss(self, obs: torch.Tensor, weights: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(L_π, mean log π)``; the critic parameters receive no gradient step from it."""
        a, logp = self.sample(obs)
        q = torch.min(self._q(self.q1, obs, a), self._q(self.q2, obs, a))
        per = self.alpha * logp - q  # (B,)
        return ((per * weights).mean() if weights is not None else per.mean()), logp.mean()

    def alpha_update(self, log_prob_mean: torch.Tensor) -> None:
        # L_α = −log α (log π + H̄)
        self.alpha_step(-(log_prob_mean + self.target_entropy))
