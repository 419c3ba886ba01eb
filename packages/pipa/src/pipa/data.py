"""Preference data for PIPA, made locally with exact answer- and step-level labels.

The prior ``p⁰`` is the tiny Llama of :mod:`icml25.testbeds.lm` trained by SFT on **noisy** scratchpad additions
(every column step is wrong with probability ``step_error``; the final answer is the one the written steps imply,
so the text stays self-consistent) and stopped early, so that its samples mix right and wrong answers. From it we
sample ``K`` completions per prompt at temperature 1 and label them:

- answer level: ``label = 1`` iff the final answer (the segment after the last ``|``) is the true sum;
- step level: the completion is split at ``|`` into steps; step k is right iff it equals the true column step k
  (true carries), the last step iff it is the true final answer.

Dataset rows follow trl's formats plus a step-level one:

- paired: ``{"prompt", "chosen", "rejected"}``  (one right and one wrong completion of the same prompt)
- unpaired: ``{"prompt", "completion", "label"}``  (``label`` a bool, as trl's KTO wants)
- step: ``{"prompt", "steps": [str, ...], "step_labels": [0/1, ...]}`` with ``"".join(steps) == completion``
- step-paired (Step-DPO): ``{"prompt": x + correct prefix, "chosen": right step k, "rejected": wrong step k}``
- step-unpaired (Step-KTO): ``{"prompt": x + prefix, "completion": step k, "label"}`` for each step up to the first
  wrong one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipa.losses import PIPAError

__all__ = [
    "noisy_scratchpad_examples",
    "noisy_samples",
    "split_steps",
    "step_labels",
    "answer_correct",
    "Sample",
    "sample_completions",
    "label_samples",
    "paired_rows",
    "unpaired_rows",
    "step_rows",
    "step_paired_rows",
    "step_unpaired_rows",
    "noisy_prior",
    "heldout_part",
    "heldout_prompts",
]


def _lm():
    from icml25.testbeds import lm

    return lm


def noisy_scratchpad_examples(n: int, *, seed: int, step_error: float = 0.15, digits: int = 2,
                              split: str = "train") -> list[Any]:
    """``n`` scratchpad additions whose column steps are each wrong with probability ``step_error``.

    A wrong step writes a different (random) sum digit for its column; the carry chain and the final answer then
    follow the written digits, so the scratchpad is internally consistent but its answer is wrong.
    """
    if not 0.0 <= step_error < 1.0:
        raise PIPAError(f"step_error must be in [0, 1), got {step_error}")
    lm = _lm()
    clean = lm.make_examples("add_scratchpad", n, seed=seed, digits=digits, split=split)
    rng = np.random.default_rng(seed + 7919)
    out = []
    for ex in clean:
        a_s, b_s = _operands(ex.prompt)
        da, db = a_s[::-1], b_s[::-1]
        carry, steps, written = 0, [], []
        for k in range(digits):
            total = int(da[k]) + int(db[k]) + carry
            digit = total % 10
            if rng.random() < step_error:
                digit = int((digit + rng.integers(1, 10)) % 10)
            carry_out = total // 10
            steps.append(f"{da[k]}+{db[k]}+{carry}={digit}c{carry_out}")
            written.append(str(digit))
            carry = carry_out
        final = "".join(written) + str(carry)  # LSB first, consistent with the written steps
        out.append(lm.Example(ex.prompt, "|".join(steps) + "|" + final, tuple(steps)))
    return out


def noisy_samples(prompts: Sequence[str], *, k: int, seed: int, step_error: float = 0.5) -> list[list[Sample]]:
    """``k`` completions per prompt drawn from the noisy-scratchpad generator itself (not from a model), labelled.

    Used by ``reproduce --smoke``, where the prior is too short-trained to produce right answers, so that every
    dataset (paired, step-paired, ...) is non-empty.
    """
    out = []
    for i, p in enumerate(prompts):
        _truth(p)  # validates the prompt
        row = []
        for j in range(k):
            rng_seed = seed * 7_919 + i * 101 + j
            target = _retarget(p, rng_seed, step_error)
            row.append(Sample(p, target, int(answer_correct(p, target)), tuple(step_labels(p, target))))
        out.append(row)
    return out


def _retarget(prompt: str, seed: int, step_error: float) -> str:
    a_s, b_s = _operands(prompt)
    da, db = a_s[::-1], b_s[::-1]
    rng = np.random.default_rng(seed)
    carry, steps, written = 0, [], []
    for k in range(len(da)):
        total = int(da[k]) + int(db[k]) + carry
        digit = total % 10
        if rng.random() < step_error:
            digit = int((digit + rng.integers(1, 10)) % 10)
        steps.append(f"{da[k]}+{db[k]}+{carry}={digit}c{total // 10}")
        written.append(str(digit))
        carry = total // 10
    return "|".join(steps) + "|" + "".join(written) + str(carry)


HELDOUT_PARTS = ("validation", "test")


def heldout_part(prompt: str) -> str:
    """Which half of the test bed's held-out split a prompt belongs to: ``"validation"`` or ``"test"``.

    The test bed holds out the prompts with ``crc32(prompt) % 10 == 0`` (operands never trained on); we cut that set
    in two by ``crc32 % 20``: 0 is the test part, 10 the validation part. Disjoint by construction.
    """
    import zlib

    r = zlib.crc32(prompt.encode("utf-8")) % 20
    if r not in (0, 10):
        raise PIPAError(f"prompt {prompt!r} is not in the test bed's held-out split")
    return "test" if r == 0 else "validation"


def heldout_prompts(n: int, *, part: str, seed: int) -> list[str]:
    """``n`` held-out scratchpad prompts (drawn with replacement) from the ``part`` half of the held-out split:
    ``"validation"`` for choosing hyper-parameters, ``"test"`` for the reported numbers."""
    if part not in HELDOUT_PARTS:
        raise PIPAError(f"part must be one of {HELDOUT_PARTS}, got {part!r}")
    lm = _lm()
    out: list[str] = []
    batch = 0
    while len(out) < n:
        exs = lm.make_examples("add_scratchpad", 4 * n + 16, seed=seed + 1_000_003 * batch, split="test")
        out += [e.prompt for e in exs if heldout_part(e.prompt) == part]
        batch += 1
    return out[:n]


def split_steps(completion: str) -> list[str]:
    """Split a scratchpad completion into steps; every step but the last keeps its trailing ``|``."""
    if completion == "":
        raise PIPAError("completion must not be empty")
    parts = completion.split("|")
    return [p + "|" for p in parts[:-1]] + [parts[-1]]


def _operands(prompt: str) -> tuple[str, str]:
    """The two operands of a scratchpad prompt ``"37+48=|"`` (the test bed's format) or ``"37+48="``."""
    head = prompt[:-2] if prompt.endswith("=|") else prompt[:-1] if prompt.endswith("=") else None
    if head is None or head.count("+") != 1:
        raise PIPAError(f"prompt must be a scratchpad addition like '37+48=|', got {prompt!r}")
    a_s, b_s = head.split("+")
    if not (a_s.isdigit() and b_s.isdigit() and len(a_s) == len(b_s)):
        raise PIPAError(f"prompt must be a scratchpad addition like '37+48=|', got {prompt!r}")
    return a_s, b_s


def _truth(prompt: str) -> tuple[tuple[str, ...], str]:
    lm = _lm()
    a_s, b_s = _operands(prompt)
    return lm.scratchpad_steps(int(a_s), int(b_s), len(a_s))


def step_labels(prompt: str, completion: str) -> list[int]:
    """One 0/1 label per step of :func:`split_steps` (true column steps, then the true final answer)."""
    steps, final = _truth(prompt)
    truth = list(steps) + [final]
    segs = completion.split("|")
    return [int(k < len(truth) and seg == truth[k] and (k < len(truth) - 1 or k == len(segs) - 1))
            for k, seg in enumerate(segs)]


def answer_correct(prompt: str, completion: str) -> bool:
    """The final answer (after the last ``|``) is the true sum."""
    _, final = _truth(prompt)
    return completion.split("|")[-1] == final


@dataclass(frozen=True)
class Sample:
    prompt: str
    completion: str
    label: int
    step_labels: tuple[int, ...]


def sample_completions(model: Any, tokenizer: Any, prompts: Sequence[str], *, k: int, seed: int,
                       temperature: float = 1.0, max_new_tokens: int = 24, batch_size: int = 256) -> list[list[str]]:
    """``k`` sampled completions for each prompt (``<s>`` prepended, cut at ``</s>``)."""
    import torch

    if k < 1:
        raise PIPAError(f"k must be >= 1, got {k}")
    if not temperature > 0:
        raise PIPAError(f"temperature must be > 0, got {temperature}")
    lm = _lm()
    out: list[list[str]] = [[] for _ in prompts]
    model.eval()
    flat = [(i, p) for i, p in enumerate(prompts) for _ in range(k)]
    for start in range(0, len(flat), batch_size):
        chunk = flat[start:start + batch_size]
        rows = [[tokenizer.bos_token_id, *lm._ids(tokenizer, p)] for _, p in chunk]
        longest = max(len(r) for r in rows)
        ids = torch.full((len(rows), longest), tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for j, r in enumerate(rows):  # left padding
            ids[j, longest - len(r):] = torch.tensor(r)
            mask[j, longest - len(r):] = 1
        # sampling uses torch's global RNG inside generate(): fork it so that callers' RNG state is untouched
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(seed * 1_000_003 + start)
            gen_ids = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens,
                                     do_sample=True, temperature=temperature, top_k=0, top_p=1.0, num_beams=1,
                                     pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
        new_tokens = gen_ids[:, longest:]
        toks = new_tokens.tolist()
        for (i, _), row in zip(chunk, toks):
            if tokenizer.eos_token_id in row:
                row = row[:row.index(tokenizer.eos_token_id)]
            out[i].append(tokenizer.decode([t for t in row if t != tokenizer.pad_token_id], skip_special_tokens=True))
    return out


def label_samples(prompts: Sequence[str], completions: Sequence[Sequence[str]]) -> list[list[Sample]]:
    """Answer and step labels for every sampled completion (empty completions are dropped)."""
    out = []
    for p, comps in zip(prompts, completions):
        row = []
        for c in comps:
            if not c:
                continue
            row.append(Sample(p, c, int(answer_correct(p, c)), tuple(step_labels(p, c))))
        out.append(row)
    return out


def unpaired_rows(samples: Sequence[Sequence[Sample]]) -> list[dict[str, Any]]:
    return [{"prompt": s.prompt, "completion": s.completion, "label": bool(s.label)} for row in samples for s in row]


def paired_rows(samples: Sequence[Sequence[Sample]], *, seed: int = 0) -> list[dict[str, Any]]:
    """One (right, wrong) pair per prompt that has both among its samples."""
    rng = np.random.default_rng(seed)
    out = []
    for row in samples:
        good = sorted({s.completion for s in row if s.label})
        bad = sorted({s.completion for s in row if not s.label})
        if good and bad:
            out.append({"prompt": row[0].prompt, "chosen": good[rng.integers(len(good))],
                         "rejected": bad[rng.integers(len(bad))]})
    return out


def step_rows(samples: Sequence[Sequence[Sample]]) -> list[dict[str, Any]]:
    return [{"prompt": s.prompt, "steps": split_steps(s.completion), "step_labels": list(s.step_labels)}
            for row in samples for s in row]


def step_paired_rows(samples: Sequence[Sequence[Sample]], *, seed: int = 0) -> list[dict[str, Any]]:
    """Step-DPO pairs from the samples themselves: two samples of a prompt that share a right prefix of k steps,
    one right and one wrong at step k. The prompt becomes x + prefix."""
    rng = np.random.default_rng(seed)
    out = []
    for row in samples:
        cands: dict[tuple[str, int], tuple[set[str], set[str]]] = {}
        for s in row:
            steps = split_steps(s.completion)
            for k, (st, lab) in enumerate(zip(steps, s.step_labels)):
                if st == "":  # an empty final step (completion ending in '|') is no step to prefer
                    break
                key = ("".join(steps[:k]), k)
                good, bad = cands.setdefault(key, (set(), set()))
                (good if lab else bad).add(st)
                if not lab:
                    break
        for (prefix, _), (good, bad) in sorted(cands.items()):
            if good and bad:
                g, b = sorted(good), sorted(bad)
                out.append({"prompt": row[0].prompt + prefix, "chosen": g[rng.integers(len(g))],
                            "rejected": b[rng.integers(len(b))]})
    return out


def step_unpaired_rows(samples: Sequence[Sequence[Sample]]) -> list[dict[str, Any]]:
    """Step-KTO items: (x + prefix, step k, label_k) for every step up to and including the first wrong one."""
    out = []
    for row in samples:
        for s in row:
            steps = split_steps(s.completion)
            for k, (st, lab) in enumerate(zip(steps, s.step_labels)):
                out.append({"prompt": s.prompt + "".join(steps[:k]), "completion": st, "label": bool(lab)})
                if not lab:
                    break
    return out


def noisy_prior(*, steps: int, seed: int, step_error: float = 0.15, digits: int = 2, n_examples: int = 20000,
                lr: float = 1e-3, batch_size: int = 128, cache_dir: str | Path | None = None,
                **model_kw: Any) -> tuple[Any, Any]:
    """The prior ``p⁰``: the tiny LM trained on noisy scratchpads, cached like the test bed's own models."""
    import json

    import torch
    from icml25.checkpoint import load_tensors, save_tensors
    from icml25.io import atomic_write_json
    from icml25.testbeds.cache import load_or_build

    lm = _lm()
    tok = lm.build_tokenizer()
    cfg = lm.lm_config(tok, **model_kw)
    material = {"kind": "pipa-noisy-prior", "v": 2, "testbed_format": lm.FORMAT_VERSION, "steps": steps, "seed": seed, "step_error": step_error,
                "digits": digits, "n": n_examples, "lr": lr, "bs": batch_size, "model": cfg}

    def build(folder: Path) -> None:
        model = lm.build_tiny_lm(tok, seed=seed, **model_kw)
        ex = noisy_scratchpad_examples(n_examples, seed=seed, step_error=step_error, digits=digits)
        losses = lm.train_lm(model, tok, ex, steps=steps, lr=lr, batch_size=batch_size, seed=seed)
        save_tensors(folder / "model.safetensors", model.state_dict())
        atomic_write_json(folder / "model_config.json", cfg)
        atomic_write_json(folder / "train.json", {"losses": losses})

    def load(folder: Path) -> Any:
        if json.loads((folder / "model_config.json").read_text()) != json.loads(json.dumps(cfg)):
            raise ValueError("config mismatch")
        with torch.random.fork_rng(devices=[]):
            model = lm._model_from_config(cfg)
        model.load_state_dict(load_tensors(folder / "model.safetensors"), strict=True)
        return model.eval()

    model, _ = load_or_build("pipa-prior", material, build=build, load=load, cache_dir=cache_dir)
    return model, tok
