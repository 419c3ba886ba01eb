"""Evaluation: held-out greedy accuracy, and the value head (and posterior) as a predictor of correctness."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from pipa.data import Sample, answer_correct, split_steps
from pipa.losses import posterior_logit
from pipa.model import ValueHeadModel, encode_batch, segment_logps, token_logps, value_logits_at

__all__ = ["greedy_accuracy", "value_auc", "auc"]


def greedy_accuracy(model: Any, tokenizer: Any, prompts: Sequence[str], *, max_new_tokens: int = 24) -> float:
    """Fraction of prompts whose greedy completion ends in the true sum."""
    from icml25.testbeds import lm

    net = model.lm if isinstance(model, ValueHeadModel) else model
    preds = lm.generate(net, tokenizer, list(prompts), max_new_tokens=max_new_tokens)
    return float(np.mean([answer_correct(p, c) for p, c in zip(prompts, preds)]))


def auc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """ROC-AUC (0.5 when only one class is present)."""
    from sklearn.metrics import roc_auc_score

    y = np.asarray(labels)
    if y.min() == y.max():
        return 0.5
    return float(roc_auc_score(y, np.asarray(scores)))


@torch.no_grad()
def value_auc(model: ValueHeadModel, ref_model: Any, tokenizer: Any, samples: Sequence[Sample], *, level: str,
              variant: str, max_length: int = 64, batch_size: int = 256) -> dict[str, float]:
    """AUC of the value head ``g`` and of the posterior ``p(c=1|x,y)`` against the true labels of ``samples``.

    ``level='answer'``: one score per completion (g read at the last prompt token). ``level='step'``: one score per
    step (g read at the end of the prefix: the token-level credit assignment of the paper).
    """
    model.eval()
    g_scores, post_scores, labels = [], [], []
    for i in range(0, len(samples), batch_size):
        chunk = samples[i:i + batch_size]
        if level == "answer":
            steps = [[s.completion] for s in chunk]
            labs = [[s.label] for s in chunk]
        else:
            steps = [split_steps(s.completion) for s in chunk]
            labs = [list(s.step_labels) for s in chunk]
        enc = encode_batch(tokenizer, [s.prompt for s in chunk], steps, labs, max_length=max_length)
        K = enc["step_mask"].shape[1]
        logits, values = model(enc["input_ids"], enc["attention_mask"])
        pol = segment_logps(token_logps(logits, enc["input_ids"]), enc["segments"], K)
        ref_logits = ref_model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
        ref = segment_logps(token_logps(ref_logits, enc["input_ids"]), enc["segments"], K)
        v = value_logits_at(values, enc["value_pos"]).float()
        m = enc["step_mask"]
        post = posterior_logit(torch.where(m, pol, -torch.ones_like(pol)), torch.where(m, ref, torch.zeros_like(ref)),
                               v, variant=variant)
        g_scores += v[m].tolist()
        post_scores += post[m].tolist()
        labels += enc["labels"][m].long().tolist()
    return {"g_auc": auc(labels, g_scores), "posterior_auc": auc(labels, post_scores),
            "positive_rate": float(np.mean(labels))}
