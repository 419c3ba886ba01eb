"""DreamerV3-style behaviour learning in imagination, as SOLD uses it (Mosbach et al., ICML 2025, Sec. 3.4;
Hafner et al. 2023).

* ``symlog(x) = sign(x) ln(1 + |x|)``, ``symexp(y) = sign(y)(e^{|y|} − 1)``.
* :class:`TwoHot`: a categorical over ``num_bins`` bins uniformly spaced in symlog space on ``[low, high]``; a scalar
  ``x`` is encoded as weights on the two bins around ``symlog(x)``, linear in the distance and summing to 1; the mean
  is ``symexp(Σ_i p_i b_i)``; the loss is ``−log p(x) = −Σ_i twohot(x)_i log p_i``.
* :func:`lambda_returns` (SOLD's alignment): with imagined states ``z_0 … z_H`` (``z_0`` the last context state),
  rewards and bootstrap values at the arrival states ``z_1 … z_H``::

      R_k = r̂(z_{k+1}) + γ [(1 − λ) V(z_{k+1}) + λ R_{k+1}],   R_H = V(z_H),   k = 0 … H−1.

* :class:`Moments`: EMA (decay 0.99) of the 5th and 95th return percentiles, scale ``S = max(1, P95 − P5)``.
* :class:`GaussianActorHead`: ``N(tanh(μ), σ)`` with ``σ = (1 − 0.1)·sigmoid(x + 2) + 0.1 ∈ [0.1, 1]``.
* :class:`ImaginationLearner`: roll out ``H`` steps from a context with ``a ~ π(·|history)`` (reparameterised),
  predict rewards and values, and update

      L_actor  = −mean_k(γ^k (R_k − V_targ(z_k)) / S) − η · mean_k(γ^k H[π(·|z_k)])
      L_critic = mean_k(γ^k · −log p_V(R_k | z_k)) + 0.1 · mean_k(γ^k · −log p_V(V_targ(z_k) | z_k))

  with actor gradients *through the dynamics* (the actor's own input is detached, as released), the return term over
  ``k = 0 … H−2`` and the entropy and critic terms over all ``H`` steps; the target critic is an EMA (decay 0.98).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import torch
from torch import nn

from sold.errors import SoldError, check_unit_interval
from sold.rollout import GrowingHistory


def symlog(x: torch.Tensor) -> torch.Tensor:
    return torch.sign(x) * torch.log1p(torch.abs(x))


def symexp(x: torch.Tensor) -> torch.Tensor:
    return torch.sign(x) * torch.expm1(torch.abs(x))


class TwoHot(nn.Module):
    """TwoHot distribution over symlog-spaced bins (DreamerV3). ``logits [..., num_bins]``, values ``[...]``."""

    def __init__(self, num_bins: int = 255, low: float = -20.0, high: float = 20.0):
        super().__init__()
        if isinstance(num_bins, bool) or not isinstance(num_bins, int) or num_bins < 2:
            raise SoldError(f"num_bins must be an integer >= 2 for TwoHot, got {num_bins!r}")
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise SoldError(f"TwoHot needs finite low < high, got low={low!r}, high={high!r}")
        self.num_bins = num_bins
        self.register_buffer("bins", torch.linspace(low, high, num_bins, dtype=torch.float64), persistent=False)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Two-hot weights ``[..., num_bins]`` of ``symlog(x)`` (clipped to the bin range)."""
        b = self.bins.to(x.dtype)
        y = symlog(x).clamp(b[0], b[-1])
        idx = (torch.searchsorted(b, y.contiguous(), right=True) - 1).clamp(0, self.num_bins - 2)
        lo, hi = b[idx], b[idx + 1]
        w_hi = ((y - lo) / (hi - lo)).clamp(0, 1)
        out = torch.zeros(*x.shape, self.num_bins, dtype=x.dtype, device=x.device)
        out.scatter_(-1, idx[..., None], (1 - w_hi)[..., None])
        out.scatter_add_(-1, (idx + 1)[..., None], w_hi[..., None])
        return out

    def log_prob(self, logits: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``Σ_i twohot(x)_i log softmax(logits)_i`` (``[...]``)."""
        return (self.encode(x.to(logits.dtype)) * logits.log_softmax(-1)).sum(-1)

    def mean(self, logits: torch.Tensor) -> torch.Tensor:
        """``symexp(Σ_i p_i b_i)`` (``[...]``)."""
        return symexp((logits.softmax(-1) * self.bins.to(logits.dtype)).sum(-1))


def lambda_returns(rewards: torch.Tensor, values: torch.Tensor, *, gamma: float, lam: float) -> torch.Tensor:
    """λ-returns ``R [..., H]`` of states ``z_0 … z_{H−1}`` from ``rewards [..., H]`` = r̂(z_1 … z_H) and
    ``values [..., H]`` = V(z_1 … z_H) (see the module docstring)."""
    gamma, lam = check_unit_interval("gamma", gamma), check_unit_interval("lam (λ)", lam)
    if rewards.shape != values.shape or rewards.ndim < 1:
        raise SoldError(f"rewards and values must have the same shape [..., H], got {tuple(rewards.shape)} and "
                        f"{tuple(values.shape)}")
    h = rewards.shape[-1]
    out = [None] * h
    nxt = values[..., -1]                                                  # R_H = V(z_H)
    for k in reversed(range(h)):
        nxt = rewards[..., k] + gamma * ((1 - lam) * values[..., k] + lam * nxt)
        out[k] = nxt
    return torch.stack(out, -1)


class Moments(nn.Module):
    """Return normalisation: EMA of the ``low_q``/``high_q`` percentiles; ``scale = max(1, high − low)``."""

    def __init__(self, *, decay: float = 0.99, low_q: float = 0.05, high_q: float = 0.95, max_scale: float = 1.0):
        super().__init__()
        self.decay = check_unit_interval("decay", decay)
        self.low_q, self.high_q, self.max_scale = low_q, high_q, max_scale
        self.register_buffer("low", torch.zeros(()))
        self.register_buffer("high", torch.zeros(()))

    @torch.no_grad()
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = x.detach().float().reshape(-1)
        self.low.mul_(self.decay).add_((1 - self.decay) * torch.quantile(x, self.low_q))
        self.high.mul_(self.decay).add_((1 - self.decay) * torch.quantile(x, self.high_q))
        return self.low.clone(), torch.clamp(self.high - self.low, min=self.max_scale)


class GaussianActorHead:
    """Maps raw actor outputs ``[..., 2A]`` to ``Normal(mean, std)``: ``mean = tanh(μ)`` (``clamp_pre_tanh``: the
    released ``tanh(clamp(μ, −1, 1))``), ``std = (1 − min_std)·sigmoid(x + 2) + min_std`` with ``min_std = 0.1``."""

    def __init__(self, action_dim: int, *, min_std: float = 0.1, clamp_pre_tanh: bool = False):
        self.action_dim, self.min_std, self.clamp_pre_tanh = action_dim, min_std, clamp_pre_tanh

    def __call__(self, raw: torch.Tensor) -> torch.distributions.Independent:
        if raw.shape[-1] != 2 * self.action_dim:
            raise SoldError(f"actor output must have 2 × action_dim = {2 * self.action_dim} entries, got "
                            f"{raw.shape[-1]}")
        mu, s = raw.chunk(2, -1)
        if self.clamp_pre_tanh:
            mu = mu.clamp(-1, 1)
        mean = torch.tanh(mu)
        std = (1 - self.min_std) * torch.sigmoid(s + 2) + self.min_std
        return torch.distributions.Independent(torch.distributions.Normal(mean, std), 1)


PredictNext = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""``world(states [B, T, ...], actions [B, T, A]) → next state [B, ...]`` (differentiable in the actions)."""


class ImaginationLearner(nn.Module):
    """Actor, critic, target critic and their optimisers; :meth:`update` is one imagination step of learning.

    ``actor`` and ``critic`` map a state history ``[B, T, ...]`` to ``[B, T, out]`` causally (a
    :class:`sold.aggregator.SlotAggregationTransformer` for SOLD, a per-step MLP for the holistic baseline), so the
    same code trains both and only the representation differs.
    """

    def __init__(self, *, actor: nn.Module, critic: nn.Module, action_dim: int, twohot: TwoHot, horizon: int = 8,
                 gamma: float = 0.96, lam: float = 0.95, entropy_coef: float = 3e-4, actor_lr: float = 3e-5,
                 critic_lr: float = 3e-5, grad_clip: float = 10.0, target_decay: float = 0.98,
                 clamp_pre_tanh: bool = False, clip_imagined_actions: bool = False,
                 entropy_weighting: str = "discounted"):
        super().__init__()
        self.gamma, self.lam = check_unit_interval("gamma", gamma), check_unit_interval("lam (λ)", lam)
        check_unit_interval("target_decay", target_decay)
        if horizon < 2:
            raise SoldError(f"horizon must be >= 2, got {horizon}")
        if entropy_weighting not in ("discounted", "uniform"):
            raise SoldError(f"entropy_weighting must be 'discounted' or 'uniform', got {entropy_weighting!r}")
        self.actor, self.critic, self.twohot = actor, critic, twohot
        self.target_critic = copy.deepcopy(critic).requires_grad_(False)
        self.dist = GaussianActorHead(action_dim, clamp_pre_tanh=clamp_pre_tanh)
        self.action_dim, self.horizon, self.entropy_coef = action_dim, horizon, entropy_coef
        self.grad_clip, self.target_decay = grad_clip, target_decay
        self.clip_imagined_actions, self.entropy_weighting = clip_imagined_actions, entropy_weighting
        self.moments = Moments()
        self.actor_opt = torch.optim.Adam(actor.parameters(), lr=actor_lr, eps=1e-5)
        self.critic_opt = torch.optim.Adam(critic.parameters(), lr=critic_lr, eps=1e-5)

    def _step(self, module: nn.Module, opt: torch.optim.Optimizer, loss: torch.Tensor, *,
              retain_graph: bool = False) -> None:
        """One clipped optimiser step of ``module`` on ``loss``, with gradients to its parameters only (the loss's
        graph also runs through the dynamics and the other heads, which must not receive them)."""
        params = [p for p in module.parameters() if p.requires_grad]
        grads = torch.autograd.grad(loss, params, allow_unused=True, retain_graph=retain_graph)
        opt.zero_grad(set_to_none=True)
        for p, g in zip(params, grads):
            p.grad = g
        nn.utils.clip_grad_norm_(params, self.grad_clip)
        opt.step()

    def act(self, history: torch.Tensor, *, deterministic: bool = False) -> torch.Tensor:
        """Action ``[B, A]`` for the last step of ``history [B, T, ...]`` (the mode when ``deterministic``)."""
        d = self.dist(self.actor(history)[:, -1])
        return d.base_dist.mean if deterministic else d.sample().clamp(-1, 1)

    def imagine(self, world: PredictNext, context: torch.Tensor, context_actions: torch.Tensor):
        """Roll out ``horizon`` steps: ``states [B, c + H, ...]``, ``actions [B, H, A]``, ``entropy [B, H]``."""
        x, acts = context, context_actions
        actions, ents = [], []
        actor = GrowingHistory(self.actor) if hasattr(self.actor, "step") else None
        for _ in range(self.horizon):
            raw = actor(x.detach()) if actor is not None else self.actor(x.detach())[:, -1]
            d = self.dist(raw)
            a = d.rsample()
            if self.clip_imagined_actions:
                a = a.clamp(-1, 1)
            actions.append(a)
            ents.append(d.entropy())
            acts = torch.cat([acts, a[:, None]], 1)
            x = torch.cat([x, world(x, acts)[:, None]], 1)
        return x, torch.stack(actions, 1), torch.stack(ents, 1)

    def update(self, world: PredictNext, reward_head: nn.Module, context: torch.Tensor,
               context_actions: torch.Tensor) -> dict[str, float]:
        """One actor and one critic update from imagined rollouts starting at ``context [B, c, ...]`` (with the
        ``c − 1`` actions between the context steps ``[B, c − 1, A]``)."""
        c, h = context.shape[1], self.horizon
        states, _, ent = self.imagine(world, context, context_actions)            # [B, c + H, ...]
        rewards = self.twohot.mean(reward_head(states)[:, c:])                     # r̂(z_1 … z_H)   [B, H]
        critic_logits = self.critic(states)                                        # one pass serves both losses
        values = self.twohot.mean(critic_logits[:, c:])                            # V(z_1 … z_H)   [B, H]
        returns = lambda_returns(rewards, values, gamma=self.gamma, lam=self.lam)  # R(z_0 … z_{H−1})
        with torch.no_grad():
            v_targ = self.twohot.mean(self.target_critic(states.detach())[:, c - 1: c - 1 + h])  # [B, H]
        disc = self.gamma ** torch.arange(h, dtype=returns.dtype, device=returns.device)  # γ^k
        _, scale = self.moments(returns[:, : h - 1])
        adv = (returns[:, : h - 1] - v_targ[:, : h - 1]) / scale
        if self.entropy_weighting == "discounted":
            ent_term = (disc * ent).mean()
        else:  # released: the (B, H, 1) × (1, H) broadcast gives mean(γ^k) · mean(H)
            ent_term = disc.mean() * ent.mean()
        actor_loss = -(disc[: h - 1] * adv).mean() - self.entropy_coef * ent_term
        self._step(self.actor, self.actor_opt, actor_loss, retain_graph=True)
        # critic on the imagined states z_0 … z_{H−1}, gradients to the critic's parameters only (as on detached
        # states: the same pass as the values above, so no second critic forward)
        logits = critic_logits[:, c - 1: c - 1 + h]
        critic_loss = (disc * -self.twohot.log_prob(logits, returns.detach())).mean() + \
            0.1 * (disc * -self.twohot.log_prob(logits, v_targ)).mean()
        self._step(self.critic, self.critic_opt, critic_loss)
        with torch.no_grad():
            for pt, p in zip(self.target_critic.parameters(), self.critic.parameters()):
                pt.mul_(self.target_decay).add_((1 - self.target_decay) * p)
        return {"actor_loss": float(actor_loss.detach()), "critic_loss": float(critic_loss.detach()),
                "imagined_return": float(returns.mean().detach()), "entropy": float(ent.mean().detach()),
                "scale": float(scale)}
