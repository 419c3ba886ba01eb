"""Dynamic EMA (DEMA) with the stability-plasticity balanced coefficient of LCIA (Qiao et al., ICML 2025).

After every optimizer step, for every trainable tensor θ (e.g. a LoRA ``A [r, d_in]`` or ``B [d_out, r]``), an EMA
copy θ* is updated with a per-tensor coefficient α_t computed from L1 norms over the whole tensor::

    a   = ||θ_t − θ*_{t−1}||_1          (gap between the live weights and the EMA)
    b   = ||g_t||_1                     (L', the gradient the optimizer just used)
    c   = ||g_t − g_{t−1}||_1           (L'', a finite-difference proxy of the curvature)
    α_t = 2 (1 + b) / (a · c)
    θ*_t = (1 − α_t) θ*_{t−1} + α_t θ_t                       (EMA weight β_t = 1 − α_t on the old average)

α_t is replaced by the fallback (0.01, i.e. the "stable" EMA with β = 0.99) on the first step (no g_{t−1}), when
a·c = 0, when the tensor has no gradient, and when α_t falls outside (0, 1). This closed form is the one of the
official code (JingyangQiao/CoIN, ``CoIN/peft/tuners/lora.py``); the paper derives it from an "ideal"
plasticity/stability condition and a second-order Taylor expansion of the loss, whose intermediate equations we
could not check offline, so the code's form is the operative definition here. ``clip_alpha=True`` is a non-official
option that maps α ≥ 1 to 1 (full plasticity, as the formula asks) instead of the fallback.

θ*_0 is a snapshot of the trainable tensors when :class:`DEMA` is built (the task's initial weights; the released
code creates it one step later, which is the same under its zero-lr first warm-up step). ``replace()`` writes θ*
into the trainable tensors at the task's end. θ* is kept in float32 by default (the released code keeps it in the
parameter dtype, bf16 there, which rounds most small updates away: ``ema_dtype="param"`` reproduces that).

Every fallback is counted by reason (:attr:`DEMA.counts`); a non-finite gradient skips the tensor's update with a
warning instead of silently falling back.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Iterable
from typing import Any

import torch

from lcia.errors import LciaError

#: reasons an update used the fallback α (or skipped)
REASONS = ("formula", "first_step", "zero_product", "no_grad", "out_of_range", "clipped", "fixed", "nonfinite")


def _check_fallback(fallback: float, name: str = "fallback_alpha") -> float:
    if isinstance(fallback, bool) or not isinstance(fallback, (int, float)) or not (0.0 < float(fallback) < 1.0):
        raise LciaError(f"{name} must be a number in the open interval (0, 1), got {fallback!r}")
    return float(fallback)


def dema_terms(theta: torch.Tensor, theta_ema: torch.Tensor, grad: torch.Tensor,
               prev_grad: torch.Tensor) -> tuple[float, float, float]:
    """``(a, b, c) = (||θ_t − θ*_{t−1}||₁, ||g_t||₁, ||g_t − g_{t−1}||₁)`` in float64 (the closed form's terms)."""
    th, te = theta.detach().double(), theta_ema.detach().double()
    g, gp = grad.detach().double(), prev_grad.detach().double()
    return float((th - te).abs().sum()), float(g.abs().sum()), float((g - gp).abs().sum())


def dema_alpha_reason(theta: torch.Tensor, theta_ema: torch.Tensor, grad: torch.Tensor | None,
                      prev_grad: torch.Tensor | None, *, fallback: float,
                      clip_alpha: bool = False) -> tuple[float, str]:
    """``(α_t, reason)``: α_t = 2(1 + ||g_t||₁) / (||θ_t − θ*_{t−1}||₁ · ||g_t − g_{t−1}||₁) or the fallback.

    ``reason`` is ``"formula"`` when the closed form was used, else why it was not: ``"no_grad"`` (grad is None),
    ``"first_step"`` (prev_grad is None), ``"zero_product"`` (a·c = 0), ``"out_of_range"`` (α ∉ (0, 1)) or
    ``"clipped"`` (α ≥ 1 mapped to 1 with ``clip_alpha``). Norms are computed in float64.
    """
    if grad is None:
        return fallback, "no_grad"
    if prev_grad is None:
        return fallback, "first_step"
    a, b, c = dema_terms(theta, theta_ema, grad, prev_grad)
    if a * c == 0.0:
        return fallback, "zero_product"
    alpha = 2.0 * (1.0 + b) / (a * c)
    if not math.isfinite(alpha):
        return fallback, "out_of_range"
    if clip_alpha and alpha >= 1.0:
        return 1.0, "clipped"
    if not 0.0 < alpha < 1.0:
        return fallback, "out_of_range"
    return alpha, "formula"


def dema_alpha(theta: torch.Tensor, theta_ema: torch.Tensor, grad: torch.Tensor | None,
               prev_grad: torch.Tensor | None, *, fallback: float = 0.01, clip_alpha: bool = False) -> float:
    """The DEMA coefficient α_t of one tensor (see the module docstring); ``fallback`` when the formula does not apply.

    Shapes: ``theta``, ``theta_ema``, ``grad`` and ``prev_grad`` all have the tensor's shape.
    """
    _check_fallback(fallback, "fallback")
    return dema_alpha_reason(theta, theta_ema, grad, prev_grad, fallback=fallback, clip_alpha=clip_alpha)[0]


class DEMA:
    """Dynamic EMA of the trainable tensors of ``model``: call :meth:`update` after every ``optimizer.step()``
    (once per optimizer step, also under gradient accumulation) and :meth:`replace` at the task's end.

    Args:
        model: any ``torch.nn.Module``; the tensors with ``requires_grad`` when DEMA is built are tracked (with a
            peft model: the active adapter's LoRA matrices).
        fallback_alpha: α used when the closed form does not apply (0.01 = the stable EMA β = 0.99).
        fixed_alpha: if given, always use this α (the "stable EMA" baseline, β = 1 − fixed_alpha).
        clip_alpha: map α ≥ 1 to 1 instead of the fallback (non-official option).
        ema_dtype: ``"float32"`` (default) or ``"param"`` (the parameter's dtype, as the released code).
        params: explicit ``(name, tensor)`` pairs to track instead of the model's trainable tensors.
        record_terms: keep ``(numel, a, b, c)`` of every closed-form evaluation in :attr:`terms` (diagnostics).

    Memory: two extra copies of the tracked tensors (θ* and g_{t−1}); :attr:`extra_bytes` gives the exact count.
    """

    def __init__(self, model: torch.nn.Module | None = None, *, fallback_alpha: float = 0.01,
                 fixed_alpha: float | None = None, clip_alpha: bool = False, ema_dtype: str = "float32",
                 params: Iterable[tuple[str, torch.nn.Parameter]] | None = None, record_terms: bool = False) -> None:
        self.fallback_alpha = _check_fallback(fallback_alpha)
        self.fixed_alpha = None if fixed_alpha is None else _check_fallback(fixed_alpha, "fixed_alpha")
        self.clip_alpha = bool(clip_alpha)
        if ema_dtype not in ("float32", "param"):
            raise LciaError(f"ema_dtype must be 'float32' or 'param', got {ema_dtype!r}")
        self.ema_dtype = ema_dtype
        if params is None:
            if model is None:
                raise LciaError("DEMA needs a model or explicit params")
            params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self.params: list[tuple[str, torch.nn.Parameter]] = list(params)
        if not self.params:
            raise LciaError("DEMA found no trainable tensors (requires_grad) to track")
        names = [n for n, _ in self.params]
        if len(set(names)) != len(names):
            raise LciaError("DEMA: duplicate tensor names among the tracked parameters")
        self.ema: dict[str, torch.Tensor] = {}
        self.prev_grad: dict[str, torch.Tensor | None] = {}
        for n, p in self.params:
            dtype = torch.float32 if ema_dtype == "float32" else p.dtype
            self.ema[n] = p.detach().clone().to(dtype)  # θ*_0: the task's initial weights
            self.prev_grad[n] = None
        self.steps = 0
        self.counts: Counter[str] = Counter()
        self.per_tensor: dict[str, Counter[str]] = {n: Counter() for n in names}
        self.alphas: list[float] = []
        #: α of every update that used the closed form (for the α distribution of reproduce)
        self.formula_alphas: list[float] = []
        self._numel = {n: p.numel() for n, p in self.params}
        #: with ``record_terms``: ``(numel, a, b, c)`` of every update whose closed form was evaluated (diagnostics
        #: of why α falls outside (0, 1): α = 2(1 + b)/(a·c) ≥ 1 exactly when a·c ≤ 2(1 + b))
        self.record_terms = bool(record_terms)
        self.terms: list[tuple[int, float, float, float]] = []

    # ------------------------------------------------------------------------------------------------ updates
    @torch.no_grad()
    def update(self) -> None:
        """One DEMA step for every tracked tensor, using its current ``.grad`` (the gradient the optimizer used)."""
        self.steps += 1
        for n, p in self.params:
            g = p.grad
            if g is not None and not bool(torch.isfinite(g).all()):
                warnings.warn(f"DEMA: non-finite gradient in {n!r} at step {self.steps}; its EMA update is skipped",
                              RuntimeWarning, stacklevel=2)
                self._count(n, "nonfinite")
                continue
            ema = self.ema[n]
            if self.fixed_alpha is not None:
                alpha, reason = self.fixed_alpha, "fixed"
            else:
                alpha, reason = dema_alpha_reason(p, ema, g, self.prev_grad[n], fallback=self.fallback_alpha,
                                                  clip_alpha=self.clip_alpha)
                if self.record_terms and g is not None and self.prev_grad[n] is not None:
                    self.terms.append((self._numel[n], *dema_terms(p, ema, g, self.prev_grad[n])))
            ema.mul_(1.0 - alpha).add_(p.detach().to(ema.dtype), alpha=alpha)  # θ* ← (1−α)θ* + αθ
            if g is not None and self.fixed_alpha is None:
                prev = self.prev_grad[n]
                if prev is None:
                    self.prev_grad[n] = g.detach().clone()
                else:
                    prev.copy_(g)
            self.alphas.append(alpha)
            if reason == "formula":
                self.formula_alphas.append(alpha)
            self._count(n, reason)

    def _count(self, name: str, reason: str) -> None:
        self.counts[reason] += 1
        self.per_tensor[name][reason] += 1

    @torch.no_grad()
    def replace(self) -> None:
        """Write θ* into the tracked tensors (end of task); untracked (frozen) tensors are not touched."""
        for n, p in self.params:
            p.copy_(self.ema[n].to(p.dtype))

    # ----------------------------------------------------------------------------------------------- reports
    @property
    def fallback_share(self) -> float:
        """Share of tensor updates that did not use the closed form (fallback, clip or skip); nan before any."""
        total = sum(self.counts.values())
        return float("nan") if total == 0 else 1.0 - self.counts["formula"] / total

    @property
    def extra_bytes(self) -> int:
        """Exact bytes DEMA holds beyond the model: θ* plus g_{t−1} (allocated on the first step) per tensor."""
        total = sum(t.numel() * t.element_size() for t in self.ema.values())
        if self.fixed_alpha is None:
            total += sum(p.numel() * p.element_size() for _, p in self.params)
        return total

    def counts_by_numel(self) -> dict[int, dict[str, int]]:
        """Update reasons summed over the tensors of each size (numel): where the fallback fires."""
        out: dict[int, Counter[str]] = {}
        for n, c in self.per_tensor.items():
            out.setdefault(self._numel[n], Counter()).update(c)
        return {k: dict(v) for k, v in sorted(out.items())}

    def summary(self) -> dict[str, Any]:
        return {"steps": self.steps, "counts": dict(self.counts), "fallback_share": self.fallback_share,
                "by_numel": self.counts_by_numel(),
                "extra_bytes": self.extra_bytes, "tensors": len(self.params),
                "mean_alpha": float(sum(self.alphas) / len(self.alphas)) if self.alphas else float("nan")}


def dema_callback(dema: DEMA, *, replace_at_end: bool = True) -> Any:
    """A ``transformers.TrainerCallback`` that calls ``dema.update()`` in ``on_optimizer_step`` (after
    ``optimizer.step()``, before ``zero_grad``, so the gradients are still there) and ``dema.replace()`` at the end
    of training. Set ``TrainingArguments(max_grad_norm=0)`` to feed DEMA the unclipped gradient as the paper does."""
    from transformers import TrainerCallback

    class DEMACallback(TrainerCallback):
        def on_optimizer_step(self, args, state, control, **kwargs):  # noqa: ANN001
            dema.update()

        def on_train_end(self, args, state, control, **kwargs):  # noqa: ANN001
            if replace_at_end:
                dema.replace()

    return DEMACallback()
