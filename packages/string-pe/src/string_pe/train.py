"""Training and evaluation loops (in-memory tensors or a stream of batches, AdamW, warm-up + cosine schedule).

Following rope-vit, the position-encoding parameters (RoPE-Mixed frequencies, Cayley's S, circulant coefficients)
are excluded from weight decay, as are biases, norms, CLS and APE tables.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from string_pe.base import PositionEncoding


@dataclass(frozen=True)
class TrainSettings:
    epochs: int = 30
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.05
    warmup_epochs: int = 1
    seed: int = 0


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """AdamW groups: decay for weight matrices, none for biases/norms/PE parameters/embeddings tables."""
    no_decay_ids = set()
    for m in model.modules():
        if isinstance(m, (PositionEncoding, nn.LayerNorm)):
            no_decay_ids.update(id(p) for p in m.parameters())
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if id(p) in no_decay_ids or p.dim() < 2 or name.endswith(("cls", "ape")):
            no_decay.append(p)
        else:
            decay.append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def fit(model: nn.Module, inputs: Sequence[Tensor], labels: Tensor, settings: TrainSettings,
        on_epoch: Callable[[int, float], None] | None = None, *, device: torch.device | str | None = None) -> list[float]:
    """Train ``model(*inputs[batch])`` with cross-entropy on in-memory tensors; returns the mean training loss of
    every epoch (:func:`fit_batches` over a seeded permutation per epoch).

    ``device``: move the model there and each batch as it is used (the data stay where they are); default: leave
    the model where it is."""
    g = torch.Generator().manual_seed(settings.seed)
    n = labels.shape[0]

    def epoch_batches(epoch: int) -> Iterator[tuple[tuple[Tensor, ...], Tensor]]:
        perm = torch.randperm(n, generator=g)
        for i in range(0, n, settings.batch_size):
            idx = perm[i:i + settings.batch_size]
            yield tuple(x[idx] for x in inputs), labels[idx]

    return fit_batches(model, epoch_batches, max(1, math.ceil(n / settings.batch_size)), settings, on_epoch,
                       device=device)


def fit_batches(model: nn.Module, epoch_batches: Callable[[int], Iterable[tuple[Sequence[Tensor], Tensor]]],
                steps_per_epoch: int, settings: TrainSettings, on_epoch: Callable[[int, float], None] | None = None,
                *, device: torch.device | str | None = None) -> list[float]:
    """Train on a stream: ``epoch_batches(epoch)`` yields ``(inputs, labels)`` batches (e.g. from a
    ``DataLoader`` reading images from disk), ``steps_per_epoch`` of them, for the warm-up + cosine schedule.
    Returns the mean training loss of every epoch; ``settings.batch_size`` is the stream's business."""
    if device is not None:
        model.to(device)
    dev = next(model.parameters()).device
    opt = torch.optim.AdamW(param_groups(model, settings.weight_decay), lr=settings.lr)
    total = settings.epochs * steps_per_epoch
    warm = settings.warmup_epochs * steps_per_epoch

    def lr_at(step: int) -> float:
        if step < warm:
            return settings.lr * (step + 1) / warm
        return settings.lr * 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warm) / max(1, total - warm))))

    losses, step = [], 0
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for epoch in range(settings.epochs):
        tot, seen = 0.0, 0
        for xs, y in epoch_batches(epoch):
            for group in opt.param_groups:
                group["lr"] = lr_at(step)
            loss = loss_fn(model(*(x.to(dev) for x in xs)), y.to(dev))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            tot += float(loss.detach()) * y.shape[0]
            seen += y.shape[0]
            step += 1
        losses.append(tot / max(1, seen))
        if on_epoch is not None:
            on_epoch(epoch, losses[-1])
    model.eval()
    return losses


@torch.no_grad()
def accuracy_batches(model: nn.Module, batches: Iterable[tuple[Sequence[Tensor], Tensor]]) -> float:
    """Top-1 accuracy of ``model`` over a stream of ``(inputs, labels)`` batches (inputs go to the model's
    device)."""
    model.eval()
    dev = next(model.parameters()).device
    correct = total = 0
    for xs, y in batches:
        correct += int((model(*(x.to(dev) for x in xs)).argmax(-1).cpu() == y).sum())
        total += y.shape[0]
    return correct / max(1, total)


@torch.no_grad()
def accuracy(model: nn.Module, inputs: Sequence[Tensor], labels: Tensor, *, batch_size: int = 512) -> float:
    """Top-1 accuracy of ``model(*inputs)`` against ``labels`` (batches go to the model's device)."""
    model.eval()
    dev = next(model.parameters()).device
    correct = 0
    for i in range(0, labels.shape[0], batch_size):
        pred = model(*(x[i:i + batch_size].to(dev) for x in inputs)).argmax(-1)
        correct += int((pred.cpu() == labels[i:i + batch_size]).sum())
    return correct / max(1, labels.shape[0])
