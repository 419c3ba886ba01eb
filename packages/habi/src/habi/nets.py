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
    """``Linear -> [LayerNorm] -> Mish`` for each hidden size, then a final ``Linear`` to ``out``
    (:func:`icml25.nn.mlp`'s layers, run by the fast :class:`MLP` forward)."""
    from icml25.nn import mlp as shared_mlp

    return MLP(*shared_mlp(inp, list(hidden), out, activation=nn.Mish, layer_norm=layer_norm))


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



class FusedTwinMLP:
    """Two MLPs of identical shape on the same input, evaluated together (inference only).

    ``f(x) = (mlp_a(x), mlp_b(x))`` computed as one ``Linear`` with the first layers' weights concatenated, then
    batched matmuls (``baddbmm``) over the stacked later layers, i.e. a block-diagonal network: the same numbers
    as running the two MLPs separately (a test checks it) in fewer, larger ops. Used for the prior's μ/σ MLPs of
    the habitual policy and for the planner's twin critic alike. The weights are snapshotted at construction:
    build a new one after further training. Supports Linear/Mish stacks only.
    """

    def __init__(self, mlp_a: nn.Sequential, mlp_b: nn.Sequential) -> None:
        la = [m for m in mlp_a if isinstance(m, nn.Linear)]
        lb = [m for m in mlp_b if isinstance(m, nn.Linear)]
        kinds_a = [type(m) for m in mlp_a]
        if kinds_a != [type(m) for m in mlp_b] or any(k not in (nn.Linear, nn.Mish) for k in kinds_a):
            raise TypeError("FusedTwinMLP needs two Linear/Mish MLPs of identical layout")
        with torch.no_grad():
            self.w0 = torch.cat([la[0].weight, lb[0].weight], 0).clone()  # (2h, in)
            self.b0 = torch.cat([la[0].bias, lb[0].bias], 0).clone()  # (2h,)
            self.ws = [torch.stack([a.weight.t(), b.weight.t()]).contiguous() for a, b in zip(la[1:], lb[1:], strict=True)]
            self.bs = [torch.stack([a.bias, b.bias])[:, None, :].clone() for a, b in zip(la[1:], lb[1:], strict=True)]
        self.h = la[0].out_features

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b = x.shape[0]
        y = F.mish(F.linear(x, self.w0, self.b0))  # (B, 2h)
        y = y.view(b, 2, self.h).transpose(0, 1)  # (B, 2h) -> (2, B, h)
        n = len(self.ws)
        for i, (w, bias) in enumerate(zip(self.ws, self.bs, strict=True)):
            y = torch.baddbmm(bias, y, w)  # (2, B, h_i) @ (2, h_i, h_{i+1})
            if i < n - 1:
                y = F.mish(y)
        return y[0], y[1]
