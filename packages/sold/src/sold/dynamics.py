"""OCVP-Seq object-centric dynamics (SOLD, Mosbach et al., ICML 2025, Sec. 3.2; Villar-Corrales et al. 2023).

Inputs: slots ``s [B, T, K, D]`` (from a frozen SAVi) and actions ``a [B, T, A]`` where ``a_t`` is the action taken
*after* observing ``s_t``. Tokens per step: the ``K`` slot tokens ``W_s s_{t,k}`` and one action token ``W_a a_t``,
all plus a sinusoidal temporal encoding of ``t`` shared by every token of the step. There is **no per-slot identity
or positional encoding**, so the model is equivariant to permutations of the slots.

Each of ``num_layers`` layers is an *object-attention* block (a pre-norm transformer layer over the ``K + 1`` tokens
of one step) followed by a *time-attention* block (a pre-norm transformer layer over the ``T`` steps of each token,
with a causal mask). The slot tokens are projected back to ``D`` with a residual::

    ŝ_{t+1} = s_t + Δ_t,   Δ_t = W_o LN(h_{t, 1..K})

Two differences from the released OCVP (``sold/modeling/sold/dynamics.py``), both options:

* ``time_causal=True`` (ours): the time block masks the future. The released block takes a mask argument but does not
  use it; its autoregressive rollout reads only the last step, so it stays a valid predictor, but in a multi-layer
  model the earlier steps' tokens then see later context steps, ``forward``'s row ``t`` is no longer a one-step
  prediction from steps ≤ t, and no key/value cache is exact. ``time_causal=False`` is the released form (no cache).
* ``final_norm=True`` (ours): a LayerNorm on the last pre-norm block's residual stream before ``W_o`` (the usual
  closing norm of a pre-norm transformer). ``final_norm=False`` is the released form (``W_o`` on the raw stream).

``forward`` gives the one-step predictions for every step at once (causal: ``ŝ_{t+1}`` depends only on steps ≤ t);
:meth:`rollout` predicts autoregressively from a context, feeding its own predictions back (no teacher forcing).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from sold.errors import SoldError, check_heads
from sold.rollout import autoregressive_rollout


def sinusoidal(t: int, dim: int, *, offset: int = 0) -> torch.Tensor:
    """``[t, dim]`` sinusoidal encoding of positions ``offset .. offset + t − 1`` (Vaswani et al. 2017)."""
    pos = torch.arange(offset, offset + t, dtype=torch.float32)[:, None]
    i = torch.arange(0, dim, 2, dtype=torch.float32)
    freq = torch.exp(-math.log(10000.0) * i / dim)
    enc = torch.zeros(t, dim)
    enc[:, 0::2] = torch.sin(pos * freq)
    enc[:, 1::2] = torch.cos(pos * freq[: dim // 2])
    return enc


def causal_mask(t: int) -> torch.Tensor:
    """``[t, t]`` boolean mask, True where attention is *forbidden* (the future)."""
    return torch.triu(torch.ones(t, t, dtype=torch.bool), 1)


class OCVPDynamics(nn.Module):
    """Object-centric transformer dynamics on slots; see the module docstring.

    ``forward(slots [B, T, K, D], actions [B, T, A]) → next slots [B, T, K, D]`` (row ``t`` predicts ``s_{t+1}``).
    """

    def __init__(self, *, slot_dim: int, action_dim: int, token_dim: int = 64, num_layers: int = 2, heads: int = 4,
                 ff_dim: int = 128, dropout: float = 0.1, residual: bool = True, cache_in_training: bool = False,
                 time_causal: bool = True, final_norm: bool = True):
        super().__init__()
        for name, v in (("slot_dim", slot_dim), ("action_dim", action_dim), ("token_dim", token_dim),
                        ("num_layers", num_layers), ("heads", heads), ("ff_dim", ff_dim)):
            if not isinstance(v, int) or v < 1:
                raise SoldError(f"{name} must be a positive integer, got {v!r}")
        check_heads("token_dim", token_dim, heads)
        if not 0.0 <= dropout < 1.0:
            raise SoldError(f"dropout must be in [0, 1), got {dropout!r}")
        self.slot_dim, self.action_dim, self.token_dim, self.residual = slot_dim, action_dim, token_dim, residual
        self.cache_in_training = bool(cache_in_training)
        self.time_causal, self.final_norm = bool(time_causal), bool(final_norm)
        self.slot_in = nn.Linear(slot_dim, token_dim)
        self.action_in = nn.Linear(action_dim, token_dim)
        self.drop = nn.Dropout(dropout)

        def layer() -> nn.TransformerEncoderLayer:
            return nn.TransformerEncoderLayer(token_dim, heads, dim_feedforward=ff_dim, dropout=dropout,
                                              batch_first=True, norm_first=True)

        self.object_blocks = nn.ModuleList(layer() for _ in range(num_layers))
        self.time_blocks = nn.ModuleList(layer() for _ in range(num_layers))
        self.norm_out = nn.LayerNorm(token_dim) if final_norm else nn.Identity()
        self.out = nn.Linear(token_dim, slot_dim)

    def _check(self, slots: torch.Tensor, actions: torch.Tensor) -> None:
        if slots.ndim != 4 or slots.shape[-1] != self.slot_dim:
            raise SoldError(f"slots must have shape [B, T, K, {self.slot_dim}], got {tuple(slots.shape)}")
        if actions.ndim != 3 or actions.shape[-1] != self.action_dim:
            raise SoldError(f"actions must have shape [B, T, {self.action_dim}] (action_dim {self.action_dim}), "
                            f"got {tuple(actions.shape)}")
        if actions.shape[:2] != slots.shape[:2]:
            raise SoldError(f"actions [B, T, A] must match slots [B, T, K, D] in B and T, got {tuple(actions.shape)} "
                            f"and {tuple(slots.shape)}")

    def forward(self, slots: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        self._check(slots, actions)
        b, t, k, _ = slots.shape
        e = self.token_dim
        tokens = torch.cat([self.slot_in(slots), self.action_in(actions)[:, :, None]], 2)  # [B, T, K + 1, E]
        tokens = self.drop(tokens + sinusoidal(t, e).to(tokens)[None, :, None])
        mask = causal_mask(t).to(tokens.device) if self.time_causal else None
        for obj, tim in zip(self.object_blocks, self.time_blocks):
            tokens = obj(tokens.reshape(b * t, k + 1, e)).reshape(b, t, k + 1, e)           # attention over objects
            tt = tokens.permute(0, 2, 1, 3).reshape(b * (k + 1), t, e)                     # [B·(K+1), T, E]
            tt = tim(tt, src_mask=mask, is_causal=self.time_causal)                         # (causal) over time
            tokens = tt.reshape(b, k + 1, t, e).permute(0, 2, 1, 3)                         # [B, T, K + 1, E]
        delta = self.out(self.norm_out(tokens[:, :, :k]))                                   # [B, T, K, D]
        return slots + delta if self.residual else delta

    @property
    def can_cache(self) -> bool:
        """Whether :meth:`rollout` uses the key/value cache by default: always exact when no dropout is active (eval
        mode, or dropout 0); with active dropout only when ``cache_in_training``, where each token gets one dropout
        mask (as in a GPT's teacher-forced pass) instead of a fresh mask at every recomputation of the history."""
        if not self.time_causal:  # released form: every step's token sees the whole history, no cache is exact
            return False
        return not self.training or self.drop.p == 0.0 or self.cache_in_training

    def _time_attention(self, tim: nn.TransformerEncoderLayer, x: torch.Tensor,
                        past: tuple[torch.Tensor, torch.Tensor] | None):
        """One pre-norm time block on new steps ``x [N, Tn, E]`` given the cached keys/values ``[N, h, Tc, E/h]`` of
        the earlier steps; the same arithmetic as ``tim(x_all, src_mask=causal)`` restricted to the new rows."""
        att = tim.self_attn
        n, tn, e = x.shape
        nh = att.num_heads
        q, k, v = nn.functional.linear(tim.norm1(x), att.in_proj_weight, att.in_proj_bias).chunk(3, -1)
        q, k, v = (z.reshape(n, tn, nh, e // nh).transpose(1, 2) for z in (q, k, v))   # [N, h, Tn, E/h]
        if past is not None:
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)                # [N, h, Tc + Tn, E/h]
        tc = k.shape[2] - tn
        mask = torch.triu(torch.ones(tn, tc + tn, dtype=torch.bool, device=x.device), tc + 1)  # new row i sees ≤ tc + i
        y = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=~mask,
                                                       dropout_p=att.dropout if self.training else 0.0)
        # the layer's own dropout modules (identity in eval mode), placed as in its norm-first forward
        x = x + tim.dropout1(att.out_proj(y.transpose(1, 2).reshape(n, tn, e)))
        x = x + tim.dropout2(tim.linear2(tim.dropout(tim.activation(tim.linear1(tim.norm2(x))))))
        return x, (k, v)

    def step(self, slots: torch.Tensor, actions: torch.Tensor, cache: dict | None = None):
        """Incremental ``forward`` with a key/value cache of the time attention: ``slots [B, Tn, K, D]`` and
        ``actions [B, Tn, A]`` are the steps after those already in ``cache`` (``None``: none yet). Returns the
        one-step predictions for the new steps ``[B, Tn, K, D]`` and the updated cache. Equal to ``forward`` on the
        whole history (tested); only valid where :attr:`can_cache`."""
        self._check(slots, actions)
        if not self.time_causal:
            raise SoldError("the key/value cache needs the causal time mask (time_causal=True); the released form "
                            "(time_causal=False) recomputes the history at every step")
        if not self.can_cache:
            raise SoldError("the key/value cache is only exact without active dropout (call .eval(), use dropout 0, "
                            "or build the dynamics with cache_in_training=True)")
        b, tn, k, _ = slots.shape
        e = self.token_dim
        t0 = 0 if cache is None else cache["t"]
        tokens = torch.cat([self.slot_in(slots), self.action_in(actions)[:, :, None]], 2)   # [B, Tn, K + 1, E]
        tokens = self.drop(tokens + sinusoidal(tn, e, offset=t0).to(tokens)[None, :, None])
        kv = []
        for i, (obj, tim) in enumerate(zip(self.object_blocks, self.time_blocks)):
            tokens = obj(tokens.reshape(b * tn, k + 1, e)).reshape(b, tn, k + 1, e)          # attention over objects
            tt = tokens.permute(0, 2, 1, 3).reshape(b * (k + 1), tn, e)                     # [B·(K+1), Tn, E]
            tt, layer_kv = self._time_attention(tim, tt, None if cache is None else cache["kv"][i])
            kv.append(layer_kv)
            tokens = tt.reshape(b, k + 1, tn, e).permute(0, 2, 1, 3)                        # [B, Tn, K + 1, E]
        delta = self.out(self.norm_out(tokens[:, :, :k]))
        return (slots + delta if self.residual else delta), {"t": t0 + tn, "kv": kv}

    def rollout(self, context: torch.Tensor, actions: torch.Tensor, horizon: int, *,
                cache: bool | None = None) -> torch.Tensor:
        """Autoregressive prediction of ``horizon`` steps after ``context [B, c, K, D]``.

        ``actions [B, c + horizon − 1, A]``: the action after each context step and after each predicted step but
        the last. Returns ``[B, horizon, K, D]``. ``cache`` (default: whenever :attr:`can_cache`) feeds each new
        step through the time attention once, with the earlier steps' keys and values cached, instead of
        recomputing the whole history at every step; the outputs are the same.
        """
        if cache is None:
            cache = self.can_cache
        return autoregressive_rollout(self, context, actions, horizon, cache=cache)
