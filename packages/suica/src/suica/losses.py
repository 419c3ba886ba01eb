"""Losses of SUICA (official ``systems/inr_fitting_system.py``).

Phase 1 (fit the INR to the GAE embeddings ``z``): ``L_fit = L1(f(u), z) + MSE(f(u), z)``.

Phase 2, **regression-by-classification** (decoder fine-tuning, INR frozen), prediction ``ŷ >= 0`` and target ``y``,
both ``(n, G)``::

    L_rec = MSE(ŷ[y ≠ 0], y[y ≠ 0]) + L1(ŷ, y) + λ_Dice · Dice(ŷ, y)
    Dice  = 1 - (2 Σ p·b + 1) / (Σ p + Σ b + 1),   p = 2σ(ŷ) - 1 ∈ [0, 1),   b = 1[y > 0]

The support (zero vs non-zero) is a soft segmentation (Dice, pooled over the batch as released); values are
regressed on the support only (masked MSE); L1 drives sparsity. Closed forms: ``ŷ = 0`` ⇒ ``Dice = 1 - 1/(Σb + 1)``;
``ŷ → ∞`` on the support and 0 elsewhere ⇒ ``Dice → 0``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def masked_mse(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean squared error over the non-zero target entries only (0 if there are none)."""
    mask = target != 0
    if not bool(mask.any()):
        return pred.sum() * 0.0
    return F.mse_loss(pred[mask], target[mask])


def dice_loss(pred: torch.Tensor, target: torch.Tensor, *, smooth: float = 1.0) -> torch.Tensor:
    """Soft Dice between ``p = 2σ(ŷ) - 1`` and the support ``b = 1[y > 0]``, pooled over all entries."""
    p = 2.0 * torch.sigmoid(pred) - 1.0
    b = (target > 0).to(pred.dtype)
    inter = (p * b).sum()
    return 1.0 - (2.0 * inter + smooth) / (p.sum() + b.sum() + smooth)


def rbc_loss(pred: torch.Tensor, target: torch.Tensor, *, dice_weight: float = 0.01) -> torch.Tensor:
    """Regression-by-classification loss ``masked MSE + L1 + λ_Dice · Dice``."""
    return masked_mse(pred, target) + F.l1_loss(pred, target) + dice_weight * dice_loss(pred, target)


def fit_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Phase-1 INR loss ``L1 + MSE`` to the embeddings."""
    return F.l1_loss(pred, target) + F.mse_loss(pred, target)


def decoder_loss(pred: torch.Tensor, target: torch.Tensor, *, kind: str = "rbc", dice_weight: float = 0.01) -> torch.Tensor:
    """Phase-2 loss: ``"rbc"`` (SUICA) or ``"mse"`` (the ablation: plain MSE)."""
    if kind == "rbc":
        return rbc_loss(pred, target, dice_weight=dice_weight)
    if kind == "mse":
        return F.mse_loss(pred, target)
    raise ValueError(f"decoder_loss must be 'rbc' or 'mse', got {kind!r}")
