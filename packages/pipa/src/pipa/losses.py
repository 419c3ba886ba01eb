r"""PIPA losses: preference alignment as prior-informed maximum likelihood (Li, Wang & Liu, ICML 2025).

Data are (prompt x, completion y, label c ∈ {0, 1}). The model has two learned parts and one frozen one:

- the policy, the positive conditional ``f_θ(y|x) = p_θ(y | x, c=1)`` (the LM; ``log f`` is a *sum* of token
  log-probabilities over the completion),
- the value head, the class prior ``g_θ(x) = p_θ(c=1 | x) = σ(v_θ(x))`` (``v`` is its logit),
- the frozen prior model ``p⁰(y|x)`` (the reference LM that generated the data).

The label likelihood ``p_θ(c | x, y)`` follows from Bayes' rule once a prior ties the model to ``p⁰``:

- **PIPA-M** (marginal prior ``Σ_c p_θ(y|x,c) p_θ(c|x) = p⁰(y|x)``)::

      p_θ(c=1|x,y) = f g / p⁰          log p₁ = s := log f + log σ(v) − log p⁰   (must be ≤ 0)
      L_M = −Σ_{c=1} s − Σ_{c=0} log(1 − e^s)

- **PIPA-N** (negative-conditional prior ``p_θ(y|x,c=0) = p⁰(y|x)``)::

      p_θ(c=1|x,y) = f g / (f g + p⁰ (1 − g)) = σ(log f − log p⁰ + v)
      L_N = BCE-with-logits(log f − log p⁰ + v, c)

Paired data (x, y_w, y_l) carry the knowledge that exactly one of the two is positive. Conditioning on that event
(independent labels given x) gives ``P(y_w is the positive) = σ(ℓ_w − ℓ_l)`` with ``ℓ = logit p_θ(c=1|x,y)``. Under
PIPA-N the value head cancels and the loss is exactly DPO's sigmoid loss with β = 1 and ``π_ref = p⁰``.

Step-level: a completion is a sequence of steps ``y¹…y^K`` with labels ``c^k``; the model is autoregressive over
steps, ``f_θ(y^k | x, y^{<k})`` and ``g_θ(x, y^{<k})`` (the value head read at the end of the prefix), plugged into
the same formulas and summed over steps. With K = 1 the step-level loss equals the answer-level loss.

All losses are computed in log space and stay finite for log-probabilities of any magnitude. Shapes: answer-level
inputs are ``(batch,)``; step-level inputs are ``(batch, K)`` with a boolean ``step_mask`` (``(batch, K)``) marking
the real steps. The equations above are our reconstruction of the paper's formulation (no official code is
public); the package README states them and what was checked.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from pipa.errors import PIPAError

__all__ = [
    "PIPAError",
    "log1mexp",
    "posterior_logit",
    "pipa_m_loss",
    "pipa_n_loss",
    "pipa_m_paired_loss",
    "pipa_n_paired_loss",
    "pipa_m_step_loss",
    "pipa_n_step_loss",
    "pipa_loss",
    "m_negative_term",
    "m_barrier",
    "dpo_sigmoid_loss",
    "kto_value_loss",
]

VARIANTS = ("M", "N")
M_GUARDS = ("barrier", "clamp", "raise")
VALUE_LOSSES = ("log", "kto")


def log1mexp(s: torch.Tensor) -> torch.Tensor:
    """``log(1 − e^s)`` for ``s < 0``, stable on both sides of ``−log 2`` (Mächler 2012)."""
    return torch.where(s > -math.log(2.0), torch.log(-torch.expm1(s)), torch.log1p(-torch.exp(s)))


def _check(policy_logps: torch.Tensor, ref_logps: torch.Tensor, value_logits: torch.Tensor | None,
           labels: torch.Tensor | None) -> None:
    if policy_logps.shape != ref_logps.shape:
        raise PIPAError(f"policy_logps {tuple(policy_logps.shape)} and ref_logps {tuple(ref_logps.shape)} differ in shape")
    if value_logits is not None and value_logits.shape != policy_logps.shape:
        raise PIPAError(f"value_logits {tuple(value_logits.shape)} must have the shape of policy_logps {tuple(policy_logps.shape)}")
    for name, t in (("policy_logps", policy_logps), ("ref_logps", ref_logps), ("value_logits", value_logits)):
        if t is not None and not torch.isfinite(t.detach()).all():
            raise PIPAError(f"{name} has non-finite entries")
    if labels is not None:
        if labels.shape != policy_logps.shape:
            raise PIPAError(f"labels {tuple(labels.shape)} must have the shape of policy_logps {tuple(policy_logps.shape)}")
        lab = labels.detach()
        if not ((lab == 0) | (lab == 1)).all():
            raise PIPAError("labels must be 0 or 1")


def _m_s(policy_logps, ref_logps, value_logits, guard: str, eps: float) -> torch.Tensor:
    """``s = log f + log σ(v) − log p⁰`` after checking ``guard`` and ``eps`` (``guard='raise'`` errors on ``s > 0``)."""
    if guard not in M_GUARDS:
        raise PIPAError(f"guard must be one of {M_GUARDS}, got {guard!r}")
    if not eps > 0:
        raise PIPAError(f"eps must be > 0, got {eps}")
    s = policy_logps + F.logsigmoid(value_logits) - ref_logps
    if guard == "raise" and (s.detach() > 0).any():
        raise PIPAError("PIPA-M needs f·g ≤ p⁰ (log f + log g − log p⁰ ≤ 0); got a positive value (guard='raise')")
    return s


def m_negative_term(s: torch.Tensor, *, eps: float = 1e-3, guard: str = "barrier") -> torch.Tensor:
    """``−log(1 − e^s)``, the PIPA-M loss of a negative, exact for ``s ≤ −eps``.

    ``guard='barrier'`` (and ``'raise'``) continue it above ``−eps`` by its tangent at ``−eps`` (value
    ``−log(−expm1(−eps))``, slope ``1/expm1(eps)``), so the term is C¹ and finite for every ``s``; ``'clamp'`` caps
    ``s`` at ``−eps`` (zero gradient above: the old behaviour, kept as a negative control).
    """
    s_in = s.clamp(max=-eps)
    exact = -log1mexp(s_in)
    if guard == "clamp":
        return exact
    return exact + torch.relu(s + eps) / math.expm1(eps)


def m_barrier(s: torch.Tensor, *, eps: float = 1e-3) -> torch.Tensor:
    """The smooth feasibility barrier of PIPA-M: ``relu(s + eps)² / (2 eps)``.

    Zero with zero gradient on the feasible side (``s ≤ −eps``), so the loss there is exact; its gradient
    ``relu(s + eps)/eps`` grows continuously from 0 (no jump at the boundary) and is positive wherever ``s > −eps``.
    With the positive term ``−s`` (slope −1) the sum ``−s + barrier`` has its minimum at ``s = 0`` (``f g = p⁰``,
    the edge of the feasible set) and a gradient ``relu(s+eps)/eps − 1 > 0`` that pushes any ``s > 0`` back.
    """
    return torch.relu(s + eps).square() / (2.0 * eps)


def posterior_logit(policy_logps: torch.Tensor, ref_logps: torch.Tensor, value_logits: torch.Tensor, *,
                    variant: str = "N", eps: float = 1e-3, guard: str = "barrier") -> torch.Tensor:
    """``logit p_θ(c=1 | x, y)`` under PIPA-M or PIPA-N (same shape as the inputs).

    PIPA-M: ``s − log(1 − e^s)``, exact for ``s ≤ −eps`` and continued C¹ above (see :func:`m_negative_term`), so it
    is finite, strictly increasing in ``s`` and has a gradient everywhere (``guard='clamp'``: the old capped form)."""
    _check(policy_logps, ref_logps, value_logits, None)
    if variant == "N":
        return policy_logps - ref_logps + value_logits
    if variant == "M":
        # logit(e^s) = s − log(1 − e^s); above −eps the C¹ continuation of the negative term (monotone, finite)
        s = _m_s(policy_logps, ref_logps, value_logits, guard, eps)
        if guard == "clamp":
            s = s.clamp(max=-eps)
        return s + m_negative_term(s, eps=eps, guard=guard)
    raise PIPAError(f"variant must be one of {VARIANTS}, got {variant!r}")


def _reduce(per: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "mean":
        return per.mean()
    if reduction == "sum":
        return per.sum()
    if reduction == "none":
        return per
    raise PIPAError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def pipa_n_loss(policy_logps: torch.Tensor, ref_logps: torch.Tensor, value_logits: torch.Tensor,
                labels: torch.Tensor, *, reduction: str = "mean") -> torch.Tensor:
    """PIPA-N on unpaired data: ``BCE(σ(log f − log p⁰ + v), c)``. Inputs ``(batch,)``."""
    _check(policy_logps, ref_logps, value_logits, labels)
    logit = policy_logps - ref_logps + value_logits
    per = F.binary_cross_entropy_with_logits(logit, labels.to(logit.dtype), reduction="none")
    return _reduce(per, reduction)


def pipa_m_loss(policy_logps: torch.Tensor, ref_logps: torch.Tensor, value_logits: torch.Tensor,
                labels: torch.Tensor, *, reduction: str = "mean", guard: str = "barrier", eps: float = 1e-3) -> torch.Tensor:
    """PIPA-M on unpaired data: ``−c·s − (1−c)·log(1 − e^s)`` with ``s = log f + log g − log p⁰``.

    The marginal prior needs ``f g ≤ p⁰`` (``s ≤ 0``). The guard acts where ``s > −eps`` (exact loss below):

    - ``'barrier'`` (default): the negative term continues C¹ (tangent at ``−eps``, :func:`m_negative_term`) and the
      smooth barrier ``relu(s+eps)²/(2 eps)`` (:func:`m_barrier`) is added for every label. ``∂L/∂s`` is continuous
      everywhere (no jump at ``−eps``: ``−1`` on positives and ``1/expm1(−s)`` on negatives just inside), non-zero
      everywhere, and positive for every label once ``s > 0``, which pushes ``f g/p⁰`` back below 1;
    - ``'clamp'``: ``s`` capped at ``−eps`` — an infeasible point keeps a constant loss and gets *zero* gradient
      (the first implementation; kept only as a negative control);
    - ``'raise'``: :class:`PIPAError` on any ``s > 0``.
    """
    _check(policy_logps, ref_logps, value_logits, labels)
    s = _m_s(policy_logps, ref_logps, value_logits, guard, eps)
    lab = labels.to(s.dtype)
    pos = -(s.clamp(max=-eps) if guard == "clamp" else s)
    per = lab * pos + (1.0 - lab) * m_negative_term(s, eps=eps, guard=guard)
    if guard != "clamp":
        per = per + m_barrier(s, eps=eps)
    return _reduce(per, reduction)


def kto_value_loss(policy_logps: torch.Tensor, ref_logps: torch.Tensor, labels: torch.Tensor, *,
                   reference_point: float | torch.Tensor, beta: float = 0.1, desirable_weight: float = 1.0,
                   undesirable_weight: float = 1.0, reduction: str = "mean") -> torch.Tensor:
    """KTO as a special case of PIPA-N ("different prior and loss").

    The PIPA-N logit ``ℓ = (log f − log p⁰) + logit g`` with the learned ``logit g`` replaced by a *fixed* reference
    point ``−z`` and tempered by ``β``: ``ℓ = β (log f − log p⁰ − z)``; the log-loss ``−log σ(±ℓ)`` replaced by the
    "1 − σ" value loss::

        c = 1:  w_D · (1 − σ(β (r − z)))          c = 0:  w_U · (1 − σ(β (z − r)))        r = log f − log p⁰

    ``z`` (``reference_point``) is KTO's batch KL estimate (a constant for the gradient). Inputs ``(batch,)``.
    The mean is over all rows (as trl's ``KTOTrainer`` averages the concatenated desirable and undesirable losses).
    """
    _check(policy_logps, ref_logps, None, labels)
    if not beta > 0:
        raise PIPAError(f"beta must be > 0, got {beta}")
    z = torch.as_tensor(reference_point, dtype=policy_logps.dtype, device=policy_logps.device).detach()
    logit = beta * (policy_logps - ref_logps - z)  # the tempered PIPA-N logit with logit g := −z
    lab = labels.to(logit.dtype)
    per = lab * desirable_weight * (1 - torch.sigmoid(logit)) + (1 - lab) * undesirable_weight * torch.sigmoid(logit)
    return _reduce(per, reduction)


def dpo_sigmoid_loss(chosen_logps, chosen_ref_logps, rejected_logps, rejected_ref_logps, *, beta: float = 1.0,
                     reduction: str = "mean") -> torch.Tensor:
    """DPO's sigmoid loss ``−log σ(β[(ℓπ_w − ℓref_w) − (ℓπ_l − ℓref_l)])`` (for comparison and tests)."""
    per = -F.logsigmoid(beta * ((chosen_logps - chosen_ref_logps) - (rejected_logps - rejected_ref_logps)))
    return _reduce(per, reduction)


def _paired(variant, chosen_logps, chosen_ref_logps, rejected_logps, rejected_ref_logps, chosen_value_logits,
            rejected_value_logits, reduction, eps, guard="barrier"):
    lw = posterior_logit(chosen_logps, chosen_ref_logps, chosen_value_logits, variant=variant, eps=eps, guard=guard)
    ll = posterior_logit(rejected_logps, rejected_ref_logps, rejected_value_logits, variant=variant, eps=eps,
                         guard=guard)
    per = -F.logsigmoid(lw - ll)
    if variant == "M" and guard != "clamp":  # the same smooth barrier on both completions' s
        for lp, rp, v in ((chosen_logps, chosen_ref_logps, chosen_value_logits),
                          (rejected_logps, rejected_ref_logps, rejected_value_logits)):
            per = per + m_barrier(lp + F.logsigmoid(v) - rp, eps=eps)
    return _reduce(per, reduction)


def pipa_n_paired_loss(chosen_logps: torch.Tensor, chosen_ref_logps: torch.Tensor, rejected_logps: torch.Tensor,
                       rejected_ref_logps: torch.Tensor, value_logits: torch.Tensor | None = None, *,
                       reduction: str = "mean") -> torch.Tensor:
    """PIPA-N on paired data: ``−log σ(ℓ_w − ℓ_l)``. The value head (same prompt) cancels: DPO with β = 1."""
    v = torch.zeros_like(chosen_logps) if value_logits is None else value_logits
    return _paired("N", chosen_logps, chosen_ref_logps, rejected_logps, rejected_ref_logps, v, v, reduction, 1e-6)


def pipa_m_paired_loss(chosen_logps: torch.Tensor, chosen_ref_logps: torch.Tensor, rejected_logps: torch.Tensor,
                       rejected_ref_logps: torch.Tensor, value_logits: torch.Tensor, *, reduction: str = "mean",
                       eps: float = 1e-3, guard: str = "barrier") -> torch.Tensor:
    """PIPA-M on paired data: ``−log σ(ℓ_w − ℓ_l)`` with ``ℓ = s − log(1 − e^s)``; the value head does not cancel.

    ``guard='barrier'``: ``ℓ`` continued C¹ above ``−eps`` (:func:`posterior_logit`) plus :func:`m_barrier` on both
    ``s``, so the loss has a continuous, non-zero gradient everywhere; ``'clamp'``: the old capped form."""
    return _paired("M", chosen_logps, chosen_ref_logps, rejected_logps, rejected_ref_logps, value_logits,
                   value_logits, reduction, eps, guard)


def _step(fn, policy_logps, ref_logps, value_logits, labels, step_mask, reduction, **kw):
    if policy_logps.ndim != 2:
        raise PIPAError(f"step-level inputs must be (batch, steps), got {tuple(policy_logps.shape)}")
    if step_mask is None:
        step_mask = torch.ones_like(policy_logps, dtype=torch.bool)
    if step_mask.shape != policy_logps.shape:
        raise PIPAError(f"step_mask {tuple(step_mask.shape)} must have the shape of policy_logps {tuple(policy_logps.shape)}")
    if not step_mask.any(dim=1).all():
        raise PIPAError("every sequence needs at least one step (step_mask row is all False)")
    m = step_mask.bool()
    # padded steps get neutral values so that the checks and the log-space maths stay finite; they are masked out
    zeros = torch.zeros_like(policy_logps)
    pl = torch.where(m, policy_logps, zeros - 1.0)
    rl = torch.where(m, ref_logps, zeros)
    vl = torch.where(m, value_logits, zeros)
    lab = torch.where(m, labels.to(policy_logps.dtype), zeros)
    per_step = fn(pl, rl, vl, lab, reduction="none", **kw)  # (batch, K)
    per_seq = (per_step * m).sum(dim=1)  # the autoregressive likelihood: sum over steps
    return _reduce(per_seq, reduction)


def pipa_n_step_loss(policy_logps: torch.Tensor, ref_logps: torch.Tensor, value_logits: torch.Tensor,
                     labels: torch.Tensor, step_mask: torch.Tensor | None = None, *, reduction: str = "mean") -> torch.Tensor:
    """Step-level PIPA-N: ``Σ_k BCE(σ(log f^k − log p⁰^k + v^k), c^k)`` per sequence; inputs ``(batch, K)``."""
    return _step(pipa_n_loss, policy_logps, ref_logps, value_logits, labels, step_mask, reduction)


def pipa_m_step_loss(policy_logps: torch.Tensor, ref_logps: torch.Tensor, value_logits: torch.Tensor,
                     labels: torch.Tensor, step_mask: torch.Tensor | None = None, *, reduction: str = "mean",
                     guard: str = "barrier", eps: float = 1e-3) -> torch.Tensor:
    """Step-level PIPA-M: the PIPA-M terms summed over the steps of each sequence; inputs ``(batch, K)``."""
    return _step(pipa_m_loss, policy_logps, ref_logps, value_logits, labels, step_mask, reduction, guard=guard, eps=eps)


def pipa_loss(variant: str, policy_logps, ref_logps, value_logits, labels, step_mask=None, *, reduction="mean",
              **kw) -> torch.Tensor:
    """Dispatch on ``variant`` ('M' or 'N') and on the rank of the inputs (1: answer-level, 2: step-level)."""
    if variant not in VARIANTS:
        raise PIPAError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if policy_logps.ndim == 1:
        fn = pipa_m_loss if variant == "M" else pipa_n_loss
        return fn(policy_logps, ref_logps, value_logits, labels, reduction=reduction, **kw)
    fn = pipa_m_step_loss if variant == "M" else pipa_n_step_loss
    return fn(policy_logps, ref_logps, value_logits, labels, step_mask, reduction=reduction, **kw)
