"""The learner and the training loop shared by the method and every baseline (same CNN, schedule and seeds).

Loss (per-sample cross-entropy, weighted, averaged over the batch's views)::

    L = (1 / |B'|) sum_{i in B'} w_i CE(f(x_i), y_i)

with ``w_i`` the selector's weight (Horvitz-Thompson ``1 / pi_i`` or InfoBatch's ``1 / keep``). SGD with momentum 0.9,
weight decay 5e-4, and a per-step cosine learning-rate schedule over the epochs (one warm-up epoch), as in
InfoBatch's CIFAR example scaled down. The schedule advances by epoch fraction, so pruned epochs with fewer steps
follow the same curve.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from select_augment.augment import TargetedAugment, to_input
from select_augment.errors import SelectAugmentError
from select_augment.selection import CostMeter


class SmallCNN(nn.Module):
    """Three conv blocks (conv3x3-BN-ReLU-maxpool; ``width, 2 width, 4 width`` channels), global average pooling and
    a linear head. ``x [B, 3, H, W] -> logits [B, C]``."""

    def __init__(self, num_classes: int, *, width: int = 16, downsample: int = 1):
        super().__init__()
        self.pool = nn.AvgPool2d(downsample) if downsample > 1 else nn.Identity()
        chans = [3, width, 2 * width, 4 * width]
        blocks = []
        for a, b in zip(chans[:-1], chans[1:]):
            blocks += [nn.Conv2d(a, b, 3, padding=1, bias=False), nn.BatchNorm2d(b), nn.ReLU(inplace=True),
                       nn.MaxPool2d(2)]
        self.features = nn.Sequential(*blocks)
        self.head = nn.Linear(chans[-1], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(self.pool(x)).mean(dim=(2, 3)))  # [B, 4w, h, w] -> [B, 4w] -> [B, C]


def weighted_loss(logits: torch.Tensor, targets: torch.Tensor, weights: torch.Tensor) -> tuple[torch.Tensor,
                                                                                                  torch.Tensor]:
    """``(mean_i w_i CE_i, CE [B])``; ``targets`` long ``[B]`` or probabilities ``[B, C]``."""
    if targets.ndim == 2:
        ce = -(targets * torch.log_softmax(logits, dim=1)).sum(dim=1)
    else:
        ce = nn.functional.cross_entropy(logits, targets, reduction="none")
    if weights.shape != ce.shape:
        raise SelectAugmentError(f"weights must be [B] = {list(ce.shape)}, got {list(weights.shape)}")
    return (weights.to(ce.dtype) * ce).mean(), ce


@dataclass
class TrainResult:
    model: nn.Module
    cost: CostMeter
    seconds: float
    selector_seconds: float
    history: list[dict[str, Any]] = field(default_factory=list)


def train(images: np.ndarray, labels: np.ndarray, *, augment: TargetedAugment, epochs: int, num_classes: int,
          batch_size: int = 128, lr: float = 0.05, momentum: float = 0.9, weight_decay: float = 5e-4,
          width: int = 16, downsample: int = 1, seed: int = 0, callback: Any = None,
          device: torch.device | str = "cpu") -> TrainResult:
    """Train :class:`SmallCNN` for ``epochs`` epochs over ``augment``'s selector; the cost meter counts every view.

    ``augment.selector`` decides ``S_t`` each epoch (``set_epoch``), gives the loss weights (``weights``) and receives
    the per-sample losses of the original views (``update``). ``device``: where the model and each batch live (the
    selection and the augmentation run on the CPU)."""
    if epochs < 1:
        raise SelectAugmentError(f"epochs must be >= 1, got {epochs}")
    if batch_size < 1:
        raise SelectAugmentError(f"batch_size must be >= 1, got {batch_size}")
    if not (math.isfinite(lr) and lr > 0):
        raise SelectAugmentError(f"lr must be a finite number > 0, got {lr}")
    torch.manual_seed(seed)
    model = SmallCNN(num_classes, width=width, downsample=downsample).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=True)
    selector = augment.selector
    meter = CostMeter(len(labels), epochs)
    history = []
    callback_seconds = 0.0  # evaluation in the callback is not training time
    t0 = time.perf_counter()
    for epoch in range(epochs):
        augment.set_epoch(epoch)
        order = np.fromiter(iter(selector), dtype=np.int64)
        meter.add(len(order), augment.extra_views)
        n_steps = max(1, math.ceil(len(order) / batch_size))
        model.train()
        total, count = 0.0, 0
        for step, s in enumerate(range(0, len(order), batch_size)):
            progress = (epoch + step / n_steps) / epochs
            scale = min(1.0, (epoch + step / n_steps + 1e-9) / 1.0) if epochs > 1 else 1.0
            for g in opt.param_groups:
                g["lr"] = lr * scale * 0.5 * (1 + math.cos(math.pi * progress))
            ids = order[s:s + batch_size]
            x, y, view_ids = augment.batch(ids)
            logits = model(x.to(device))
            loss, ce = weighted_loss(logits, y.to(device), selector.weights(view_ids).to(device))
            value = float(loss.detach())
            if not math.isfinite(value):
                raise FloatingPointError(f"training diverged at epoch {epoch} (loss {value}); lower lr")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            selector.update(ids, ce[: len(ids)].detach())
            total += value * len(ids)
            count += len(ids)
        rec = {"epoch": epoch, "selected": len(order), "extra_views": augment.extra_views,
               "train_loss": total / max(count, 1)}
        history.append(rec)
        if callback is not None:
            tc = time.perf_counter()
            callback(rec, model)
            callback_seconds += time.perf_counter() - tc
    return TrainResult(model=model, cost=meter, seconds=time.perf_counter() - t0 - callback_seconds,
                       selector_seconds=float(selector.seconds), history=history)


def accuracy(model: nn.Module, images: np.ndarray, labels: np.ndarray, *, batch_size: int = 512) -> float:
    """Top-1 accuracy on uint8 ``images [N, H, W, 3]`` (no augmentation)."""
    model.eval()
    dev = next(model.parameters()).device
    correct = 0
    x_all = torch.from_numpy(np.ascontiguousarray(np.asarray(images).transpose(0, 3, 1, 2)))  # [N, 3, H, W]
    y_all = torch.as_tensor(np.asarray(labels, dtype=np.int64))
    with torch.no_grad():
        for s in range(0, len(y_all), batch_size):
            pred = model(to_input(x_all[s:s + batch_size]).to(dev)).argmax(1).cpu()
            correct += int((pred == y_all[s:s + batch_size]).sum())
    return correct / max(len(y_all), 1)
