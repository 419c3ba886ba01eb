"""Evaluation: held-out greedy accuracy, and the value head (and posterior) as a predictor of correctness."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from pipa.data import Sample, answer_correct, split_steps
from pipa.losses import posterior_logit
from pipa.model import ValueHeadModel, encode_batch, segment_logps, token_logps, value_logits_at

__all__ = ["greedy_accuracy", "value_auc", "implicit_reward_auc", "auc"]


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


def _level_steps(samples: Sequence[Sample], level: str) -> tuple[list[list[str]], list[list[int]]]:
    if level == "answer":
        return [[s.completion] for s in samples], [[s.label] for s in samples]
    if level == "step":
        return [split_steps(s.completion) for s in samples], [list(s.step_labels) for s in samples]
    raise ValueError(f"level must be 'answer' or 'step', got {level!r}")


@torch.no_grad()
def implicit_reward_auc(policy: Any, ref_model: Any, tokenizer: Any, samples: Sequence[Sample], *, level: str,
                        max_length: int = 64, batch_size: int = 256) -> float:
    """AUC of DPO's implicit reward ``β·(log π(y|x) − log p⁰(y|x))`` against the labels of ``samples`` (β > 0 does
    not change an AUC, so the log-ratio is scored). ``level='step'``: one score per step, ``log π(y^k | x, y^{<k})
    − log p⁰(y^k | x, y^{<k})`` (Step-DPO's implicit step reward)."""
    policy.eval()
    scores, labels = [], []
    for i in range(0, len(samples), batch_size):
        chunk = samples[i:i + batch_size]
        steps, labs = _level_steps(chunk, level)
        enc = encode_batch(tokenizer, [s.prompt for s in chunk], steps, labs, max_length=max_length)
        K = enc["step_mask"].shape[1]
        pol = segment_logps(token_logps(policy(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits,
                                        enc["input_ids"]), enc["segments"], K)
        ref = segment_logps(token_logps(ref_model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits,
                                        enc["input_ids"]), enc["segments"], K)
        m = enc["step_mask"]
        scores += (pol - ref)[m].tolist()
        labels += enc["labels"][m].long().tolist()
    return auc(labels, scores)


# ---------------------------------------------------------------------------------------------------- any local LM
ROW_FORMATS = ("paired", "unpaired", "step", "answer")


def load_causal_lm(path: Any) -> tuple[Any, Any, ValueHeadModel | None]:
    """``(lm, tokenizer or None, ValueHeadModel or None)`` from a local folder: a PIPA checkpoint (``lm/`` +
    ``value_head.safetensors``, as ``pipa train`` writes) or any ``transformers`` causal LM saved with
    ``save_pretrained`` (its tokenizer beside it). Never touches the hub."""
    from pathlib import Path

    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(path)
    if (path / "lm").is_dir():
        vh = ValueHeadModel.load(path)
        tok_dir = path / "lm"
        lm_, model = vh.lm, vh
    else:
        from icml25.errors import UserInputError

        try:
            lm_ = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise UserInputError(f"--model {str(path)!r} is neither a PIPA checkpoint (lm/ + value_head.safetensors) "
                                 f"nor a loadable transformers causal LM folder: {str(exc).splitlines()[0]}") from None
        tok_dir, model = path, None
    try:
        tok = AutoTokenizer.from_pretrained(tok_dir, local_files_only=True)
    except (OSError, ValueError):
        tok = None
    return lm_.eval(), tok, model


def final_answer(text: str) -> str:
    """The answer a completion ends with: its last piece after splitting on whitespace and ``|`` (the test bed's
    ``…|640`` gives ``640``; ``… #### 42`` gives ``42``)."""
    import re

    parts = [p for p in re.split(r"[\s|]+", text.strip()) if p]
    return parts[-1] if parts else ""


@torch.no_grad()
def greedy_generate(model: Any, tokenizer: Any, prompts: Sequence[str], *, max_new_tokens: int = 24,
                    batch_size: int = 64) -> list[str]:
    """Greedy completions of any HF causal LM: ``[BOS] prompt`` (BOS only where the tokenizer has one), left-padded,
    cut at EOS (where there is one)."""
    from pipa.model import special_ids

    bos, eos, pad = special_ids(tokenizer)
    model.eval()
    out: list[str] = []
    for i in range(0, len(prompts), batch_size):
        rows = [([bos] if bos is not None else []) + list(tokenizer(p, add_special_tokens=False)["input_ids"])
                for p in prompts[i:i + batch_size]]
        if any(not r for r in rows):
            raise ValueError("a prompt is empty and the tokenizer has no BOS token: nothing to condition on")
        T = max(len(r) for r in rows)
        ids = torch.full((len(rows), T), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for j, r in enumerate(rows):  # left padding
            ids[j, T - len(r):] = torch.tensor(r)
            mask[j, T - len(r):] = 1
        gen = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens, do_sample=False,
                             num_beams=1, pad_token_id=pad, eos_token_id=eos)
        for row in gen[:, T:].tolist():
            if eos is not None and eos in row:
                row = row[:row.index(eos)]
            out.append(tokenizer.decode(row, skip_special_tokens=True))
    return out


@torch.no_grad()
def _scores(lm_: Any, value_model: ValueHeadModel | None, ref: Any, tok: Any, prompts: list[str],
            steps: list[list[str]], labels: list[list[int]] | None, *, max_length: int, batch_size: int,
            variant: str) -> dict[str, torch.Tensor]:
    """Per-step ``log π``, ``log p⁰`` (zeros without a prior), value logits and the posterior, flattened over the
    real steps, and their labels."""
    out: dict[str, list] = {"logp": [], "ref": [], "v": [], "post": [], "labels": []}
    for i in range(0, len(prompts), batch_size):
        sl = slice(i, i + batch_size)
        enc = encode_batch(tok, prompts[sl], steps[sl], None if labels is None else labels[sl], max_length=max_length)
        K = enc["step_mask"].shape[1]
        ids, att, m = enc["input_ids"], enc["attention_mask"], enc["step_mask"]
        if value_model is not None:
            logits, values = value_model(ids, att)
            v = value_logits_at(values, enc["value_pos"]).float()
        else:
            logits, v = lm_(input_ids=ids, attention_mask=att).logits, None
        pol = segment_logps(token_logps(logits, ids), enc["segments"], K)
        r = (segment_logps(token_logps(ref(input_ids=ids, attention_mask=att).logits, ids), enc["segments"], K)
             if ref is not None else torch.zeros_like(pol))
        out["logp"].append(pol[m])
        out["ref"].append(r[m])
        out["labels"].append(enc["labels"][m])
        if v is not None and ref is not None:
            post = posterior_logit(torch.where(m, pol, -torch.ones_like(pol)), torch.where(m, r, torch.zeros_like(r)),
                                   v, variant=variant)
            out["v"].append(v[m])
            out["post"].append(post[m])
    return {k: torch.cat(v) for k, v in out.items() if v}


def evaluate_rows(lm_: Any, tokenizer: Any, rows: list[dict[str, Any]], *, ref: Any = None,
                  value_model: ValueHeadModel | None = None, variant: str = "N", max_length: int = 256,
                  max_new_tokens: int = 24, batch_size: int = 32) -> dict[str, Any]:
    """Score a causal LM on rows of one format (see ``pipa evaluate --help`` and the README):

    - ``answer`` (``prompt, answer``): greedy accuracy, ``final_answer(completion) == answer``;
    - ``paired`` (``prompt, chosen, rejected``, trl's format): preference accuracy and mean margin of the implicit
      reward ``r = log π − log p⁰`` (``log π`` alone without a prior), and its AUC (chosen 1, rejected 0);
    - ``unpaired`` (``prompt, completion, label``) / ``step`` (``prompt, steps, step_labels``): AUC of ``r`` per
      completion / per step against the labels;
    - with a PIPA checkpoint and a prior also the AUCs of the value head ``g`` and of the posterior ``p(c=1|x,y)``.
    """
    from pipa.trainer import normalise_rows

    if rows and set(rows[0]) >= {"prompt", "answer"} and not ({"chosen", "completion", "steps"} & set(rows[0])):
        prompts = [r["prompt"] for r in rows]
        preds = greedy_generate(lm_, tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=batch_size)
        correct = [final_answer(c) == str(r["answer"]).strip() for c, r in zip(preds, rows)]
        res: dict[str, Any] = {"format": "answer", "n_rows": len(rows), "accuracy": float(np.mean(correct))}
        if ref is not None:
            rp = greedy_generate(ref, tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=batch_size)
            res["prior_accuracy"] = float(np.mean([final_answer(c) == str(r["answer"]).strip()
                                                   for c, r in zip(rp, rows)]))
        return res
    fmt, rows = normalise_rows(rows)
    kw = dict(max_length=max_length, batch_size=batch_size, variant=variant)
    res = {"format": fmt, "n_rows": len(rows), "reference": "prior" if ref is not None else "none (log π only)"}
    if fmt == "paired":
        prompts = [r["prompt"] for r in rows]
        c = _scores(lm_, value_model, ref, tokenizer, prompts, [[r["chosen"]] for r in rows], None, **kw)
        j = _scores(lm_, value_model, ref, tokenizer, prompts, [[r["rejected"]] for r in rows], None, **kw)
        rc, rj = c["logp"] - c["ref"], j["logp"] - j["ref"]
        res.update(preference_accuracy=float((rc > rj).float().mean()), reward_margin=float((rc - rj).mean()),
                   reward_auc=auc([1] * len(rc) + [0] * len(rj), torch.cat([rc, rj]).tolist()))
        if "post" in c:
            res.update(posterior_preference_accuracy=float((c["post"] > j["post"]).float().mean()),
                       posterior_auc=auc([1] * len(rc) + [0] * len(rj), torch.cat([c["post"], j["post"]]).tolist()))
        return res
    if fmt == "unpaired":
        steps, labs = [[r["completion"]] for r in rows], [[r["label"]] for r in rows]
    else:
        steps, labs = [r["steps"] for r in rows], [r["step_labels"] for r in rows]
    s = _scores(lm_, value_model, ref, tokenizer, [r["prompt"] for r in rows], steps, labs, **kw)
    y = s["labels"].long().tolist()
    res.update(positive_rate=float(np.mean(y)), reward_auc=auc(y, (s["logp"] - s["ref"]).tolist()))
    if "post" in s:
        res.update(g_auc=auc(y, s["v"].tolist()), posterior_auc=auc(y, s["post"].tolist()))
    return res
