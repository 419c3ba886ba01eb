"""Continual instruction tuning with LoRA (peft): the LCIA learner and the baselines it is compared with.

Methods (all with the same LoRA rank, learning rate, steps per task, task order and seeds):

- ``sequential``  one LoRA adapter trained on task after task (plain sequential fine-tuning);
- ``fixed_ema``   + a fixed EMA θ* = 0.99 θ* + 0.01 θ after every step, written back at each task's end;
- ``dema``        + DEMA (the dynamic coefficient of :mod:`lcia.dema`) instead, no grouping;
- ``lcia``        DEMA + instruction grouping (:mod:`lcia.grouping`): one peft adapter per group
                  (``add_adapter``/``set_adapter``); *retrain* a similar group with DEMA on, *expand* with a new
                  adapter with DEMA off; at test time each instance is routed by its own instruction;
- ``joint``       reference: one adapter trained on the mixture of all tasks (steps × tasks steps);
- ``oracle``      reference: a fresh adapter per task, evaluated with its own adapter (oracle routing).

The accuracy matrix ``A[i, j]`` (greedy exact match on task ``j``'s split after stage ``i``) feeds
:mod:`lcia.metrics`.
"""

from __future__ import annotations

import copy
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from icml25.testbeds.lm import Example, encode_examples, generate

from lcia.config import LORA_TARGETS, Config
from lcia.data import Task, check_stream, template_of
from lcia.dema import DEMA
from lcia.errors import LciaError
from lcia.grouping import InstructionRouter

CONTINUAL = ("sequential", "fixed_ema", "dema", "lcia")
METHODS = (*CONTINUAL, "joint", "oracle")


# --------------------------------------------------------------------------------------------------- base model
def tiny_base(cfg: Config, *, progress: bool = False) -> tuple[Any, Any]:
    """The tiny Llama of the icml25 test bed, pre-trained (cached) on its raw task mix (add, sub, reverse, sort,
    count in the bare formats ``37+48=``, ``reverse abcde=``, ...), so each instruction task must be learned by LoRA:
    the instruction words are the only cue that tells ``add`` from ``subtract`` on the payload ``37 48``."""
    from icml25.testbeds.lm import pretrained_tiny_lm

    return pretrained_tiny_lm(["add", "sub", "reverse", "sort", "count"], steps=cfg.pretrain_steps, seed=0,
                              hidden_size=cfg.hidden_size, num_layers=cfg.num_layers, progress=progress)


def load_base(path: str) -> tuple[Any, Any]:
    """A user's causal LM and tokenizer from a local folder or hub id (offline: cache only)."""
    try:
        from pathlib import Path

        from icml25.hub import hub_kwargs, model_kwargs
        from transformers import AutoModelForCausalLM, AutoTokenizer

        kw = {"local_files_only": True} if Path(path).is_dir() else hub_kwargs()  # never a download when offline
        tok = AutoTokenizer.from_pretrained(path, **kw)
        model = AutoModelForCausalLM.from_pretrained(path, **model_kwargs(kw))
    except OSError as exc:
        raise LciaError(f"model {path!r} could not be loaded (a local folder, or a hub id with network access): "
                        f"{str(exc).splitlines()[0]}") from None
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    if tok.bos_token_id is None:
        tok.bos_token = tok.eos_token
    return model, tok


def lora_config(cfg: Config, targets: Sequence[str] = LORA_TARGETS) -> Any:
    from peft import LoraConfig

    return LoraConfig(r=cfg.rank, lora_alpha=cfg.lora_alpha, target_modules=list(targets), lora_dropout=0.0,
                      bias="none", task_type="CAUSAL_LM")


def _targets(model: Any) -> list[str]:
    names = {n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    found = [t for t in LORA_TARGETS if t in names]
    if not found:  # not a Llama-style model: every linear layer except the output head
        found = sorted(names - {"lm_head"})
    return found


def _context(model: Any) -> int | None:
    return getattr(getattr(model, "config", None), "max_position_embeddings", None)


def _fingerprint(examples: Sequence[Example]) -> tuple[tuple[str, str], ...]:
    return tuple((e.prompt, e.answer) for e in examples)


#: (tokenizer id, examples' prompts and answers) -> (tokenizer, encoded tensors); a few entries, least recent dropped.
#: Every method of a seed trains on the same task lists, so each list is tokenized once instead of once per method.
_ENCODED: OrderedDict[tuple[int, tuple], tuple[Any, dict]] = OrderedDict()
_ENCODED_MAX = 32
#: tasks already checked against a context limit: (tokenizer id, limit, task name, examples) -> tokenizer
_FITS: OrderedDict[tuple, Any] = OrderedDict()


def _encoded(tokenizer: Any, examples: Sequence[Example]) -> dict:
    """``encode_examples(tokenizer, examples)``, memoised on the examples' exact text (the tensors are only read)."""
    key = (id(tokenizer), _fingerprint(examples))
    hit = _ENCODED.get(key)
    if hit is not None and hit[0] is tokenizer:
        _ENCODED.move_to_end(key)
        return hit[1]
    data = encode_examples(tokenizer, list(examples))
    _ENCODED[key] = (tokenizer, data)
    while len(_ENCODED) > _ENCODED_MAX:
        _ENCODED.popitem(last=False)
    return data


def check_fits(tasks: Sequence[Task], model: Any, tokenizer: Any) -> None:
    """Every ``<s> prompt answer </s>`` of every task must fit the model's context (clear error otherwise)."""
    limit = _context(model)
    check_stream(tasks)
    if limit is None:
        return
    for t in tasks:
        key = (id(tokenizer), limit, t.name, _fingerprint(t.train + t.val + t.test))
        if _FITS.get(key) is tokenizer:
            continue
        for ex in t.train + t.val + t.test:
            n = len(tokenizer(ex.prompt + ex.answer, add_special_tokens=False)["input_ids"]) + 2
            if n > limit:
                raise LciaError(f"task {t.name!r}: prompt {ex.prompt[:40]!r} needs {n} positions but the model's "
                                f"context is {limit}; shorten the prompts")
        _FITS[key] = tokenizer
        while len(_FITS) > _ENCODED_MAX:
            _FITS.popitem(last=False)


# ------------------------------------------------------------------------------------------------ training
def lr_lambda(steps: int, warmup: float, schedule: str):
    """Multiplier of the base lr at optimizer step ``k`` (0-based): linear warm-up over ``ceil(warmup · steps)``
    steps from ``1/(w+1)``, then cosine decay to 0 at ``steps`` (the paper's ``cosine`` with 3 % warm-up,
    transformers' ``get_cosine_schedule_with_warmup`` with the warm-up shifted by one so no step has lr 0), or 1
    throughout (``constant``)."""
    import math

    if schedule == "constant":
        return lambda k: 1.0
    w = math.ceil(warmup * steps)

    def f(k: int) -> float:
        if k < w:
            return (k + 1) / (w + 1)
        return 0.5 * (1.0 + math.cos(math.pi * (k - w) / max(1, steps - w)))
    return f


class TaskTrainer:
    """AdamW on the trainable tensors of ``model`` over ``examples``, one optimizer step per :meth:`step` call
    (cross-entropy on answer tokens and ``</s>``), with the lr schedule of :func:`lr_lambda` over ``steps`` steps;
    ``grad_accum`` micro-batches of ``batch_size // grad_accum`` per step; ``dema.update()`` once after every
    ``optimizer.step()`` (the gradient it sees is the full accumulated one, unclipped, as the optimizer used it)."""

    def __init__(self, model: Any, tokenizer: Any, examples: Sequence[Example], *, steps: int, lr: float,
                 batch_size: int, seed: int, grad_accum: int = 1, dema: DEMA | None = None,
                 schedule: str = "cosine", warmup: float = 0.03, accelerator: Any = None) -> None:
        if not examples:
            raise LciaError("a task has no training examples")
        self.params = [p for p in model.parameters() if p.requires_grad]
        if not self.params:
            raise LciaError("the model has no trainable tensors")
        self.model, self.dema, self.grad_accum = model, dema, grad_accum
        self.data = _encoded(tokenizer, examples)
        self.lengths = self.data["attention_mask"].sum(1)
        self.opt = torch.optim.AdamW(self.params, lr=lr, weight_decay=0.0)
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lr_lambda(steps, warmup, schedule))
        self.gen = torch.Generator().manual_seed(int(seed))
        self.n = len(examples)
        self.micro = max(1, batch_size // grad_accum)
        self.acc = accelerator if accelerator is not None and accelerator.num_processes > 1 else None
        if self.acc is not None and self.micro % self.acc.num_processes:
            raise LciaError(f"batch_size // grad_accum ({self.micro}) must be divisible by the number of processes "
                            f"({self.acc.num_processes}) under accelerate launch")
        self.perm, self.pos = torch.randperm(self.n, generator=self.gen), 0
        self.losses: list[float] = []
        self.dev = self.params[0].device  # batches go where the trainable tensors are

    def step(self, _i: int = 0) -> float:
        if not self.model.training:  # walking every module costs ~7 % of a tiny model's step: only when needed
            self.model.train()
        self.opt.zero_grad(set_to_none=True)
        total = 0.0
        for _ in range(self.grad_accum):
            if self.pos + self.micro > self.n:
                self.perm, self.pos = torch.randperm(self.n, generator=self.gen), 0
            idx = self.perm[self.pos:self.pos + self.micro]  # the same global micro-batch on every process
            self.pos += self.micro
            if self.acc is not None:  # this process's contiguous share of it
                idx = idx.chunk(self.acc.num_processes)[self.acc.process_index]
            T = int(self.lengths[idx].max())
            batch = {k: v[idx, :T].to(self.dev) for k, v in self.data.items()}
            loss = self.model(**batch).loss / self.grad_accum
            loss.backward()
            total += float(loss.detach())
        if self.acc is not None:  # data parallel: every process steps on the mean gradient of the global batch
            for p in self.params:
                if p.grad is not None:
                    p.grad = self.acc.reduce(p.grad, reduction="mean")
            total = float(self.acc.reduce(torch.tensor([total]), reduction="mean")[0])
        if not np.isfinite(total):
            raise LciaError(f"training diverged (loss {total}) at step {len(self.losses)}; lower the learning rate")
        self.opt.step()
        self.sched.step()
        if self.dema is not None:
            self.dema.update()
        self.losses.append(total)
        return total  # the model stays in train mode (no dropout here); train_steps and evaluation set eval mode


def train_steps(model: Any, tokenizer: Any, examples: Sequence[Example], *, steps: int, lr: float, batch_size: int,
                seed: int, grad_accum: int = 1, dema: DEMA | None = None, schedule: str = "cosine",
                warmup: float = 0.03, accelerator: Any = None) -> list[float]:
    """``steps`` optimizer steps of :class:`TaskTrainer`; returns the per-step losses."""
    tr = TaskTrainer(model, tokenizer, examples, steps=steps, lr=lr, batch_size=batch_size, seed=seed,
                     grad_accum=grad_accum, dema=dema, schedule=schedule, warmup=warmup, accelerator=accelerator)
    for i in range(steps):
        tr.step(i)
    model.eval()
    return tr.losses


def exact_match(model: Any, tokenizer: Any, examples: Sequence[Example]) -> float:
    """Greedy exact-match accuracy (generation stops at ``</s>``)."""
    if not examples:
        raise LciaError("no examples to evaluate")
    max_new = max(len(tokenizer(e.answer, add_special_tokens=False)["input_ids"]) for e in examples) + 1
    preds = generate(model, tokenizer, [e.prompt for e in examples], max_new_tokens=max_new)
    return float(np.mean([p == e.answer for p, e in zip(preds, examples)]))


def _seeded(seed: int):
    rng = torch.random.fork_rng(devices=[])
    rng.__enter__()
    torch.manual_seed(int(seed))
    return rng


# ------------------------------------------------------------------------------------------------ learner
@dataclass
class StageInfo:
    task: str
    group: int | None = None
    decision: str | None = None
    dema: dict[str, Any] | None = None
    seconds: float = 0.0
    final_loss: float = float("nan")


@dataclass
class ContinualLearner:
    """One continual method over a copy of ``base`` (the base model is never modified)."""

    base: Any
    tokenizer: Any
    cfg: Config
    method: str
    seed: int = 0
    model: Any = None
    router: InstructionRouter | None = None
    task_groups: dict[str, int] = field(default_factory=dict)
    stages: list[StageInfo] = field(default_factory=list)
    adapters: list[str] = field(default_factory=list)
    formula_alphas: list[float] = field(default_factory=list)
    #: ``(numel, a, b, c)`` of every closed-form evaluation of DEMA (see :attr:`lcia.dema.DEMA.terms`)
    terms: list[tuple[int, float, float, float]] = field(default_factory=list)
    #: an ``accelerate.Accelerator`` with several processes: data-parallel training (mean gradient of the batch)
    accelerator: Any = None

    def __post_init__(self) -> None:
        if self.method not in CONTINUAL:
            raise LciaError(f"method must be one of {CONTINUAL}, got {self.method!r}")
        if self.method == "lcia":
            self.router = InstructionRouter(tau=self.cfg.tau, aggregate=self.cfg.aggregate)

    # -- adapters
    def _new_adapter(self, name: str, init_seed: int, copy_from: str | None = None) -> None:
        from peft import get_peft_model

        if name in self.adapters:
            raise LciaError(f"adapter name {name!r} already exists; adapter names must be unique")
        rng = _seeded(init_seed)
        try:
            if self.model is None:
                self.model = get_peft_model(copy.deepcopy(self.base), lora_config(self.cfg, _targets(self.base)),
                                            adapter_name=name)
            else:
                self.model.add_adapter(name, lora_config(self.cfg, _targets(self.base)))
        finally:
            rng.__exit__(None, None, None)
        self.adapters.append(name)
        if copy_from is not None:
            with torch.no_grad():
                params = dict(self.model.named_parameters())
                for n, p in params.items():
                    if f".{copy_from}." in n:
                        params[n.replace(f".{copy_from}.", f".{name}.")].copy_(p)
        self.model.set_adapter(name)

    def _trainable(self) -> list[str]:
        return [n for n, p in self.model.named_parameters() if p.requires_grad]

    def learn(self, task: Task, index: int) -> StageInfo:
        """Train on one task (stage ``index``) as the method prescribes."""
        t0 = time.perf_counter()
        info = StageInfo(task=task.name)
        init_seed = 1_000 * self.seed + index
        use_dema, fixed = False, None
        if self.method == "lcia":
            group, decision = self.router.assign(task.templates)
            info.group, info.decision = group, decision
            name = f"group{group}"
            if decision == "expand":
                prev = self.adapters[-1] if (self.cfg.expand_init == "previous" and self.adapters) else None
                self._new_adapter(name, init_seed, copy_from=prev)
            else:
                self.model.set_adapter(name)
                use_dema = True
            self.task_groups[task.name] = group
        else:
            if self.model is None:
                self._new_adapter("default", init_seed)
            use_dema = self.method in ("fixed_ema", "dema")
            fixed = self.cfg.fixed_alpha if self.method == "fixed_ema" else None
        trainable = self._trainable()
        active = self.model.active_adapter if isinstance(self.model.active_adapter, str) else None
        if active is not None and any(f".{active}." not in n for n in trainable):  # pragma: no cover - peft change
            raise RuntimeError("peft made tensors of a non-active adapter trainable")
        dema = None
        if use_dema:
            dema = DEMA(self.model, fallback_alpha=self.cfg.fallback_alpha, fixed_alpha=fixed,
                        clip_alpha=self.cfg.clip_alpha, ema_dtype=self.cfg.ema_dtype, record_terms=True)
        losses = train_steps(self.model, self.tokenizer, task.train, steps=self.cfg.steps, lr=self.cfg.lr,
                             batch_size=self.cfg.batch_size, grad_accum=self.cfg.grad_accum,
                             seed=10_000 * self.seed + index, dema=dema, schedule=self.cfg.schedule,
                             warmup=self.cfg.warmup, accelerator=self.accelerator)
        if dema is not None:
            dema.replace()
            info.dema = dema.summary()
            self.formula_alphas += dema.formula_alphas
            self.terms += dema.terms
        info.final_loss = float(np.mean(losses[-5:])) if losses else float("nan")
        info.seconds = time.perf_counter() - t0
        self.stages.append(info)
        return info

    def route(self, prompt: str) -> str:
        """Adapter that answers ``prompt`` (lcia: by its instruction; others: the single adapter)."""
        if self.method != "lcia":
            return "default"
        return f"group{self.router.route(template_of(prompt))}"

    def evaluate(self, examples: Sequence[Example], *, task: str | None = None) -> float:
        """Exact match on ``examples``; lcia routes each instance (or by the task's group with oracle routing)."""
        if self.model is None:
            raise LciaError("evaluate before any task was learned")
        if self.method != "lcia":
            return exact_match(self.model, self.tokenizer, examples)
        by_adapter: dict[str, list[Example]] = {}
        cache: dict[str, str] = {}
        for ex in examples:
            if self.cfg.routing == "oracle" and task is not None and task in self.task_groups:
                name = f"group{self.task_groups[task]}"
            else:
                key = template_of(ex.prompt)
                if key not in cache:
                    cache[key] = self.route(ex.prompt)
                name = cache[key]
            by_adapter.setdefault(name, []).append(ex)
        correct = 0.0
        for name, exs in by_adapter.items():
            self.model.set_adapter(name)
            correct += exact_match(self.model, self.tokenizer, exs) * len(exs)
        return correct / len(examples)


def run_stream(base: Any, tokenizer: Any, tasks: Sequence[Task], cfg: Config, *, method: str, seed: int,
               split: str = "test", final_only: bool = False, accelerator: Any = None) -> dict[str, Any]:
    """Train ``method`` on ``tasks`` in order; after each stage evaluate every task seen so far on ``split``
    (``final_only``: only after the last stage, enough for Avg, as tuning needs). ``accelerator``: an
    ``accelerate.Accelerator`` of several processes (``accelerate launch``) trains data-parallel.

    Returns ``{"acc": A [T, T] (NaN above the diagonal), "stages": [...], "learner": ContinualLearner}``; the
    references ``joint`` and ``oracle`` return only the final row, the diagonal and the final row coinciding for
    ``oracle``.
    """
    check_fits(tasks, base, tokenizer)
    T = len(tasks)
    A = np.full((T, T), np.nan)
    if method == "joint":
        return _run_joint(base, tokenizer, tasks, cfg, seed=seed, split=split)
    if method == "oracle":
        return _run_oracle(base, tokenizer, tasks, cfg, seed=seed, split=split)
    learner = ContinualLearner(base, tokenizer, cfg, method, seed=seed, accelerator=accelerator)
    for i, task in enumerate(tasks):
        learner.learn(task, i)
        if final_only and i < T - 1:
            continue
        for j in range(i + 1):
            A[i, j] = learner.evaluate(getattr(tasks[j], split), task=tasks[j].name)
    return {"acc": A, "stages": learner.stages, "learner": learner}


def _run_joint(base, tokenizer, tasks, cfg, *, seed, split):
    learner = ContinualLearner(base, tokenizer, cfg, "sequential", seed=seed)
    learner._new_adapter("default", 1_000 * seed)
    mixed = [ex for t in tasks for ex in t.train]
    t0 = time.perf_counter()
    losses = train_steps(learner.model, tokenizer, mixed, steps=cfg.steps * len(tasks), lr=cfg.lr,
                         batch_size=cfg.batch_size, grad_accum=cfg.grad_accum, seed=10_000 * seed,
                         schedule=cfg.schedule, warmup=cfg.warmup)
    final = np.array([learner.evaluate(getattr(t, split)) for t in tasks])
    info = StageInfo(task="all", seconds=time.perf_counter() - t0, final_loss=float(np.mean(losses[-5:])))
    return {"final": final, "stages": [info], "learner": learner}


def _run_oracle(base, tokenizer, tasks, cfg, *, seed, split):
    final, stages = [], []
    for i, t in enumerate(tasks):
        learner = ContinualLearner(base, tokenizer, cfg, "sequential", seed=seed)
        learner.learn(t, i)  # same init and batch seeds as stage i of the continual methods
        final.append(learner.evaluate(getattr(t, split)))
        stages += learner.stages
    return {"final": np.array(final), "stages": stages, "learner": None}


def validation_loss(model: Any, tokenizer: Any, examples: Sequence[Example]) -> float:
    """Mean cross-entropy per answer token (and ``</s>``) of ``examples`` under teacher forcing, in eval mode."""
    if not examples:
        raise LciaError("no examples to evaluate")
    data = _encoded(tokenizer, examples)
    dev = next(model.parameters()).device
    model.eval()
    with torch.no_grad():
        return float(model(**{k: v.to(dev) for k, v in data.items()}).loss)


def train_until_learned(step: Any, evaluate: Any, evaluate_loss: Any, *, max_steps: int, eval_every: int,
                        patience: int = 4, min_delta: float = 0.02, loss_delta: float = 0.02, min_steps: int = 0,
                        ceiling: float = 1.0) -> tuple[Any, list[float]]:
    """Train for up to ``max_steps`` calls of ``step(i)``; every ``eval_every`` steps (and at the end) measure the
    validation accuracy ``evaluate()`` and the validation loss ``evaluate_loss()``. Stop when, after at least
    ``min_steps`` steps, ``patience`` evaluations in a row brought no *progress*: progress is an accuracy above the
    last accuracy that counted as progress by more than ``min_delta`` (as ``icml25.train.train_until_plateau``), or
    -- while the best accuracy is still below ``ceiling`` -- a validation loss below the last loss that counted by
    more than the fraction ``loss_delta`` of it (so a slow steady fall counts once it adds up to ``loss_delta``).

    Why the loss: a task can be learned by a late jump in exact match (the wider test-bed Llama learns ``reverse``
    after 120-180 flat steps) while its validation loss falls all along; a plateau rule on exact match alone stops
    such a run before the jump and makes "what unlimited training reaches" look like 0. Once the accuracy reached
    the ceiling the loss no longer counts (nothing left to learn that exact match can show).

    Returns the accuracy :class:`icml25.train.Curve` (``stopped_by`` "plateau" or "budget") and the losses measured
    at the same steps."""
    from icml25.train import Curve

    if max_steps < 1 or eval_every < 1 or patience < 1:
        raise LciaError(f"max_steps, eval_every and patience must be >= 1, got {max_steps}, {eval_every}, {patience}")
    if not (min_delta >= 0 and 0 <= loss_delta < 1):
        raise LciaError(f"min_delta must be >= 0 and loss_delta in [0, 1), got {min_delta}, {loss_delta}")
    curve = Curve(higher_is_better=True, patience=patience, min_delta=float(min_delta), ceiling=float(ceiling))
    losses: list[float] = []
    acc_ref, loss_ref, bad = -np.inf, np.inf, 0  # the values the last progress was measured against
    for i in range(max_steps):
        step(i)
        done = i + 1
        if done % eval_every and done != max_steps:
            continue
        acc, loss = float(evaluate()), float(evaluate_loss())
        if not (np.isfinite(acc) and np.isfinite(loss)):
            raise LciaError(f"validation accuracy {acc} / loss {loss} at step {done}: training diverged")
        curve.steps.append(done)
        curve.values.append(acc)
        losses.append(loss)
        acc_gain, loss_gain = acc > acc_ref + min_delta, loss < loss_ref * (1.0 - loss_delta)
        acc_ref, loss_ref = (acc if acc_gain else acc_ref), (loss if loss_gain else loss_ref)
        progress = acc_gain or (loss_gain and max(curve.values) < ceiling - min_delta)
        bad = 0 if progress else bad + 1
        if bad >= patience and done >= min_steps:
            curve.stopped_by = "plateau"
            return curve, losses
    curve.stopped_by = "budget"
    return curve, losses


def learn_alone_curve(base: Any, tokenizer: Any, task: Task, cfg: Config, *, seed: int, max_steps: int,
                      eval_every: int, patience: int = 4, min_delta: float = 0.02, loss_delta: float = 0.02,
                      min_steps: int = 0) -> tuple[Any, list[float]]:
    """"What unlimited training reaches": a fresh adapter trained on ``task`` alone at ``cfg.lr`` with a constant
    schedule for up to ``max_steps`` steps, validation exact match and loss every
    ``eval_every`` steps, stopped by :func:`train_until_learned` (no gain in accuracy, nor -- below 1.0 -- in loss,
    for ``patience`` evaluations, after at least ``min_steps`` steps). Returns the accuracy
    :class:`icml25.train.Curve` and the validation losses at the same steps."""
    learner = ContinualLearner(base, tokenizer, cfg, "sequential", seed=seed)
    learner._new_adapter("default", 1_000 * seed)
    tr = TaskTrainer(learner.model, tokenizer, task.train, steps=max_steps, lr=cfg.lr, batch_size=cfg.batch_size,
                     seed=10_000 * seed + 7, grad_accum=cfg.grad_accum, schedule="constant", warmup=cfg.warmup)
    return train_until_learned(tr.step, lambda: learner.evaluate(task.val),
                               lambda: validation_loss(learner.model, tokenizer, task.val), max_steps=max_steps,
                               eval_every=eval_every, patience=patience, min_delta=min_delta, loss_delta=loss_delta,
                               min_steps=min_steps)
