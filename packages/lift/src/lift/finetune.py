"""Supervised fine-tuning with LIFT and the baselines of the paper, on one training loop.

Methods (:data:`METHODS`), all at the same parameter budget ``k = (m + n) r_b`` per weight matrix where sparse:

=================  ==================================================================================================
``full_ft``        every parameter, ``torch.optim.AdamW``
``lora``           peft LoRA on every linear layer but ``lm_head`` (r = r_b, alpha = 2 r_b unless set), AdamW
``lift``           :class:`~lift.optim.SparseAdamW`, principal-weight mask, recomputed every ``update_interval``
``lift_static``    peft SHiRA with the principal-weight mask as its custom ``mask_fn`` (static), AdamW
``lift_smallest``  as ``lift`` but the *smallest* low-rank entries (what the released official scripts select)
``magnitude``      SparseAdamW with the ``|W|`` mask (no rank reduction), same schedule
``random``         peft SHiRA with its random mask (static), AdamW
``gradient``       SparseAdamW, mask = top-k ``|G|`` at each refresh (official ``grad_mag``), random at first
``momentum``       SparseAdamW, mask = top-k of a dense gradient EMA (official ``momentum``), random at first
``movement``       SparseAdamW, mask = top-k of ``-sum G*W`` (official ``movement_v2``), random at first
=================  ==================================================================================================

:func:`finetune` trains answer-token cross-entropy (prompt labels ``-100``) with gradient accumulation and a linear
schedule with warm-up (``transformers.get_linear_schedule_with_warmup``), timing each optimizer step.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from lift.errors import LiftConfigError
from lift.masks import MaskType, Selection, shira_mask_fn
from lift.optim import SparseAdamW, select_linear_weights

__all__ = ["METHODS", "MethodConfig", "SetUp", "setup_method", "finetune", "state_floats", "trainable_count",
           "live_training_bytes", "answer_token_accuracy", "answer_scores"]

METHODS = ("full_ft", "lora", "lift", "lift_static", "lift_smallest", "magnitude", "random", "gradient", "momentum",
           "movement")

DEFAULT_LRS = {"full_ft": 1e-3, "lora": 3e-3, "lift": 3e-3, "lift_static": 3e-3, "lift_smallest": 3e-3,
               "magnitude": 3e-3, "random": 3e-3, "gradient": 3e-3, "momentum": 3e-3, "movement": 3e-3}

#: SparseAdamW methods (dynamic masks) and their mask types.
_SPARSE_ADAMW = {"lift": MaskType.PRINCIPAL, "lift_smallest": MaskType.PRINCIPAL, "magnitude": MaskType.MAGNITUDE,
                 "gradient": MaskType.GRADIENT, "momentum": MaskType.MOMENTUM, "movement": MaskType.MOVEMENT}


@dataclass(frozen=True)
class MethodConfig:
    """Hyper-parameters shared by all methods (the per-method learning rates in ``lrs``)."""

    budget_rank: int = 4
    """r_b: LoRA rank, and k = (m+n) r_b trainable entries per matrix for the sparse methods."""
    filter_rank: int = 8
    """r_f: rank of LIFT's low-rank filter."""
    update_interval: int = 25
    """LIFT mask refresh period in optimizer steps."""
    betas: tuple[float, float] = (0.9, 0.95)
    """AdamW betas of every method (the official training script uses (0.9, 0.95))."""
    eps: float = 1e-6
    """AdamW eps of every method: 1e-6, the released ``SparseAdamW``'s default (issue 32; was 1e-8)."""
    weight_decay: float = 0.0
    """Decoupled weight decay of every method (0 in all official configs)."""
    lrs: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_LRS))
    """Learning rate per method."""
    seed: int = 0
    """Seed for random masks and randomized SVDs."""
    svd: str = "auto"
    """SVD of the SparseAdamW masks: auto, exact or randomized."""
    sparse_grads: bool = True
    """SparseAdamW methods keep only the k masked gradient entries (False: dense gradients, as the official code)."""
    lora_alpha: float | None = None
    """LoRA's alpha (the update is scaled by alpha / r); None = 2 r_b, the official LoRA config's ratio."""


@dataclass
class SetUp:
    """A model ready to train: the (possibly peft-wrapped) model, its optimizer and bookkeeping."""

    name: str
    model: Any
    optimizer: torch.optim.Optimizer
    info: dict[str, Any]


def _linear_suffixes(model: nn.Module) -> list[str]:
    return sorted({n.rsplit(".", 1)[0].split(".")[-1] for n, _ in select_linear_weights(model)})


def setup_method(name: str, model: nn.Module, cfg: MethodConfig) -> SetUp:
    """Prepare ``model`` (modified in place / wrapped) and its optimizer for method ``name``."""
    if name not in METHODS:
        raise LiftConfigError(f"method must be one of {', '.join(METHODS)}; got {name!r}")
    lr = float(cfg.lrs.get(name, DEFAULT_LRS[name]))
    adam_kw = dict(lr=lr, betas=cfg.betas, eps=cfg.eps, weight_decay=cfg.weight_decay)
    if name == "full_ft":
        for p in model.parameters():
            p.requires_grad_(True)
        opt = torch.optim.AdamW(model.parameters(), **adam_kw)
        return SetUp(name, model, opt, {"lr": lr})
    if name in _SPARSE_ADAMW:
        opt = SparseAdamW(
            model, filter_rank=cfg.filter_rank, budget_rank=cfg.budget_rank, update_interval=cfg.update_interval,
            mask_type=_SPARSE_ADAMW[name],
            selection=Selection.SMALLEST if name == "lift_smallest" else Selection.LARGEST, seed=cfg.seed,
            sparse_grads=cfg.sparse_grads, svd=cfg.svd, **adam_kw)
        return SetUp(name, model, opt, {"lr": lr})
    from peft import get_peft_model

    if name == "lora":
        from peft import LoraConfig

        alpha = 2 * cfg.budget_rank if cfg.lora_alpha is None else cfg.lora_alpha
        if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha > 0):
            raise LiftConfigError(f"lora_alpha must be a finite number > 0; got {alpha!r}")
        pcfg = LoraConfig(r=cfg.budget_rank, lora_alpha=alpha, lora_dropout=0.0,
                          target_modules=_linear_suffixes(model), bias="none")
    else:
        from peft import ShiraConfig

        if name == "lift_static":
            with warnings.catch_warnings():  # peft warns that it does not know our mask_type; we set mask_fn below
                warnings.simplefilter("ignore", UserWarning)
                pcfg = ShiraConfig(r=cfg.budget_rank, target_modules=_linear_suffixes(model),
                                   mask_type="lift_principal")
            pcfg.mask_fn = shira_mask_fn(filter_rank=cfg.filter_rank, seed=cfg.seed)
        else:
            pcfg = ShiraConfig(r=cfg.budget_rank, target_modules=_linear_suffixes(model), mask_type="random",
                               random_seed=cfg.seed)
    pmodel = get_peft_model(model, pcfg)
    opt = torch.optim.AdamW([p for p in pmodel.parameters() if p.requires_grad], **adam_kw)
    return SetUp(name, pmodel, opt, {"lr": lr})


def state_floats(optimizer: torch.optim.Optimizer) -> int:
    """Floats held in the optimizer's moment tensors right now (``exp_avg`` + ``exp_avg_sq``), counted from state."""
    total = 0
    for st in optimizer.state.values():
        for key in ("exp_avg", "exp_avg_sq"):
            v = st.get(key) if isinstance(st, dict) else None
            if isinstance(v, torch.Tensor):
                total += v.numel()
    return total


def trainable_count(setup: SetUp) -> int:
    """Entries the method can change: k per matrix for SparseAdamW, else the numel of ``requires_grad`` params."""
    if isinstance(setup.optimizer, SparseAdamW):
        return setup.optimizer.trainable_entries()
    return sum(p.numel() for p in setup.model.parameters() if p.requires_grad)


def live_training_bytes(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, int]:
    """Bytes of the live training state: parameters, gradients (dense ``.grad`` plus SparseAdamW's ``(k,)`` gathered
    gradients) and optimizer state tensors (moments, mask indices), counted from the live tensors."""
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    grads = sum(p.grad.numel() * p.grad.element_size() for p in model.parameters() if p.grad is not None)
    if isinstance(optimizer, SparseAdamW):
        grads += optimizer.grad_buffer_bytes()  # the (k,) gathered gradients of the sparse-gradient path
    opt = 0
    for st in optimizer.state.values():
        if isinstance(st, dict):
            for v in st.values():
                if isinstance(v, torch.Tensor):
                    opt += v.numel() * v.element_size()
    return {"params": params, "grads": grads, "optimizer": opt, "total": params + grads + opt}


def finetune(model: Any, tokenizer: Any, examples: Sequence[Any], *, optimizer: torch.optim.Optimizer, steps: int,
             batch_size: int = 64, grad_accum: int = 1, warmup_ratio: float = 0.03, seed: int = 0,
             progress: bool = False, desc: str = "finetune", rank: int = 0, world_size: int = 1,
             eval_fn: Callable[[], float] | None = None, eval_every: int = 0) -> dict[str, Any]:
    """``steps`` optimizer steps of SFT on ``examples`` (``Example(prompt, answer)``), ``grad_accum`` micro-batches
    of ``batch_size`` each; linear LR decay with ``warmup_ratio`` warm-up.

    Data parallel (``world_size > 1``, with :class:`~lift.optim.SparseAdamW` averaging the gradients over the
    ranks): every rank draws the same stream of micro-batches; of each ``world_size`` consecutive micro-batches rank
    ``r`` trains on the ``r``-th, so the global batch of a step is ``grad_accum * world_size`` micro-batches, the
    same as one process with ``grad_accum * world_size`` accumulation steps (the losses returned are this rank's).

    ``eval_fn`` (a validation score of the model, e.g. exact match on a held-out split) is called in eval mode
    every ``eval_every`` optimizer steps and after the last one (not counted in the step times); its values form
    the validation curve ``"curve": {"steps": [...], "values": [...]}`` (empty without ``eval_fn``), the evidence
    of the competence gates' plateau check (:func:`icml25.train.plateau_check`).

    Returns ``{"losses": [per optimizer step], "seconds": training wall time, "step_seconds": median step time,
    "memory": live_training_bytes after the last backward, "peak_cuda_bytes": or None, "curve": ...}``.
    """
    from icml25.testbeds.lm import encode_examples
    from icml25.train import batch_stream, check_finite
    from icml25.train import progress as bar
    from transformers import get_linear_schedule_with_warmup

    if not 0 <= rank < world_size:
        raise LiftConfigError(f"rank must be in [0, world_size); got rank {rank!r}, world_size {world_size!r}")
    for fname, value, low in (("steps", steps, 1), ("batch_size", batch_size, 1), ("grad_accum", grad_accum, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise LiftConfigError(f"{fname} must be an int >= {low}; got {value!r}")
    if not 0.0 <= warmup_ratio < 1.0:
        raise LiftConfigError(f"warmup_ratio must be in [0, 1); got {warmup_ratio!r}")
    if isinstance(eval_every, bool) or not isinstance(eval_every, int) or eval_every < 0:
        raise LiftConfigError(f"eval_every must be an int >= 0; got {eval_every!r}")
    if eval_fn is not None and eval_every < 1:
        raise LiftConfigError(f"eval_every must be >= 1 when eval_fn is given; got {eval_every!r}")
    curve: dict[str, list[Any]] = {"steps": [], "values": []}
    limit = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    data = encode_examples(tokenizer, examples, max_length=limit)  # input_ids/attention_mask/labels (N, T)
    lengths = data["attention_mask"].sum(1)
    device = next(model.parameters()).device
    sched = get_linear_schedule_with_warmup(optimizer, int(math.ceil(warmup_ratio * steps)), steps)
    gen = torch.Generator().manual_seed(seed)
    batches = batch_stream(len(examples), batch_size, generator=gen)  # endless; grad_accum batches per step
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    losses: list[float] = []
    step_times: list[float] = []
    memory: dict[str, int] = {}
    model.train()
    steps_bar = bar(range(steps), desc=desc, disable=not progress)
    t_start = time.perf_counter()
    for step in steps_bar:
        t0 = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for _ in range(grad_accum):
            for r in range(world_size):  # every rank draws every micro-batch; keeps its own
                _, idx_r = next(batches)
                if r == rank:
                    idx = idx_r
            T = int(lengths[idx].max())
            batch = {k: v[idx, :T].to(device) for k, v in data.items()}  # (B, T) each
            loss = model(**batch).loss / grad_accum
            loss.backward()
            total += float(loss.detach())
        if step == steps - 1:
            memory = live_training_bytes(model, optimizer)
        optimizer.step()
        sched.step()
        if cuda:
            torch.cuda.synchronize(device)
        step_times.append(time.perf_counter() - t0)
        losses.append(check_finite(total, step=step))  # TrainingDivergedError (a FloatingPointError) on NaN/inf
        steps_bar.set_postfix(loss=f"{total:.3f}")
        if eval_fn is not None and ((step + 1) % eval_every == 0 or step == steps - 1):
            model.eval()
            with torch.no_grad():
                curve["steps"].append(step + 1)
                curve["values"].append(float(eval_fn()))
            model.train()
    seconds = time.perf_counter() - t_start
    steps_bar.close()
    model.eval()
    memory = {**memory, "optimizer": live_training_bytes(model, optimizer)["optimizer"]}
    step_sorted = sorted(step_times)
    return {
        "losses": losses,
        "seconds": seconds,
        "step_seconds": step_sorted[len(step_sorted) // 2],
        "mean_step_seconds": seconds / steps,
        "memory": memory,
        "peak_cuda_bytes": int(torch.cuda.max_memory_allocated(device)) if cuda else None,
        "curve": curve,
    }


@torch.no_grad()
def answer_scores(model: Any, tokenizer: Any, examples: Sequence[Any], *, batch_size: int = 256) -> dict[str, float]:
    """Teacher-forced scores on the answer tokens (and ``</s>``) in one forward pass per batch:

    * ``token``: the fraction of answer positions where the argmax next token equals the true one given the true
      prefix (graded; does not collapse to 0 when one digit is wrong);
    * ``exact``: the fraction of examples whose answer positions are *all* right. By induction over the positions
      this is exactly whether greedy decoding reproduces ``answer`` followed by ``</s>``, i.e.
      ``icml25.testbeds.lm.exact_match`` for a tokenizer with one tokenization per string (the test bed's
      character tokenizer), without the token-by-token generation (tested equal on a trained model).

    ``pred = argmax logits[:, :-1]`` (B, T-1) against ``labels[:, 1:]`` (B, T-1) at the answer positions.
    """
    from icml25.testbeds.lm import encode_examples

    if not examples:
        raise LiftConfigError("examples must not be empty")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    hits = total = exact = 0
    for start in range(0, len(examples), batch_size):
        data = encode_examples(tokenizer, examples[start: start + batch_size])  # (B, T) each
        logits = model(input_ids=data["input_ids"].to(device),
                       attention_mask=data["attention_mask"].to(device)).logits  # (B, T, V)
        pred = logits[:, :-1].argmax(-1).cpu()  # (B, T-1): prediction of token t+1
        target = data["labels"][:, 1:]  # (B, T-1)
        keep = target != -100
        right = (pred == target) & keep  # (B, T-1)
        hits += int(right.sum())
        total += int(keep.sum())
        exact += int((right.sum(1) == keep.sum(1)).sum())  # every answer position right
    if was_training:
        model.train()
    return {"token": hits / total, "exact": exact / len(examples)}


def answer_token_accuracy(model: Any, tokenizer: Any, examples: Sequence[Any], *, batch_size: int = 256) -> float:
    """Teacher-forced accuracy on the answer tokens (and ``</s>``), see :func:`answer_scores`: a graded measure of
    retained knowledge (unlike exact match it does not collapse to 0 when one digit is wrong)."""
    return answer_scores(model, tokenizer, examples, batch_size=batch_size)["token"]
