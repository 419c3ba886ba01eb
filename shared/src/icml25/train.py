"""Small training-loop pieces every package needs: mini-batches, progress, and a finite-loss guard.

``minibatches(n, batch_size, seed=...)`` yields index tensors of one shuffled epoch; ``progress(it, desc=...)`` is a
tqdm bar that turns itself off when not on a TTY; ``check_finite(loss, step=...)`` raises
:class:`TrainingDivergedError` naming the step (and the likely cause) instead of training on NaN;
``train_until_plateau(step, evaluate, ...)`` trains until a patience / min-delta rule or the budget stops it and
returns the validation :class:`Curve`; ``plateau_check(curves)`` says whether the budget cut any seed while it was
still improving beyond the seed noise (the first half of a gate claim, see :meth:`icml25.claims.Claim.gate`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
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


# ---------------------------------------------------------------------------------------------------- plateaus
# Competence before comparison: a method is compared only after it has learned the task. ``train_until_plateau``
# trains until a patience / min-delta rule (or the budget) stops it and records the validation curve;
# ``plateau_check`` says, over the seeds, whether any curve was cut by the budget while still improving beyond the
# seed-to-seed noise (the "plateaued" half of a gate claim, :meth:`icml25.claims.Claim.gate`).

STOPPED = ("plateau", "budget")


@dataclass
class Curve:
    """A validation curve: ``values[i]`` measured after ``steps[i]`` training steps.

    ``stopped_by`` is ``"plateau"`` when ``patience`` evaluations in a row did not improve the best value by more
    than ``min_delta``, ``"budget"`` when the step budget ran out first. ``best``/``best_step`` is the best value and
    where it was reached (signed by ``higher_is_better``).
    """

    steps: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    higher_is_better: bool = True
    patience: int = 3
    min_delta: float = 0.0
    stopped_by: str = "budget"
    ceiling: float | None = None
    """The best value the metric can take (1.0 for an accuracy, 0.0 for a non-negative loss), or None. A curve whose
    best is within the plateau threshold of its ceiling has no room left to improve, so :func:`plateau_check`
    counts it as plateaued even when it reached the ceiling inside the last window."""

    def __post_init__(self) -> None:
        if self.stopped_by not in STOPPED:
            raise ValueError(f"stopped_by must be one of {STOPPED}, got {self.stopped_by!r}")
        if len(self.steps) != len(self.values):
            raise ValueError(f"steps and values differ in length ({len(self.steps)} vs {len(self.values)})")
        if self.patience < 1:
            raise ValueError(f"patience must be >= 1, got {self.patience}")
        if not (math.isfinite(self.min_delta) and self.min_delta >= 0):
            raise ValueError(f"min_delta must be finite and >= 0, got {self.min_delta}")
        if self.ceiling is not None and not math.isfinite(self.ceiling):
            raise ValueError(f"ceiling must be finite or None, got {self.ceiling}")

    def _signed(self, v: float) -> float:
        return v if self.higher_is_better else -v

    @property
    def best(self) -> float:
        if not self.values:
            raise ValueError("the curve has no evaluations")
        return max(self.values) if self.higher_is_better else min(self.values)

    @property
    def best_step(self) -> int:
        return self.steps[self.values.index(self.best)]

    def headroom(self) -> float | None:
        """How far the best value is from ``ceiling`` (signed so that positive means room left); None without one."""
        if self.ceiling is None:
            return None
        return self._signed(self.ceiling) - self._signed(self.best)

    def tail_gain(self, window: int | None = None) -> float:
        """How much the best value improved over the last ``window`` evaluations (default ``patience``), signed
        so that positive is better: ``best(all) - best(all but the window)``; 0 for a curve no longer than it."""
        w = self.patience if window is None else int(window)
        if w < 1:
            raise ValueError(f"window must be >= 1, got {w}")
        if len(self.values) <= w:
            return 0.0 if len(self.values) <= 1 else self._signed(self.best) - self._signed(self.values[0])
        head = [self._signed(v) for v in self.values[:-w]]
        return self._signed(self.best) - max(head)

    def to_dict(self) -> dict[str, Any]:
        return {"steps": list(self.steps), "values": list(self.values), "higher_is_better": self.higher_is_better,
                "patience": self.patience, "min_delta": self.min_delta, "stopped_by": self.stopped_by,
                **({"ceiling": self.ceiling} if self.ceiling is not None else {})}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Curve:
        return cls(**d)


def train_until_plateau(
    step: Callable[[int], Any],
    evaluate: Callable[[], float],
    *,
    max_steps: int,
    eval_every: int,
    patience: int = 3,
    min_delta: float = 0.0,
    higher_is_better: bool = True,
    on_improve: Callable[[int, float], Any] | None = None,
    evaluate_first: bool = False,
) -> Curve:
    """Call ``step(i)`` for ``i = 0 .. max_steps - 1`` and ``evaluate()`` every ``eval_every`` steps (and at the
    end); stop when ``patience`` evaluations in a row do not beat the best by more than ``min_delta``.

    ``on_improve(step, value)`` is called at every new best (e.g. to keep the best weights for early stopping).
    Returns the :class:`Curve`; ``evaluate()`` must return a finite number.
    """
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    if eval_every < 1:
        raise ValueError(f"eval_every must be >= 1, got {eval_every}")
    curve = Curve(higher_is_better=higher_is_better, patience=patience, min_delta=float(min_delta))
    best, bad = -math.inf, 0

    def record(at: int) -> bool:
        nonlocal best, bad
        v = float(evaluate())
        if not math.isfinite(v):
            raise TrainingDivergedError(f"validation metric became {v} at step {at}")
        curve.steps.append(at)
        curve.values.append(v)
        s = v if higher_is_better else -v
        if s > best + min_delta:
            best, bad = s, 0
            if on_improve is not None:
                on_improve(at, v)
        else:
            bad += 1
        return bad >= patience

    if evaluate_first and record(0):
        curve.stopped_by = "plateau"
        return curve
    for i in range(max_steps):
        step(i)
        done = i + 1
        if done % eval_every == 0 or done == max_steps:
            if record(done):
                curve.stopped_by = "plateau"
                return curve
    curve.stopped_by = "budget"
    return curve


@dataclass(frozen=True)
class PlateauCheck:
    """Outcome of :func:`plateau_check`: ``plateaued`` is false when some seed's curve was stopped by the budget
    while its last-window gain exceeded ``threshold`` (the larger of the seed noise and the curves' ``min_delta``)."""

    plateaued: bool
    gains: list[float]
    stopped_by: list[str]
    threshold: float
    improving: list[int]
    """Indices of the curves still improving when the budget stopped them."""
    at_ceiling: list[int] = field(default_factory=list)
    """Indices of budget-stopped curves whose last-window gain exceeded the threshold but whose best is within the
    threshold of their ``ceiling``: no room left to improve, so they count as plateaued."""

    def describe(self) -> str:
        n = len(self.gains)
        ceil = f"; {len(self.at_ceiling)} reached the metric's ceiling in the window" if self.at_ceiling else ""
        if self.plateaued:
            return (f"plateaued on {n}/{n} seeds (last-window gain ≤ {self.threshold:.3g}, stopped by patience, or at "
                    f"the ceiling{ceil})")
        return (f"still improving on {len(self.improving)}/{n} seeds when the budget stopped them "
                f"(last-window gains {[round(self.gains[i], 4) for i in self.improving]} > {self.threshold:.3g}{ceil})")

    def to_dict(self) -> dict[str, Any]:
        return {"plateaued": self.plateaued, "gains": list(self.gains), "stopped_by": list(self.stopped_by),
                "threshold": self.threshold, "improving": list(self.improving),
                **({"at_ceiling": list(self.at_ceiling)} if self.at_ceiling else {})}


def plateau_check(curves: Sequence[Curve], *, noise: float | None = None, window: int | None = None) -> PlateauCheck:
    """Did every seed's validation curve plateau?

    A curve stopped by patience has plateaued. A curve stopped by the budget has plateaued when the best value moved
    by at most ``threshold`` over its last ``window`` evaluations (default: its patience), with ``threshold`` the
    larger of its ``min_delta`` and the seed noise (``noise``, or the sample sd of the curves' best values across
    seeds when there are at least two), or when its best is within ``threshold`` of the curve's ``ceiling`` (the
    metric's best possible value: a curve at the ceiling cannot improve, however late it got there). Otherwise the
    budget cut it while still learning: the gate fails.
    """
    if not curves:
        raise ValueError("plateau_check needs at least one curve")
    bests = [c.best for c in curves]
    if noise is None:
        m = sum(bests) / len(bests)
        noise = math.sqrt(sum((b - m) ** 2 for b in bests) / (len(bests) - 1)) if len(bests) > 1 else 0.0
    if not (math.isfinite(noise) and noise >= 0):
        raise ValueError(f"noise must be finite and >= 0, got {noise}")
    gains, improving, at_ceiling = [], [], []
    threshold = max([float(noise)] + [c.min_delta for c in curves])
    for i, c in enumerate(curves):
        g = c.tail_gain(window)
        gains.append(g)
        if c.stopped_by == "budget" and g > threshold:
            room = c.headroom()
            (at_ceiling if room is not None and room <= threshold else improving).append(i)
    return PlateauCheck(plateaued=not improving, gains=gains, stopped_by=[c.stopped_by for c in curves],
                        threshold=threshold, improving=improving, at_ceiling=at_ceiling)
