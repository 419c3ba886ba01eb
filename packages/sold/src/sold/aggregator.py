"""Slot aggregation transformer: SOLD's reward, actor and critic (Mosbach et al., ICML 2025, Sec. 3.3).

Tokens: all slots of all steps of the history plus one learned *output token* per step, laid out step by step::

    [s_{0,1} … s_{0,K}, o_0,  s_{1,1} … s_{1,K}, o_1,  …]          (T·(K+1) tokens of width E)

No positional encoding. Attention uses an **ALiBi causal mask**: a token of step ``i`` may attend to any token of a
step ``j ≤ i``, with the additive bias ``−m_h (i − j)`` (per-head slopes ``m_h = 2^{−8h/H}``, Press et al. 2022),
and never to a later step. Blocks are pre-norm (RMSNorm) transformer layers with a SiLU feed-forward. The output
token of each step goes to an MLP head (``Linear → RMSNorm → SiLU → Linear``).

Consequences that the tests check: the output at step ``t`` is invariant to the order of the slots within each step
(no slot identity) and does not change when steps ``> t`` change (causal).

``forward(slots [B, T, K, D]) → [B, T, out_dim]`` (and the last layer's attention ``[B, H, N, N]`` on request).
"""

from __future__ import annotations

import torch
from torch import nn

from sold.errors import SoldError, check_heads


def alibi_slopes(heads: int) -> torch.Tensor:
    """``m_h = 2^{−8h/H}`` for ``h = 1..H``."""
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)])


def alibi_causal_bias(steps: int, tokens_per_step: int, heads: int, *, past: int = 0) -> torch.Tensor:
    """``[H, N, P + N]`` additive attention bias of the ``N = steps · tokens_per_step`` tokens of steps
    ``past … past + steps − 1`` over the ``P = past · tokens_per_step`` earlier tokens and themselves: ``−m_h (i − j)``
    between steps ``i ≥ j`` and ``−inf`` towards later steps (``past = 0``: the square ``[H, N, N]`` bias)."""
    step = torch.arange(past, past + steps).repeat_interleave(tokens_per_step)    # [N] step index of each new token
    key_step = torch.arange(past + steps).repeat_interleave(tokens_per_step)      # [P + N]
    dist = (step[:, None] - key_step[None, :]).float()                             # [N, P + N] i − j
    bias = -alibi_slopes(heads)[:, None, None] * dist[None]
    return bias.masked_fill(dist[None] < 0, float("-inf"))


class _Block(nn.Module):
    def __init__(self, dim: int, heads: int, ff_dim: int):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.RMSNorm(dim), nn.RMSNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ff = nn.Sequential(nn.Linear(dim, ff_dim), nn.SiLU(), nn.Linear(ff_dim, dim))

    def forward(self, x: torch.Tensor, bias: torch.Tensor,
                past: tuple[torch.Tensor, torch.Tensor] | None = None):
        """``x [B, N, E]`` (new tokens), ``bias [H, N, P + N]``, ``past``: the keys and values ``[B, H, P, E/H]`` of
        the ``P`` earlier tokens. Returns the new tokens, the attention ``[B, H, N, P + N]`` and the keys/values of
        all ``P + N`` tokens."""
        b, n, e = x.shape
        q, k, v = self.qkv(self.norm1(x)).reshape(b, n, 3, self.heads, e // self.heads).permute(2, 0, 3, 1, 4)
        if past is not None:
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        att = (q @ k.transpose(-1, -2)) * (e // self.heads) ** -0.5 + bias         # [B, H, N, P + N]
        att = att.softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, n, e)                             # [B, N, E]
        x = x + self.proj(y)
        return x + self.ff(self.norm2(x)), att, (k, v)


class SlotAggregationTransformer(nn.Module):
    """Aggregate a history of slot sets into one output per step (reward / actor / critic head).

    ``zero_init_head=True`` zero-initialises the last layer (DreamerV3 does this for the TwoHot reward and critic).
    """

    def __init__(self, *, slot_dim: int, out_dim: int, token_dim: int = 64, num_layers: int = 2, heads: int = 4,
                 ff_dim: int = 128, head_hidden: int = 128, zero_init_head: bool = False):
        super().__init__()
        for name, v in (("slot_dim", slot_dim), ("out_dim", out_dim), ("token_dim", token_dim),
                        ("num_layers", num_layers), ("heads", heads), ("ff_dim", ff_dim),
                        ("head_hidden", head_hidden)):
            if not isinstance(v, int) or v < 1:
                raise SoldError(f"{name} must be a positive integer, got {v!r}")
        check_heads("token_dim", token_dim, heads)
        self.slot_dim, self.heads = slot_dim, heads
        self.slot_in = nn.Linear(slot_dim, token_dim)
        self.output_token = nn.Parameter(torch.randn(token_dim) * 0.02)
        self.blocks = nn.ModuleList(_Block(token_dim, heads, ff_dim) for _ in range(num_layers))
        self.head = nn.Sequential(nn.Linear(token_dim, head_hidden), nn.RMSNorm(head_hidden), nn.SiLU(),
                                  nn.Linear(head_hidden, out_dim))
        if zero_init_head:
            nn.init.zeros_(self.head[-1].weight)
            nn.init.zeros_(self.head[-1].bias)

    def forward(self, slots: torch.Tensor, *, return_attn: bool = False):
        if slots.ndim != 4 or slots.shape[-1] != self.slot_dim:
            raise SoldError(f"slots must have shape [B, T, K, {self.slot_dim}], got {tuple(slots.shape)}")
        b, t, k, _ = slots.shape
        tok = self.slot_in(slots)                                                    # [B, T, K, E]
        out = self.output_token.expand(b, t, 1, -1)
        x = torch.cat([tok, out], 2).reshape(b, t * (k + 1), -1)                    # [B, T·(K+1), E]
        bias = alibi_causal_bias(t, k + 1, self.heads).to(x)
        att = None
        for blk in self.blocks:
            x, att, _ = blk(x, bias)
        y = self.head(x.reshape(b, t, k + 1, -1)[:, :, k])                          # output tokens → [B, T, out]
        return (y, att) if return_attn else y

    def step(self, slots: torch.Tensor, cache: dict | None = None) -> tuple[torch.Tensor, dict]:
        """Incremental :meth:`forward`: ``slots [B, Tn, K, D]`` are the steps after those in ``cache`` (``None``:
        none yet). Returns the outputs of the new steps ``[B, Tn, out]`` and the cache (every layer's keys and values
        and the step count). Exact: a step's tokens attend only to steps ≤ its own, so the earlier tokens' keys and
        values do not change when steps are appended (equal to ``forward`` on the whole history, tested)."""
        if slots.ndim != 4 or slots.shape[-1] != self.slot_dim:
            raise SoldError(f"slots must have shape [B, T, K, {self.slot_dim}], got {tuple(slots.shape)}")
        b, tn, k, _ = slots.shape
        t0 = 0 if cache is None else cache["t"]
        if cache is not None and cache["k"] != k:
            raise SoldError(f"the cache holds {cache['k']} slots per step, got {k}")
        tok = self.slot_in(slots)
        x = torch.cat([tok, self.output_token.expand(b, tn, 1, -1)], 2).reshape(b, tn * (k + 1), -1)
        bias = alibi_causal_bias(tn, k + 1, self.heads, past=t0).to(x)
        kv = []
        for i, blk in enumerate(self.blocks):
            x, _, layer_kv = blk(x, bias, None if cache is None else cache["kv"][i])
            kv.append(layer_kv)
        y = self.head(x.reshape(b, tn, k + 1, -1)[:, :, k])
        return y, {"t": t0 + tn, "k": k, "kv": kv}

    def output_attention_on_slots(self, slots: torch.Tensor) -> torch.Tensor:
        """``[B, T, K]``: the last layer's attention (mean over heads) of step ``t``'s output token on the ``K`` slots
        of the same step, renormalised over those slots (the interpretability read-out of the paper)."""
        b, t, k, _ = slots.shape
        _, att = self(slots, return_attn=True)
        att = att.mean(1).reshape(b, t, k + 1, t, k + 1)                             # [B, T_q, K+1, T_k, K+1]
        idx = torch.arange(t)
        same = att[:, idx, k, idx, :k]                                               # [B, T, K]
        return same / same.sum(-1, keepdim=True).clamp_min(1e-12)


class PerStepMLP(nn.Module):
    """The holistic baseline's head: an MLP applied to each step's latent ``[B, T, Z] → [B, T, out]``."""

    def __init__(self, *, in_dim: int, out_dim: int, hidden: int = 128, zero_init_head: bool = False):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.RMSNorm(hidden), nn.SiLU(),
                                 nn.Linear(hidden, hidden), nn.RMSNorm(hidden), nn.SiLU(), nn.Linear(hidden, out_dim))
        if zero_init_head:
            nn.init.zeros_(self.net[-1].weight)
            nn.init.zeros_(self.net[-1].bias)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)

    def step(self, z: torch.Tensor, cache: dict | None = None) -> tuple[torch.Tensor, dict]:
        """Incremental :meth:`forward` (per step, so nothing to carry but the step count)."""
        return self.net(z), {"t": (0 if cache is None else cache["t"]) + z.shape[1]}
