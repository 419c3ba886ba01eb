"""Batch-1 inference in plain numpy for the frozen planner and the frozen habitual policy.

A single decision of a small network on one state is dominated by per-op dispatch cost, not arithmetic: a torch op
costs a few microseconds of framework overhead (dispatcher, autograd/inference-mode checks, tensor allocation) while
a numpy ufunc or ``@`` on a tiny array costs about one. This module compiles the trained torch modules into numpy
arrays once and runs the *same* computation with fewer, cheaper ops. It is used by ``act(observation)`` of **both**
:class:`habi.policy.HabitualPolicy` and :class:`habi.planner.DiffusionPlanner`, so the speed comparison stays like
for like; tests check that, given the same random draws, both paths return the same actions as the torch paths.

Generic tricks applied to every network alike:

* weights pre-transposed to ``(in, out)`` float32 (``x @ W + b``);
* twin MLPs on the same input (the prior's μ/σ nets, the planner's twin critic) share one first-layer matmul and
  then run as one batched matmul over the stacked later layers (``(2, B, h) @ (2, h, h')``);
* a first layer on a concatenated input ``[u, v]`` is split as ``u @ W_u + v @ W_v``, so inputs that are constant
  within a decision (the state; the planner's time embeddings) are multiplied once, not once per candidate/step;
* all random draws of one decision come from one ``Generator.standard_normal`` call.

Mish is ``x · tanh(softplus(x))`` with ``softplus(x) = logaddexp(0, x)`` (exact; torch switches to ``x`` above 20,
a difference below float32 resolution).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from habi.errors import HabiConfigError
from habi.model import SIGMA_FLOOR

_LIN, _MISH, _TANH, _LN = 0, 1, 2, 3
BACKENDS = ("numpy", "torch")


def mish(x: np.ndarray) -> np.ndarray:
    """numpy Mish ``x · tanh(log1p(exp(min(x, 20))))`` (float32; the clip only avoids overflow, as in torch)."""
    return x * np.tanh(np.log1p(np.exp(np.minimum(x, 20.0))))


def softplus(x: np.ndarray) -> np.ndarray:
    """numpy softplus ``log1p(exp(x))`` with torch's switch to ``x`` above 20."""
    return np.where(x > 20.0, x, np.log1p(np.exp(np.minimum(x, 20.0))))


class _Numpy:
    """The few array ops the engines need, numpy flavour."""

    name = "numpy"
    mish, softplus, tanh, minimum = staticmethod(mish), staticmethod(softplus), np.tanh, np.minimum
    cat = staticmethod(lambda xs: np.concatenate(xs, axis=1))
    clip = staticmethod(lambda x: np.clip(x, -1.0, 1.0))
    arange = staticmethod(np.arange)

    @staticmethod
    def arr(t: torch.Tensor) -> np.ndarray:
        return np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32))

    @staticmethod
    def stack(xs: list) -> np.ndarray:
        return np.ascontiguousarray(np.stack(xs))

    @staticmethod
    def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
        avg = np.full((x.shape[-1], 1), 1.0 / x.shape[-1], dtype=x.dtype)  # row means as one matmul each
        c = x - x @ avg
        r = np.sqrt((c * c) @ avg + eps)  # (B, 1)
        c /= r
        c *= w
        c += b
        return c

    @staticmethod
    def from_np(x: np.ndarray) -> np.ndarray:
        return x

    @staticmethod
    def to_np(x: np.ndarray) -> np.ndarray:
        return x


class _Torch:
    """The same ops, torch flavour (run under ``torch.inference_mode``)."""

    name = "torch"
    mish, softplus, tanh, minimum = staticmethod(F.mish), staticmethod(F.softplus), torch.tanh, torch.minimum
    cat = staticmethod(lambda xs: torch.cat(xs, dim=1))
    clip = staticmethod(lambda x: torch.clamp(x, -1.0, 1.0))
    arange = staticmethod(torch.arange)

    @staticmethod
    def arr(t: torch.Tensor) -> torch.Tensor:
        return t.detach().to(torch.float32).contiguous().clone()

    @staticmethod
    def stack(xs: list) -> torch.Tensor:
        return torch.stack(xs).contiguous()

    @staticmethod
    def layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), w, b, eps)

    @staticmethod
    def from_np(x: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(x)

    @staticmethod
    def to_np(x: torch.Tensor) -> np.ndarray:
        return x.numpy()


class NormalStream:
    """Standard-normal float32 draws of a fixed shape, generated in blocks of ``block`` decisions.

    One ``Generator.standard_normal`` call per block instead of one per decision; the numbers are the generator's
    stream in order (``take()`` returns a fresh ``shape`` array each call).
    """

    def __init__(self, rng: np.random.Generator, shape: tuple[int, ...], block: int = 256) -> None:
        self.rng, self.shape, self.block = rng, tuple(shape), block
        self._buf, self._i = None, block

    def take(self) -> np.ndarray:
        if self._i >= self.block:
            self._buf = self.rng.standard_normal((self.block, *self.shape), dtype=np.float32)
            self._i = 0
        self._i += 1
        return self._buf[self._i - 1]

    def take_many(self, n: int) -> np.ndarray:
        """The next ``n`` draws in stream order, ``(n, *shape)``: the same numbers as ``n`` calls of :meth:`take`."""
        out = np.empty((n, *self.shape), dtype=np.float32)
        i = 0
        while i < n:
            if self._i >= self.block:
                self._buf = self.rng.standard_normal((self.block, *self.shape), dtype=np.float32)
                self._i = 0
            k = min(n - i, self.block - self._i)
            out[i : i + k] = self._buf[self._i : self._i + k]
            self._i += k
            i += k
        return out


def backend(name: str):
    if name not in BACKENDS:
        raise HabiConfigError(f"backend must be one of {BACKENDS}, got {name!r}")
    return _Numpy if name == "numpy" else _Torch


class CompiledMLP:
    """A compiled ``nn.Sequential`` of Linear / LayerNorm / Mish / Tanh layers; ``(B, in) -> (B, out)``."""

    def __init__(self, seq: nn.Sequential | list[nn.Module], xp=_Numpy) -> None:
        self.xp = xp
        self.ops: list[tuple] = []
        for m in seq:
            if isinstance(m, nn.Linear):
                self.ops.append((_LIN, xp.arr(m.weight.t()), xp.arr(m.bias)))
            elif isinstance(m, nn.Mish):
                self.ops.append((_MISH,))
            elif isinstance(m, nn.Tanh):
                self.ops.append((_TANH,))
            elif isinstance(m, nn.LayerNorm):
                self.ops.append((_LN, xp.arr(m.weight), xp.arr(m.bias), float(m.eps)))
            else:
                raise TypeError(f"CompiledMLP supports Linear/LayerNorm/Mish/Tanh, got {type(m).__name__}")

    def __call__(self, x):
        xp = self.xp
        for op in self.ops:
            k = op[0]
            if k == _LIN:
                x = x @ op[1]
                x += op[2]
            elif k == _MISH:
                x = xp.mish(x)
            elif k == _TANH:
                x = xp.tanh(x)
            else:
                x = xp.layer_norm(x, op[1], op[2], op[3])
        return x


def split_first_linear(seq: nn.Sequential, sizes: list[int], xp=_Numpy) -> tuple[list, Any, CompiledMLP]:
    """Split the first ``Linear`` of ``seq`` over the parts of a concatenated input.

    Returns ``([W_1 (s_1, h), W_2 (s_2, h), ...], b (h,), rest)`` with
    ``seq(cat(x_1, x_2, ...)) == rest(Σ_i x_i @ W_i + b)``.
    """
    first = seq[0]
    if not isinstance(first, nn.Linear) or first.in_features != sum(sizes):
        raise TypeError(f"first layer must be Linear({sum(sizes)}, ·)")
    w = first.weight.detach().t()  # (in, h)
    parts = [xp.arr(p) for p in torch.split(w, sizes, dim=0)]
    return parts, xp.arr(first.bias), CompiledMLP(list(seq)[1:], xp)


class CompiledTwinMLP:
    """Two Linear/Mish MLPs of one layout on the same input: shared first matmul, then batched stacked layers.

    ``f(x) -> (mlp_a(x), mlp_b(x))`` (a block-diagonal network, as :class:`habi.nets.FusedTwinMLP`). The first
    layer can be split over input parts (``sizes``); :meth:`rest` takes its pre-activation.
    """

    def __init__(self, mlp_a: nn.Sequential, mlp_b: nn.Sequential, sizes: list[int] | None = None,
                 xp=_Numpy) -> None:
        self.xp = xp
        la = [m for m in mlp_a if isinstance(m, nn.Linear)]
        lb = [m for m in mlp_b if isinstance(m, nn.Linear)]
        kinds = [type(m) for m in mlp_a]
        if kinds != [type(m) for m in mlp_b] or any(k not in (nn.Linear, nn.Mish) for k in kinds):
            raise TypeError("CompiledTwinMLP needs two Linear/Mish MLPs of identical layout")
        w0 = torch.cat([la[0].weight.detach().t(), lb[0].weight.detach().t()], dim=1)  # (in, 2h)
        self.w0_parts = [xp.arr(p) for p in torch.split(w0, sizes or [w0.shape[0]], dim=0)]
        self.b0 = xp.arr(torch.cat([la[0].bias.detach(), lb[0].bias.detach()]))  # (2h,)
        self.h = la[0].out_features
        self.ws = [xp.stack([xp.arr(a.weight.t()), xp.arr(b.weight.t())]) for a, b in zip(la[1:], lb[1:], strict=True)]
        self.bs = [xp.stack([xp.arr(a.bias), xp.arr(b.bias)])[:, None, :] for a, b in zip(la[1:], lb[1:], strict=True)]

    def rest(self, y):
        """``y (B, 2h)``: the first layer's pre-activation -> both outputs ``(B, out)``."""
        b = y.shape[0]
        y = self.xp.mish(y).reshape(b, 2, self.h).swapaxes(0, 1)  # (B, 2h) -> (2, B, h)
        n = len(self.ws)
        for i, (w, bias) in enumerate(zip(self.ws, self.bs, strict=True)):
            y = y @ w  # (2, B, h_i) @ (2, h_i, h_{i+1})
            y += bias
            if i < n - 1:
                y = self.xp.mish(y)
        return y[0], y[1]

    def __call__(self, x):
        if len(self.w0_parts) != 1:
            raise HabiConfigError("split twin MLP: compute the first layer from its parts and call rest()")
        y = x @ self.w0_parts[0]
        y += self.b0
        return self.rest(y)


class FastPlanner:
    """Batch-1 decision of :class:`habi.planner.DiffusionPlanner` (same maths as ``act_normalized``).

    Per decision (state ``s (1, obs)`` normalised): ``N`` candidates by ``T`` ancestral DDPM steps of the EMA
    actor, then ``q_min`` of the online critic (or the target critic for ``decision='softmax'``), then the argmax
    (or a softmax draw). Inputs and outputs are numpy; ``backend`` ('numpy' | 'torch') runs the arithmetic.
    """

    def __init__(self, planner: Any, *, target: bool | None = None, backend: str = "numpy") -> None:
        xp = self.xp = globals()["backend"](backend)
        c = planner.config
        ddpm = planner.nets.ema_actor
        self.cfg, self.T, self.clip_x0 = c, ddpm.steps, ddpm.clip_x0
        with torch.no_grad():
            temb = ddpm.model.time_mlp(torch.arange(ddpm.steps))  # (T, t_dim)
            (wx, _wt, ws), _b0, self.rest = split_first_linear(ddpm.model.net, [c.act_dim, temb.shape[1], c.obs_dim],
                                                             xp)
            wt_t = ddpm.model.net[0].weight.detach().t()[c.act_dim: c.act_dim + temb.shape[1]]
            self.tb = xp.arr(temb @ wt_t + ddpm.model.net[0].bias)  # (T, h): time part of the first layer
        self.wx, self.ws = wx, ws
        k = ddpm._c
        self.c_x, self.c_eps = k["sqrt_recip_ac"], k["sqrt_recipm1_ac"]
        self.p0, self.p1 = k["post_c0"], k["post_c1"]
        self.sig = [math.exp(0.5 * v) for v in k["post_log_var"]]
        target = c.decision == "softmax" if target is None else target  # which critic scores the candidates
        critic = planner.nets.critic_target if target else planner.nets.critic
        self.q = CompiledTwinMLP(critic.q1, critic.q2, sizes=[c.obs_dim, c.act_dim], xp=xp)

    def _sample(self, s, noise):
        c, xp = self.cfg, self.xp
        scale = c.temperature if c.temperature_all_steps else 1.0
        cs = s @ self.ws  # (1, h): state part of the first layer, once per decision
        x = c.temperature * noise[0]
        for j, i in enumerate(reversed(range(self.T))):
            h = x @ self.wx
            h += cs + self.tb[i]
            eps = self.rest(h)
            x0 = self.c_x[i] * x - self.c_eps[i] * eps
            if self.clip_x0:
                x0 = xp.clip(x0)
            x = self.p0[i] * x0 + self.p1[i] * x
            if i > 0:
                x += (scale * self.sig[i]) * noise[j + 1]
        return xp.clip(x)

    def _q_min(self, s, a):
        y = a @ self.q.w0_parts[1]
        y += s @ self.q.w0_parts[0] + self.q.b0
        q1, q2 = self.q.rest(y)
        return self.xp.minimum(q1, q2)[:, 0]

    def sample(self, s: np.ndarray, noise: np.ndarray) -> np.ndarray:
        """Candidates ``(N, act)`` for one normalised state ``s (1, obs)``; ``noise (T, N, act)`` standard normal
        (``noise[0]`` is x_T before the temperature, ``noise[1:]`` the noise of steps T-1 .. 1)."""
        with torch.inference_mode():
            return self.xp.to_np(self._sample(self.xp.from_np(s), self.xp.from_np(noise)))

    def q_min(self, s: np.ndarray, a: np.ndarray) -> np.ndarray:
        """``min(Q_1, Q_2)`` for one state ``s (1, obs)`` and candidates ``a (N, act)`` -> ``(N,)``."""
        with torch.inference_mode():
            return self.xp.to_np(self._q_min(self.xp.from_np(s), self.xp.from_np(a)))

    def decide(self, s: np.ndarray, noise: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """One decision ``s (1, obs) -> (act,)``; ``rng`` draws the softmax choice (decision='softmax')."""
        xp = self.xp
        with torch.inference_mode():
            s_ = xp.from_np(s)
            a_ = self._sample(s_, xp.from_np(noise))
            q = xp.to_np(self._q_min(s_, a_))
            a = xp.to_np(a_)
        if self.cfg.decision == "argmax":
            return a[int(q.argmax())].copy()
        p = np.exp(self.cfg.weight_temperature * (q.astype(np.float64) - q.max()))
        return a[int((rng or np.random.default_rng()).choice(len(p), p=p / p.sum()))].copy()


class FastHabit:
    """Batch-1 habitual inference (same maths as :meth:`habi.policy.HabitualPolicy._decide`).

    Inputs and outputs are numpy; ``backend`` ('numpy' | 'torch') runs the arithmetic.
    """

    def __init__(self, policy: Any, *, backend: str = "numpy") -> None:
        xp = self.xp = globals()["backend"](backend)
        m, cfg = policy.model, policy.cfg
        self.scorer, self.latent, self.cond = policy.scorer, policy.latent, cfg.conditional_decoder
        with torch.no_grad():
            self.prior = CompiledTwinMLP(m.prior.mu, m.prior.sigma, xp=xp)
            self.decoder = CompiledMLP(m.decoder, xp)
            self.critic = CompiledMLP(m.critic.net, xp)
        self.planner = (FastPlanner(policy.planner, target=self.scorer == "planner_target", backend=backend)
                        if self.scorer.startswith("planner") else None)

    def decide(self, s: np.ndarray, eps: np.ndarray | None) -> np.ndarray:
        """One decision ``s (1, obs)`` normalised, ``eps (N, d_z)`` standard normal -> ``(act,)`` in [-1, 1]."""
        xp = self.xp
        with torch.inference_mode():
            s = xp.from_np(s)
            mu, pre = self.prior(s)  # (1, d_z) each
            if self.latent == "mean":
                z = mu
            else:
                z = (xp.softplus(pre) + SIGMA_FLOOR) * xp.from_np(eps)  # (N, d_z)
                z += mu
            a = self.decoder(xp.cat([z, s.repeat(len(z), 1) if xp is _Torch else np.repeat(s, len(z), 0)])
                             if self.cond else z)  # (N, act)
            if self.scorer == "none":
                out = a[0]
            elif self.scorer == "habi":
                out = a[int(self.critic(xp.cat([z, a])).argmax())]  # q_std > 0: the argmax of f suffices
            else:
                out = a[int(self.planner._q_min(s, a).argmax())]
            return xp.to_np(xp.clip(out))

    def decide_batch(self, s: np.ndarray, eps: np.ndarray | None) -> np.ndarray:
        """``B`` decisions at once: ``s (B, obs)`` normalised, ``eps (B, N, d_z)`` standard normal ->
        ``(B, act)`` in [-1, 1]; row ``b`` is :meth:`decide` ``(s[b:b+1], eps[b])`` (same maths, one matmul per
        layer for all ``B·N`` candidates)."""
        xp = self.xp
        b = s.shape[0]
        with torch.inference_mode():
            s = xp.from_np(s)
            mu, pre = self.prior(s)  # (B, d_z) each
            if self.latent == "mean":
                z = mu  # (B, d_z): one candidate per state
                n = 1
            else:
                n = eps.shape[1]
                sig = xp.softplus(pre) + SIGMA_FLOOR
                z = (sig[:, None] * xp.from_np(eps) + mu[:, None]).reshape(b * n, -1)  # (B, N, d_z) -> (B·N, d_z)
            if self.cond or self.scorer.startswith("planner"):
                s_rep = s.repeat_interleave(n, 0) if xp is _Torch else np.repeat(s, n, 0)  # (B·N, obs)
            a = self.decoder(xp.cat([z, s_rep]) if self.cond else z)  # (B·N, act)
            if self.scorer == "none":
                out = a.reshape(b, n, -1)[:, 0]
            else:
                q = (self.critic(xp.cat([z, a])) if self.scorer == "habi" else self.planner._q_min(s_rep, a))
                k = q.reshape(b, n).argmax(1)  # (B·N,) -> (B, N): the best candidate per state
                out = a.reshape(b, n, -1)[xp.arange(b), k]
            return xp.to_np(xp.clip(out))
