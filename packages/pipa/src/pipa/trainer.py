"""``PIPAConfig`` and ``PIPATrainer``: PIPA-M / PIPA-N on top of ``transformers.Trainer``, in the style of trl.

Accepted dataset formats (a list of dicts or a ``datasets.Dataset``), detected from the columns:

- paired (trl's DPO format): ``prompt, chosen, rejected``. With ``pairing='independent'`` (default) each pair is two
  labelled rows, ``(x, chosen, c=1)`` and ``(x, rejected, c=0)``, under the unpaired PIPA loss (value head and prior
  constraint matter); ``pairing='one-positive'`` conditions on "exactly one of the two is right", which under PIPA-N
  is DPO's sigmoid loss at β = 1.
- unpaired (trl's KTO format): ``prompt, completion, label``
- step-level: ``prompt, steps (list of str), step_labels (list of 0/1)``

The policy is wrapped in :class:`pipa.model.ValueHeadModel` (unless it already is one); the frozen prior ``p⁰``
(``ref_model``) is required and must share the policy's vocabulary. LoRA through peft: pass ``peft_config`` and the
LM inside the wrapper is adapted (the value head stays fully trainable).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import Trainer, TrainingArguments

from pipa.losses import M_GUARDS, VARIANTS, PIPAError, pipa_loss, pipa_m_paired_loss, pipa_n_paired_loss
from pipa.model import ValueHeadModel, encode_batch, segment_logps, token_logps, value_logits_at

__all__ = ["PIPAConfig", "PIPATrainer", "detect_format", "normalise_rows"]

FORMATS = ("paired", "unpaired", "step")
PAIRINGS = ("independent", "one-positive")


@dataclass
class PIPAConfig(TrainingArguments):
    """``TrainingArguments`` plus the PIPA options."""

    variant: str = field(default="N", metadata={"help": "'M' (marginal prior) or 'N' (negative-conditional prior)."})
    pairing: str = field(default="independent", metadata={
        "help": "Paired rows: 'independent' (each pair gives the unpaired loss of (x, chosen, c=1) and "
                "(x, rejected, c=0)) or 'one-positive' (condition on exactly one positive; PIPA-N is then DPO "
                "at beta 1)."})
    max_length: int = field(default=64, metadata={"help": "Longest <s> prompt completion </s>; longer rows raise."})
    m_guard: str = field(default="barrier", metadata={
        "help": "PIPA-M where f·g > p⁰·(1−eps): 'barrier' (C¹ continuation + smooth quadratic barrier: a continuous, "
                "non-zero gradient back into the feasible set), 'clamp' (old: zero gradient) or 'raise'."})
    prior_rate: float | None = field(default=None, metadata={"help": "Initial g; default: the data's positive rate."})
    remove_unused_columns: bool = field(default=False, metadata={"help": "Must stay False (rows are text)."})
    report_to: Any = field(default="none", metadata={"help": "Logging integrations (default: none)."})
    save_strategy: str = field(default="no", metadata={"help": "Checkpoint strategy (default: no)."})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.variant not in VARIANTS:
            raise PIPAError(f"variant must be one of {VARIANTS}, got {self.variant!r}")
        if self.pairing not in PAIRINGS:
            raise PIPAError(f"pairing must be one of {PAIRINGS}, got {self.pairing!r}")
        if self.m_guard not in M_GUARDS:
            raise PIPAError(f"m_guard must be one of {M_GUARDS}, got {self.m_guard!r}")
        if self.max_length < 2:
            raise PIPAError(f"max_length must be >= 2, got {self.max_length}")
        if self.prior_rate is not None and not 0 < self.prior_rate < 1:
            raise PIPAError(f"prior_rate must be in (0, 1), got {self.prior_rate}")
        if self.remove_unused_columns:
            raise PIPAError("remove_unused_columns must be False for PIPATrainer")


def detect_format(columns: Sequence[str]) -> str:
    cols = set(columns)
    if {"prompt", "chosen", "rejected"} <= cols:
        return "paired"
    if {"prompt", "completion", "label"} <= cols:
        return "unpaired"
    if {"prompt", "steps", "step_labels"} <= cols:
        return "step"
    raise PIPAError(f"dataset columns {sorted(cols)} match no format: need prompt+chosen+rejected (paired), "
                    "prompt+completion+label (unpaired) or prompt+steps+step_labels (step)")


def normalise_rows(rows: Any) -> tuple[str, list[dict[str, Any]]]:
    """Validate rows and return ``(format, rows)`` with labels as ints."""
    rows = [dict(r) for r in rows]
    if not rows:
        raise PIPAError("the dataset is empty")
    fmt = detect_format(rows[0].keys())
    out = []
    for i, r in enumerate(rows):
        p = r["prompt"]
        if not isinstance(p, str):
            raise PIPAError(f"row {i}: prompt must be a string")
        if fmt == "paired":
            if not r["chosen"] or not r["rejected"]:
                raise PIPAError(f"row {i}: empty completion")
            if r["chosen"] == r["rejected"]:
                raise PIPAError(f"row {i}: chosen and rejected are identical")
            out.append({"prompt": p, "chosen": r["chosen"], "rejected": r["rejected"]})
        elif fmt == "unpaired":
            lab = r["label"]
            if lab not in (0, 1, True, False):
                raise PIPAError(f"row {i}: label must be 0/1 or a bool, got {lab!r}")
            if not r["completion"]:
                raise PIPAError(f"row {i}: empty completion")
            out.append({"prompt": p, "completion": r["completion"], "label": int(lab)})
        else:
            steps, labs = list(r["steps"]), list(r["step_labels"])
            if not steps or not "".join(steps):
                raise PIPAError(f"row {i}: empty completion")
            if len(steps) != len(labs):
                raise PIPAError(f"row {i}: {len(labs)} step labels for {len(steps)} steps")
            if any(v not in (0, 1, True, False) for v in labs):
                raise PIPAError(f"row {i}: step labels must be 0 or 1, got {labs}")
            out.append({"prompt": p, "steps": steps, "step_labels": [int(v) for v in labs]})
    return fmt, out


def _positive_rate(fmt: str, rows: list[dict[str, Any]]) -> float:
    if fmt == "paired":
        return 0.5
    if fmt == "unpaired":
        rate = sum(r["label"] for r in rows) / len(rows)
    else:
        labs = [v for r in rows for v in r["step_labels"]]
        rate = sum(labs) / len(labs)
    return min(max(rate, 0.02), 0.98)


def check_same_vocab(policy: Any, ref: Any, tokenizer: Any, ref_tokenizer: Any = None) -> None:
    pv, rv = policy.config.vocab_size, ref.config.vocab_size
    if pv != rv:
        raise PIPAError(f"policy vocab_size {pv} != prior (ref_model) vocab_size {rv}: the prior must share the tokenizer")
    if len(tokenizer) > pv:
        raise PIPAError(f"tokenizer has {len(tokenizer)} tokens but the model's vocab_size is {pv}")
    if ref_tokenizer is not None and ref_tokenizer.get_vocab() != tokenizer.get_vocab():
        raise PIPAError("the prior's tokenizer differs from the policy's (tokenizer mismatch)")


class PIPATrainer(Trainer):
    """Trains a policy with PIPA-M or PIPA-N against a frozen prior ``ref_model``.

    Args (keyword): model (causal LM or ``ValueHeadModel``), ref_model (frozen prior p⁰, required), args
    (:class:`PIPAConfig`), train_dataset, processing_class (the tokenizer), eval_dataset, peft_config,
    ref_tokenizer (optional, checked against processing_class), callbacks, optimizers.
    """

    def __init__(self, *, model: Any, ref_model: Any, args: PIPAConfig, train_dataset: Any, processing_class: Any,
                 eval_dataset: Any = None, peft_config: Any = None, ref_tokenizer: Any = None,
                 callbacks: Any = None, optimizers: Any = (None, None)) -> None:
        if not isinstance(args, PIPAConfig):
            raise PIPAError("args must be a PIPAConfig")
        if ref_model is None:
            raise PIPAError("ref_model (the frozen prior p⁰) is required; pass e.g. copy.deepcopy(model)")
        if processing_class is None:
            raise PIPAError("processing_class (the tokenizer) is required; it is never loaded from the hub")
        self.pipa_format, rows = normalise_rows(train_dataset)
        lm = model.lm if isinstance(model, ValueHeadModel) else model
        check_same_vocab(lm, ref_model, processing_class, ref_tokenizer)
        if not isinstance(model, ValueHeadModel):
            rate = args.prior_rate if args.prior_rate is not None else _positive_rate(self.pipa_format, rows)
            model = ValueHeadModel(model, prior_rate=rate)
        if peft_config is not None:
            from peft import get_peft_model

            model.lm = get_peft_model(model.lm, peft_config)
        self.ref_model = ref_model.eval()
        for p in self.ref_model.parameters():
            p.requires_grad_(False)
        self.pipa_tokenizer = processing_class
        self.pipa_max_length = args.max_length
        # encode every row once up front: bad rows fail here, not in the middle of training
        for i in range(0, len(rows), 256):
            self._collate(rows[i:i + 256])
        if eval_dataset is not None:  # the same format and checks as the training rows (one set, or a dict of sets)
            def _norm(ds: Any, name: str) -> list[dict[str, Any]]:
                fmt, ev = normalise_rows(ds)
                if fmt != self.pipa_format:
                    raise PIPAError(f"eval_dataset {name} is {fmt} data but train_dataset is {self.pipa_format}")
                for i in range(0, len(ev), 256):
                    self._collate(ev[i:i + 256])
                return ev

            eval_dataset = ({k: _norm(v, repr(k)) for k, v in eval_dataset.items()} if isinstance(eval_dataset, dict)
                            else _norm(eval_dataset, ""))
        super().__init__(model=model, args=args, train_dataset=rows, eval_dataset=eval_dataset,
                         data_collator=self._collate, processing_class=processing_class, callbacks=callbacks,
                         optimizers=optimizers)

    # ------------------------------------------------------------------ data
    def _collate(self, rows: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        tok, L = self.pipa_tokenizer, self.pipa_max_length
        if self.pipa_format == "paired":
            prompts = [r["prompt"] for r in rows] * 2
            steps = [[r["chosen"]] for r in rows] + [[r["rejected"]] for r in rows]
            enc = encode_batch(tok, prompts, steps, None, max_length=L)
        elif self.pipa_format == "unpaired":
            enc = encode_batch(tok, [r["prompt"] for r in rows], [[r["completion"]] for r in rows],
                               [[r["label"]] for r in rows], max_length=L)
        else:
            enc = encode_batch(tok, [r["prompt"] for r in rows], [r["steps"] for r in rows],
                               [r["step_labels"] for r in rows], max_length=L)
        return dict(enc)

    # ------------------------------------------------------------------ loss
    def pipa_terms(self, model: Any, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        """Per-step policy log-probs, prior log-probs and value logits, each ``(B, K)``."""
        ids, att = inputs["input_ids"], inputs["attention_mask"]
        K = inputs["step_mask"].shape[1]
        logits, values = model(ids, att)
        pol = segment_logps(token_logps(logits, ids), inputs["segments"], K)
        if next(self.ref_model.parameters()).device != ids.device:
            self.ref_model.to(ids.device)
        with torch.no_grad():
            ref_logits = self.ref_model(input_ids=ids, attention_mask=att, use_cache=False).logits
            ref = segment_logps(token_logps(ref_logits, ids), inputs["segments"], K)
        v = value_logits_at(values, inputs["value_pos"]).float()
        return pol, ref, v

    def compute_loss(self, model: Any, inputs: dict[str, torch.Tensor], return_outputs: bool = False,
                     num_items_in_batch: Any = None) -> Any:
        pol, ref, v = self.pipa_terms(model, inputs)
        variant = self.args.variant
        # PIPA-M: the barrier is an optimisation device for the constraint f·g ≤ p⁰; an evaluation (model.eval())
        # reports the label NLL itself, −log p(c|x,y) with p(c=1|x,y) = min(f g/p⁰, e^{−eps}) (guard 'clamp')
        guard = self.args.m_guard if model.training else "clamp"
        if self.pipa_format == "paired" and self.args.pairing == "independent":
            # (x, y_w, c=1) and (x, y_l, c=0) as two unpaired rows: the value head and the prior constraint matter
            B = pol.shape[0] // 2
            labels = torch.cat([torch.ones(B), torch.zeros(B)]).to(pol)
            kw = {"guard": guard} if variant == "M" else {}
            loss = pipa_loss(variant, pol[:, 0], ref[:, 0], v[:, 0], labels, **kw)
        elif self.pipa_format == "paired":
            B = pol.shape[0] // 2
            cw, rw = pol[:B, 0], pol[B:, 0]
            cr, rr = ref[:B, 0], ref[B:, 0]
            if variant == "N":
                loss = pipa_n_paired_loss(cw, cr, rw, rr, v[:B, 0])
            else:
                loss = pipa_m_paired_loss(cw, cr, rw, rr, v[:B, 0], guard=guard)
        elif self.pipa_format == "unpaired":
            kw = {"guard": guard} if variant == "M" else {}
            loss = pipa_loss(variant, pol[:, 0], ref[:, 0], v[:, 0], inputs["labels"][:, 0], **kw)
        else:
            kw = {"guard": guard} if variant == "M" else {}
            loss = pipa_loss(variant, pol, ref, v, inputs["labels"], inputs["step_mask"], **kw)
        return (loss, {"policy_logps": pol, "value_logits": v}) if return_outputs else loss

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
        with torch.no_grad():
            loss = self.compute_loss(model, inputs)
        return loss.detach(), None, None

