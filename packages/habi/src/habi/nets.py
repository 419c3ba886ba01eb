"""Small building blocks: Mish MLPs, the planner's twin-Q critic and the habitual critic.

* :class:`TwinQ` (Diffusion-QL critic): ``Q_k(s, a) = MLP_k([s, a])``, ``k = 1, 2``, hidden 256, Mish;
  ``q_min = min(Q_1, Q_2)``. Shapes ``s (B, obs_dim), a (B, act_dim) -> (B,)``.
* :class:`HabiCritic` (the paper's decision-space critic ``C(z, a)``, official ``NormalCritic``): LayerNorm MLP on
  ``[z, a]`` -> scalar. Shapes ``z (B, d_z), a (B, act_dim) -> (B,)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Sequential):
    """``nn.Sequential`` of Linear/LayerNorm/Mish whose forward calls the functional ops directly.

    Identical maths and state-dict keys to a plain ``nn.Sequential``; it only skips the per-layer
    ``Module.__call__`` overhead, which dominates batch-1 decisions of small MLPs on CPU. Every network of both the
    planner and the habitual policy uses it, so their speed comparison is like for like.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self:
            if type(layer) is nn.Linear:
                x = F.linear(x, layer.weight, layer.bias)
            elif type(layer) is nn.LayerNorm:
                x = F.layer_norm(x, layer.normalized_shape, layer.weight, layer.bias, layer.eps)
            elif type(layer) is nn.Mish:
                x = F.mish(x)
            else:
                x = layer(x)
        return x


def mlp(inp: int, hidden: Sequence[int], out: int, *, layer_norm: bool = False) -> MLP:
    """``Linear -> [LayerNorm] -> Mish`` for each hidden size, then a final ``Linear`` to ``out``."""
    layers: list[nn.Module] = []
    d = inp
    for h in hidden:
        layers.append(nn.Linear(d, h))
        if layer_norm:
            layers.append(nn.LayerNorm(h))
        layers.append(nn.Mish())
        d = h
    layers.append(nn.Linear(d, out))
    return MLP(*layers)


class TwinQ(nn.Module):
    """Twin Q network of Diffusion-QL: two independent MLPs on ``[s, a]``."""

    def __init__(self, *, obs_dim: int, act_dim: int, hidden: int = 256, depth: int = 3) -> None:
        super().__init__()
        self.q1 = mlp(obs_dim + act_dim, [hidden] * depth, 1)
        self.q2 = mlp(obs_dim + act_dim, [hidden] * depth, 1)

    def forward(self, s: torch.Tensor, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.cat([s, a], dim=-1)
        return self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)

    def q_min(self, s: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        q1, q2 = self(s, a)
        return torch.minimum(q1, q2)


class HabiCritic(nn.Module):
    """Habitual critic ``C(z, a)`` (LayerNorm MLP) predicting the planner's value, standardised.

    The output is ``mean_Q + std_Q · f([z, a])``; ``mean_Q``/``std_Q`` are buffers fitted to the teacher's Q values
    before training (an affine map, so the argmax over candidates is unchanged; it only spares the net from
    learning a large offset with Adam's small steps).
    """

    def __init__(self, *, latent_dim: int, act_dim: int, hidden: int = 256, depth: int = 2) -> None:
        super().__init__()
        self.net = mlp(latent_dim + act_dim, [hidden] * depth, 1, layer_norm=True)
        self.register_buffer("q_mean", torch.zeros(()))
        self.register_buffer("q_std", torch.ones(()))

    def forward(self, z: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        return self.q_mean + self.q_std * self.net(torch.cat([z, a], dim=-1)).squeeze(-1)


class MLPPolicy(nn.Module):
    """Deterministic MLP policy ``s -> tanh(MLP(s))`` used by the BC and distillation baselines."""

    def __init__(self, *, obs_dim: int, act_dim: int, hidden: int = 256, depth: int = 2) -> None:
        super().__init__()
        self.net = mlp(obs_dim, [hidden] * depth, act_dim)

    def forward(self, s: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.net(s))

