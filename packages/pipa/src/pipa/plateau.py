"""Training every method (PIPA and the trl baselines alike) over all of its data to a validation plateau.

Every trainer here is a ``transformers.Trainer`` (``PIPATrainer``, trl's ``DPOTrainer`` / ``KTOTrainer``), so one
callback does it for all of them: the trainer gets ``eval_dataset={"val": ..., "test": ...}`` (rows of its *own*
format, scored with its *own* objective: DPO's loss for DPO, KTO's for KTO, PIPA's for PIPA), evaluates every
``eval_every`` steps and once before the first step (the prior p⁰, where the policy still equals the reference), and
:class:`PlateauCallback`

- records the validation curve (an :class:`icml25.train.Curve`, lower is better),
- keeps the weights of the best validation point in memory and puts them back at the end (early stopping),
- stops when ``patience`` evaluations in a row did not improve the best by more than ``min_delta``, but never before
  ``min_steps`` (one epoch over all the rows: ``ceil(rows / batch)``), and
and :func:`fit_to_plateau` reads the *test* loss of the prior and of the restored checkpoint, so that the gate
compares the chosen checkpoint with the prior on rows that chose nothing.

:func:`fit_to_plateau` runs a trainer this way and times the training steps apart from the evaluations.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from transformers import TrainerCallback

__all__ = ["PlateauPlan", "PlateauCallback", "StepTimer", "plan_for", "fit_to_plateau"]


@dataclass(frozen=True)
class PlateauPlan:
    """How long a method trains: at least ``min_steps`` (one epoch), at most ``max_steps``, evaluated every
    ``eval_every`` steps, stopped after ``patience`` evaluations without a relative improvement of ``rel_delta``."""

    min_steps: int
    max_steps: int
    eval_every: int
    patience: int = 3
    rel_delta: float = 1e-3

    def __post_init__(self) -> None:
        if not 1 <= self.min_steps <= self.max_steps:
            raise ValueError(f"need 1 <= min_steps <= max_steps, got {self.min_steps}, {self.max_steps}")
        if self.eval_every < 1 or self.patience < 1 or not self.rel_delta >= 0:
            raise ValueError(f"eval_every and patience must be >= 1 and rel_delta >= 0, got {self}")


def plan_for(n_rows: int, *, batch_size: int, max_epochs: float, evals_per_epoch: int = 2, patience: int = 3,
             rel_delta: float = 1e-3, max_steps_cap: int | None = None, max_eval_every: int = 6) -> PlateauPlan:
    """The plan for ``n_rows`` rows: one epoch is ``ceil(n_rows / batch_size)`` steps (the minimum), at most
    ``max_epochs`` epochs and ``max_steps_cap`` steps (never below one epoch); an evaluation every
    ``round(epoch / evals_per_epoch)`` steps, at least one every ``max_eval_every`` steps."""
    if n_rows < 1:
        raise ValueError(f"n_rows must be >= 1, got {n_rows}")
    if batch_size < 1 or evals_per_epoch < 1 or max_eval_every < 1 or not max_epochs > 0:
        raise ValueError("batch_size, evals_per_epoch and max_eval_every must be >= 1 and max_epochs > 0")
    epoch = math.ceil(n_rows / batch_size)
    most = max(epoch, math.ceil(max_epochs * epoch))
    if max_steps_cap is not None:
        most = max(epoch, min(most, max_steps_cap))
    every = max(1, min(max_eval_every, round(epoch / evals_per_epoch)))
    return PlateauPlan(min_steps=epoch, max_steps=most, eval_every=every, patience=patience, rel_delta=rel_delta)


class PlateauCallback(TrainerCallback):
    """Early stopping on the ``val`` eval loss with best-weight restore, and the curve of it (see module doc)."""

    def __init__(self, plan: PlateauPlan, *, val: str = "eval_val_loss") -> None:
        self.plan, self.val_key = plan, val
        self.steps: list[int] = []
        self.values: list[float] = []
        self.best = math.inf
        self.best_step = 0
        self.best_state: dict[str, Any] | None = None
        self.bad = 0
        self.stopped_by = "budget"
        self.min_delta = 0.0

    def on_evaluate(self, args, state, control, metrics=None, model=None, **kw):  # noqa: D401
        metrics = metrics or {}
        step = int(state.global_step)
        if self.val_key not in metrics:
            return control
        v = float(metrics[self.val_key])
        if not math.isfinite(v):
            from icml25.train import TrainingDivergedError

            raise TrainingDivergedError(f"validation loss became {v} at step {step}")
        if not self.steps:  # the first evaluation (the prior): it fixes the scale of min_delta
            self.min_delta = self.plan.rel_delta * max(abs(v), 1e-8)
        self.steps.append(step)
        self.values.append(v)
        if v < self.best - self.min_delta:
            self.best, self.best_step, self.bad = v, step, 0
            if model is not None:
                self.best_state = {k: t.detach().clone() for k, t in model.state_dict().items()}
        else:
            self.bad += 1
            if self.bad >= self.plan.patience and step >= self.plan.min_steps:
                self.stopped_by = "plateau"
                control.should_training_stop = True
        return control

    def curve(self) -> Any:
        from icml25.train import Curve

        return Curve(steps=list(self.steps), values=list(self.values), higher_is_better=False,
                     patience=self.plan.patience, min_delta=self.min_delta, stopped_by=self.stopped_by)


class StepTimer(TrainerCallback):
    """Adds up the wall time of the training steps only (``on_step_begin`` → ``on_step_end``), not evaluations."""

    def __init__(self) -> None:
        self.seconds, self.steps, self._t0 = 0.0, 0, None

    def on_step_begin(self, args, state, control, **kw):
        self._t0 = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        if self._t0 is not None:
            self.seconds += time.perf_counter() - self._t0
            self.steps += 1
            self._t0 = None


def fit_to_plateau(trainer: Any, plan: PlateauPlan) -> dict[str, Any]:
    """Evaluate the prior, train ``trainer`` to a validation plateau, restore the best weights.

    The trainer must have been built with ``max_steps=plan.max_steps``, ``eval_strategy="steps"``,
    ``eval_steps=plan.eval_every`` and ``eval_dataset={"val": ..., "test": ...}``. Returns the curve, the best step,
    validation and test losses of the prior (step 0) and of the chosen checkpoint, the steps and epochs trained
    and the time per training step (whole step, and inside ``compute_loss`` in training mode).
    """
    from pipa.baselines import LossTimer

    cb, timer = PlateauCallback(plan), StepTimer()
    evals = trainer.eval_dataset
    if not isinstance(evals, dict) or set(evals) != {"val", "test"}:
        raise ValueError("fit_to_plateau needs the trainer's eval_dataset = {'val': ..., 'test': ...}")
    test = evals["test"]
    trainer.eval_dataset = {"val": evals["val"]}  # the periodic evaluations read the validation rows only
    trainer.add_callback(cb)
    trainer.add_callback(timer)

    def test_loss() -> float:
        return float(trainer.evaluate(eval_dataset=test, metric_key_prefix="test")["test_loss"])

    trainer.evaluate()  # step 0: the policy is the prior p⁰
    test_prior = test_loss()
    loss_timer = LossTimer(trainer)
    trainer.train()
    model = trainer.model
    if cb.best_state is not None:
        model.load_state_dict(cb.best_state)
    test_best = test_loss() if cb.best_step > 0 else test_prior
    model.eval()
    steps = int(trainer.state.global_step)
    n = max(timer.steps, 1)
    return {
        "curve": cb.curve(), "best_step": cb.best_step, "steps": steps, "epochs": steps / plan.min_steps,
        "val_prior": cb.values[0], "val_best": cb.best, "test_prior": test_prior, "test_best": test_best,
        "stopped_by": cb.stopped_by, "seconds_per_step": timer.seconds / n,
        "loss_seconds_per_step": loss_timer.seconds / n,
    }
