"""The baselines, run through trl exactly as a user would: ``DPOTrainer`` (paired; DPO with ``loss_type='sigmoid'``,
IPO with ``loss_type='ipo'``), ``KTOTrainer`` (unpaired), and Step-DPO / Step-KTO (the same trainers on step-level rows whose prompt carries the right prefix).

trl 1.16 pitfalls handled here (see ``_tiny-lm.md``): the local tokenizer is passed as ``processing_class``, the
reference model explicitly (``ref_model``), and every output/logging option is set so that nothing reaches the hub.
Prompts get the tokenizer's BOS token in front, if it has one (trl tokenizes with ``add_special_tokens=False``), so
that the baselines see the sequences PIPA sees: ``[BOS] prompt completion [EOS]``.
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

__all__ = ["train_dpo", "train_kto", "common_args", "run_timed", "LossTimer"]


def common_args(*, steps: int, lr: float, batch_size: int, seed: int, out: str) -> dict[str, Any]:
    return dict(output_dir=out, max_steps=steps, learning_rate=lr, per_device_train_batch_size=batch_size,
                seed=seed, data_seed=seed, report_to="none", save_strategy="no", use_cpu=True, logging_steps=10**9,
                lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0, disable_tqdm=True,
                dataloader_num_workers=0, gradient_accumulation_steps=1,
                # trl's DPO/KTO configs turn gradient checkpointing and bf16 autocast on by default; PIPATrainer runs
                # without either (bf16 autocast on a CPU without bf16 units is ~10x slower). Same memory and
                # precision options in every trainer, so that time per step compares like with like.
                gradient_checkpointing=False, bf16=False, fp16=False)


def quiet(trainer: Any) -> Any:
    """Remove the console printers of a transformers Trainer (reproduce prints one table at the end instead)."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    for cb in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(cb)
    return trainer


def silence_libraries() -> None:
    import datasets
    import transformers

    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()


def _bos(rows: list[dict[str, Any]], tokenizer: Any) -> list[dict[str, Any]]:
    """trl tokenizes prompts with ``add_special_tokens=False``: put the tokenizer's BOS (if it has one) in front, so
    that trl sees the sequences PIPA sees (``[BOS] prompt completion [EOS]``)."""
    bos = tokenizer.bos_token
    return [{**r, "prompt": bos + r["prompt"]} if bos else dict(r) for r in rows]


class LossTimer:
    """Wraps ``trainer.compute_loss`` and adds up the wall time spent inside it in training mode (forward passes of
    policy and reference + the loss), so that the loss computation is timed apart from the rest of the trainer step
    and from evaluations."""

    def __init__(self, trainer: Any) -> None:
        self.seconds = 0.0
        self.calls = 0
        inner = trainer.compute_loss

        def timed(*args: Any, **kwargs: Any) -> Any:
            model = args[0] if args else kwargs.get("model")
            if model is not None and not getattr(model, "training", True):
                return inner(*args, **kwargs)  # an evaluation: not a training step
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0
                self.calls += 1

        trainer.compute_loss = timed


def run_timed(trainer: Any, steps: int) -> dict[str, Any]:
    """Train and return ``seconds``, ``seconds_per_step`` (whole step) and ``loss_seconds_per_step``."""
    timer = LossTimer(trainer)
    t0 = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - t0
    n = max(steps, 1)
    return {"seconds": seconds, "seconds_per_step": seconds / n, "loss_seconds_per_step": timer.seconds / n}


DPO_LOSSES = ("sigmoid", "ipo")


def _plateau_args(plan: Any) -> dict[str, Any]:
    if plan is None:
        return {}
    return dict(eval_strategy="steps", eval_steps=plan.eval_every, per_device_eval_batch_size=64)


def _eval(rows: Any, tokenizer: Any) -> Any:
    from datasets import Dataset

    if rows is None:
        return None
    return {k: Dataset.from_list(_bos(v, tokenizer)) for k, v in rows.items()}


def _fit(trainer: Any, steps: int, plan: Any) -> dict[str, Any]:
    quiet(trainer)
    if plan is None:
        return run_timed(trainer, steps)
    from pipa.plateau import fit_to_plateau

    return fit_to_plateau(trainer, plan)


def train_dpo(model: Any, ref_model: Any, tokenizer: Any, rows: list[dict[str, Any]], *, steps: int, lr: float,
              batch_size: int, seed: int, beta: float = 0.1, max_length: int = 64,
              loss_type: str = "sigmoid", eval_rows: dict[str, list[dict[str, Any]]] | None = None,
              plan: Any = None) -> dict[str, Any]:
    """trl DPO (``loss_type='sigmoid'``) or IPO (``loss_type='ipo'``) on ``prompt/chosen/rejected`` rows; trains
    ``model`` in place and returns timing. With ``plan`` (:class:`pipa.plateau.PlateauPlan`) and ``eval_rows``
    (``{"val": rows, "test": rows}``) it trains to a validation plateau of its own loss (``steps`` ignored) and
    returns the curve too (:func:`pipa.plateau.fit_to_plateau`)."""
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    if loss_type not in DPO_LOSSES:
        raise ValueError(f"loss_type must be one of {DPO_LOSSES}, got {loss_type!r}")
    steps = plan.max_steps if plan is not None else steps
    with tempfile.TemporaryDirectory() as tmp:
        args = DPOConfig(beta=beta, loss_type=[loss_type], max_length=max_length, **_plateau_args(plan),
                         **common_args(steps=steps, lr=lr, batch_size=batch_size, seed=seed, out=tmp))
        trainer = DPOTrainer(model=model, ref_model=ref_model, args=args,
                             train_dataset=Dataset.from_list(_bos(rows, tokenizer)),
                             eval_dataset=_eval(eval_rows, tokenizer), processing_class=tokenizer)
        return _fit(trainer, steps, plan)


def kto_weights(rows: list[dict[str, Any]]) -> tuple[float, float]:
    """``(desirable_weight, undesirable_weight)`` with ``w_D n_D = w_U n_U`` (KTO's recommended ratio range [1, 4/3]
    at its lower end)."""
    n_pos = sum(bool(r["label"]) for r in rows)
    n_neg = len(rows) - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("KTO needs both desirable and undesirable examples")
    return 1.0, n_pos / n_neg


def train_kto(model: Any, ref_model: Any, tokenizer: Any, rows: list[dict[str, Any]], *, steps: int, lr: float,
              batch_size: int, seed: int, beta: float = 0.1, max_length: int = 64,
              eval_rows: dict[str, list[dict[str, Any]]] | None = None, plan: Any = None) -> dict[str, Any]:
    """trl KTO on ``prompt/completion/label`` rows (desirable/undesirable weights balanced as KTO recommends, from
    the training rows; the same weights score the evaluation rows). ``plan``/``eval_rows`` as in :func:`train_dpo`."""
    from datasets import Dataset
    from trl import KTOConfig, KTOTrainer

    wd, wu = kto_weights(rows)
    steps = plan.max_steps if plan is not None else steps
    with tempfile.TemporaryDirectory() as tmp:
        args = KTOConfig(beta=beta, max_length=max_length, desirable_weight=wd, undesirable_weight=wu,
                         **_plateau_args(plan),
                         **common_args(steps=steps, lr=lr, batch_size=batch_size, seed=seed, out=tmp))
        trainer = KTOTrainer(model=model, ref_model=ref_model, args=args,
                             train_dataset=Dataset.from_list(_bos(rows, tokenizer)),
                             eval_dataset=_eval(eval_rows, tokenizer), processing_class=tokenizer)
        return _fit(trainer, steps, plan)
