"""Small training-loop pieces every package needs: mini-batches, progress, and a finite-loss guard.

``minibatches(n, batch_size, seed=...)`` yields index tensors of one shuffled epoch; ``progress(it, desc=...)`` is a
tqdm bar that turns itself off when not on a TTY; ``check_finite(loss, step=...)`` raises
:class:`TrainingDivergedError` naming the step (and the likely cause) instead of training on NaN.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from icml25.errors import UserInputError

T = TypeVar("T")


class TrainingDivergedError(UserInputError, FloatingPointError):
    """The loss became NaN or infinite (usually a learning rate too high for the model). Also a
    ``FloatingPointError``, so tuning loops can skip a diverged grid point with ``except FloatingPointError``."""


def minibatches(n: int, batch_size: int, *, seed: int | None = None, generator: Any = None, shuffle: bool = True,
                drop_last: bool = False) -> Iterator[Any]:
    """Index tensors (``torch.long``, shape ``[<= batch_size]``) covering ``range(n)`` once, shuffled by ``seed``
    or ``generator``."""
    import torch

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if shuffle:
        if generator is None:
            generator = torch.Generator().manual_seed(0 if seed is None else int(seed))
        order = torch.randperm(n, generator=generator)
    else:
        order = torch.arange(n)
    stop = n - n % batch_size if drop_last else n
    for i in range(0, stop, batch_size):
        yield order[i : i + batch_size]


def batch_stream(n: int, batch_size: int, *, generator: Any, steps: int | None = None) -> Iterator[tuple[bool, Any]]:
    """``(new_epoch, idx)`` for ``steps`` mini-batches (endless when ``None``) drawn epoch by epoch without
    replacement: a fresh ``torch.randperm(n, generator=generator)`` whenever the rest of the current one cannot fill
    a batch (that rest is dropped), so every batch has exactly ``min(batch_size, n)`` rows. ``new_epoch`` is true for
    the first batch of every permutation (the first batch of all included), e.g. to re-draw per-epoch captions."""
    import torch

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    perm, pos, new = torch.randperm(n, generator=generator), 0, True
    step = 0
    while steps is None or step < steps:
        if pos + batch_size > n:
            perm, pos, new = torch.randperm(n, generator=generator), 0, True
        idx = perm[pos : pos + batch_size]
        pos += batch_size
        yield new, idx
        new = False
        step += 1


def progress(iterable: Iterable[T], *, desc: str = "", total: int | None = None, disable: bool | None = None,
             **kw: Any) -> Iterable[T]:
    """A tqdm bar (hidden when stderr is not a TTY unless ``disable=False``)."""
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc, total=total, disable=disable, leave=False, **kw)


def check_finite(loss: Any, *, step: int | None = None, what: str = "loss", hint: str = "lower the learning rate") -> float:
    """Return ``float(loss)``; raise :class:`TrainingDivergedError` if it is NaN or infinite."""
    value = float(loss.detach().item() if hasattr(loss, "detach") else loss)
    if not math.isfinite(value):
        at = f" at step {step}" if step is not None else ""
        raise TrainingDivergedError(f"{what} became {value}{at}; training diverged ({hint})")
    return value
