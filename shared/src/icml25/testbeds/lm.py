"""Tiny causal LM test bed: a character tokenizer, a ~0.4 M-parameter Llama and exact-answer synthetic tasks.

Everything is built from code (no hub access) and trains on 2 CPU cores in about a minute. See
``../shared/papers/_tiny-lm.md`` for the measurements behind the defaults.

Tokenizer
    ``build_tokenizer()``: a ``tokenizers`` ``WordLevel`` model over a fixed character set (:data:`CHARS`), a
    ``Split`` pre-tokenizer that isolates every character and a ``Fuse`` decoder, wrapped in
    ``transformers.PreTrainedTokenizerFast`` with ``<pad>=0, <s>=1, </s>=2, <unk>=3``. No special tokens are added
    automatically: the helpers here prepend ``<s>`` and append ``</s>`` themselves. ``decode(encode(s)) == s`` for
    every string over :data:`CHARS`; text with any other character raises :class:`OutOfVocabularyError`.

Model
    ``build_tiny_lm(tokenizer)``: ``LlamaForCausalLM`` (every projection an ``nn.Linear``), hidden 96, 3 layers,
    4 heads, intermediate 4x hidden, 64 positions, untied embeddings, ``attn_implementation="sdpa"`` set explicitly.

Tasks (:data:`TASKS`; every numeric answer is written **least-significant digit first**, zero-padded to a fixed
width, because that order lets a left-to-right model compute each digit from the digits already written; written
most-significant first the same model stalls, see the note)

=================  ==========================  ==================================================
task               prompt                      answer
=================  ==========================  ==================================================
add                ``07+45=``                  ``250``   (52, LSB first, width digits+1)
sub                ``45-07=``                  ``83``    (38, LSB first, width digits; a >= b)
mul                ``47*8=``                   ``673``   (376, LSB first, width digits+1; b one digit)
add_scratchpad     ``37+48=|``                 ``7+8+0=5c1|3+4+1=8c0|580``
reverse            ``reverse abcde=``          ``edcba``
sort               ``sort 52813=``             ``12358``
count              ``count a in abcaa=``       ``3``     (LSB first if more than one digit)
=================  ==========================  ==================================================

The scratchpad writes one step per digit column, from the least significant: ``a_k+b_k+c_k=s_k c c_{k+1}``
(digit of the column sum, then the carry out), then ``|`` and the final answer (LSB first). The prompt ends in
``=|`` so that it differs from the ``add`` prompt (in a task mix the model must know which format to produce).
``Example.steps`` holds the steps; :func:`check_scratchpad` labels each generated step right or wrong.

Every task can be split into disjoint train/test halves by operands (``split="train"|"test"``): a prompt is in the
test split iff ``crc32(prompt) % 10 == 0`` (about 10%), so held-out evaluation uses operands never trained on.
"""

from __future__ import annotations

import copy
import math
import os
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

__all__ = [
    "CHARS",
    "SPECIAL_TOKENS",
    "TASKS",
    "Example",
    "OutOfVocabularyError",
    "build_tokenizer",
    "build_tiny_lm",
    "make_examples",
    "make_mix",
    "parse_number",
    "format_number",
    "scratchpad_steps",
    "check_scratchpad",
    "encode_examples",
    "generate",
    "exact_match",
    "train_lm",
    "pretrained_tiny_lm",
    "lm_config",
    "clone_model",
    "BOS",
    "EOS",
]

FORMAT_VERSION = 2
SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", "<unk>")
PAD, BOS, EOS, UNK = SPECIAL_TOKENS
CHARS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ +-*/=|;:,.?!'()_\n"
TASKS = ("add", "sub", "mul", "add_scratchpad", "reverse", "sort", "count")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_COUNT_ALPHABET = "abcd"


class OutOfVocabularyError(ValueError):
    """Text contains a character the character tokenizer does not know."""


# --------------------------------------------------------------------------------------------------- tokenizer
def _char_vocab() -> dict[str, int]:
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
    for ch in CHARS:
        vocab[ch] = len(vocab)
    return vocab


def _check_text(text: str, allowed: frozenset[str], specials: Sequence[str]) -> None:
    stripped = text
    for sp in specials:
        if sp in stripped:
            stripped = stripped.replace(sp, "")
    bad = sorted(set(stripped) - allowed)
    if bad:
        raise OutOfVocabularyError(
            f"text {text[:40]!r}{'…' if len(text) > 40 else ''} contains characters outside the tiny-LM vocabulary: "
            f"{bad}; allowed are icml25.testbeds.lm.CHARS = {CHARS!r} and the special tokens {list(SPECIAL_TOKENS)}"
        )


def _iter_texts(obj: Any) -> Iterable[str]:
    if obj is None:
        return
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _iter_texts(item)


_TOKENIZER_CLASS: Any = None


def _tokenizer_class() -> Any:
    """A ``PreTrainedTokenizerFast`` subclass whose every encode path rejects out-of-vocabulary characters."""
    global _TOKENIZER_CLASS
    if _TOKENIZER_CLASS is not None:
        return _TOKENIZER_CLASS
    from transformers import PreTrainedTokenizerFast

    allowed = frozenset(CHARS)

    class CharTokenizerFast(PreTrainedTokenizerFast):
        """Character tokenizer of the tiny-LM test bed; raises :class:`OutOfVocabularyError` on unknown chars."""

        def _encode_plus(self, text, text_pair=None, *args, **kwargs):  # type: ignore[override]
            specials = tuple(self.all_special_tokens)
            for t in _iter_texts(text):
                _check_text(t, allowed, specials)
            for t in _iter_texts(text_pair):
                _check_text(t, allowed, specials)
            return super()._encode_plus(text, text_pair, *args, **kwargs)

    CharTokenizerFast.__module__ = __name__
    _TOKENIZER_CLASS = CharTokenizerFast
    return CharTokenizerFast


def build_tokenizer() -> PreTrainedTokenizerFast:
    """The character tokenizer: WordLevel over :data:`CHARS`, isolating Split, Fuse decoder; exact round trip.

    ``tok(text, add_special_tokens=False)`` adds nothing (no post-processor); callers prepend ``tok.bos_token_id``
    and append ``tok.eos_token_id`` where they want them. Padding side defaults to left (for generation).
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    backend = Tokenizer(models.WordLevel(vocab=_char_vocab(), unk_token=UNK))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    backend.decoder = decoders.Fuse()
    cls = _tokenizer_class()
    tok = cls(
        tokenizer_object=backend,
        pad_token=PAD,
        bos_token=BOS,
        eos_token=EOS,
        unk_token=UNK,
        padding_side="left",
        clean_up_tokenization_spaces=False,
        model_max_length=64,
    )
    ids = [tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS]
    if ids != [0, 1, 2, 3] or len(tok) != len(SPECIAL_TOKENS) + len(
        CHARS
    ):  # pragma: no cover - library change
        raise RuntimeError(f"character tokenizer built wrongly: special ids {ids}, size {len(tok)}")
    return tok


# ------------------------------------------------------------------------------------------------------- model
def lm_config(
    tokenizer: PreTrainedTokenizerFast,
    *,
    hidden_size: int = 96,
    num_layers: int = 3,
    num_heads: int = 4,
    intermediate_size: int | None = None,
    max_position_embeddings: int = 64,
) -> dict[str, Any]:
    """The JSON-able ``LlamaConfig`` keyword arguments of the tiny LM (validated)."""
    for name, value in (
        ("hidden_size", hidden_size),
        ("num_layers", num_layers),
        ("num_heads", num_heads),
        ("max_position_embeddings", max_position_embeddings),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if hidden_size % num_heads:
        raise ValueError(f"num_heads={num_heads} must divide hidden_size={hidden_size}")
    if (hidden_size // num_heads) % 2:
        raise ValueError(
            f"head dimension hidden_size/num_heads={hidden_size // num_heads} must be even (RoPE)"
        )
    if intermediate_size is None:
        intermediate_size = 4 * hidden_size
    if isinstance(intermediate_size, bool) or not isinstance(intermediate_size, int) or intermediate_size < 1:
        raise ValueError(f"intermediate_size must be a positive int or None, got {intermediate_size!r}")
    return dict(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=False,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        rms_norm_eps=1e-6,
        attention_dropout=0.0,
    )


def _model_from_config(cfg: dict[str, Any]) -> LlamaForCausalLM:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**cfg)
    config._attn_implementation = "sdpa"
    model = LlamaForCausalLM(config)
    model.config._attn_implementation = "sdpa"
    gen = model.generation_config
    gen.pad_token_id, gen.bos_token_id, gen.eos_token_id = (
        cfg["pad_token_id"],
        cfg["bos_token_id"],
        cfg["eos_token_id"],
    )
    gen.do_sample = False
    return model


def _check_vocab(model: Any, tokenizer: Any) -> None:
    v = model.config.vocab_size
    if v != len(tokenizer) or model.get_input_embeddings().weight.shape[0] != len(tokenizer):
        raise ValueError(
            f"model vocabulary ({v} tokens) does not match the tokenizer ({len(tokenizer)} tokens); build the model "
            "with build_tiny_lm(tokenizer) from the same build_tokenizer()"
        )


def build_tiny_lm(
    tokenizer: PreTrainedTokenizerFast,
    *,
    hidden_size: int = 96,
    num_layers: int = 3,
    num_heads: int = 4,
    intermediate_size: int | None = None,
    max_position_embeddings: int = 64,
    seed: int = 0,
) -> LlamaForCausalLM:
    """A freshly initialised tiny ``LlamaForCausalLM`` (sdpa attention, fp32, CPU), seeded without touching the
    global RNG. Defaults give 0.45 M parameters."""
    import torch

    if not hasattr(tokenizer, "pad_token_id") or tokenizer.pad_token_id is None:
        raise ValueError("tokenizer must be the transformers tokenizer from build_tokenizer()")
    cfg = lm_config(
        tokenizer,
        hidden_size=hidden_size,
        num_layers=num_layers,
        num_heads=num_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=max_position_embeddings,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = _model_from_config(cfg)
    _check_vocab(model, tokenizer)
    return model


# ------------------------------------------------------------------------------------------------------- tasks
@dataclass(frozen=True)
class Example:
    """One task instance. ``prompt + answer`` is the full text; ``steps`` are the scratchpad steps (if any)."""

    prompt: str
    answer: str
    steps: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return self.prompt + self.answer


def format_number(value: int, width: int) -> str:
    """``value`` written least-significant digit first, zero-padded to ``width`` digits: (52, 3) -> ``"250"``."""
    if value < 0:
        raise ValueError(f"value must be >= 0, got {value}")
    s = str(value)
    if len(s) > width:
        raise ValueError(f"{value} does not fit in {width} digits")
    return s.zfill(width)[::-1]


def parse_number(answer: str) -> int | None:
    """Inverse of :func:`format_number`: ``"250"`` -> 52; ``None`` if not all digits."""
    if not answer or not answer.isdigit():
        return None
    return int(answer[::-1])


def scratchpad_steps(a: int, b: int, digits: int) -> tuple[tuple[str, ...], str]:
    """The column-wise addition steps of ``a + b`` (LSB column first) and the final LSB-first answer."""
    sa, sb = str(a).zfill(digits)[::-1], str(b).zfill(digits)[::-1]
    carry, steps = 0, []
    for k in range(digits):
        total = int(sa[k]) + int(sb[k]) + carry
        steps.append(f"{sa[k]}+{sb[k]}+{carry}={total % 10}c{total // 10}")
        carry = total // 10
    return tuple(steps), format_number(a + b, digits + 1)


def _in_test_split(prompt: str) -> bool:
    return zlib.crc32(prompt.encode("utf-8")) % 10 == 0


def _draw(task: str, rng: np.random.Generator, digits: int, length: int) -> Example:
    hi = 10**digits
    if task == "add":
        a, b = (int(x) for x in rng.integers(0, hi, size=2))
        return Example(f"{a:0{digits}d}+{b:0{digits}d}=", format_number(a + b, digits + 1))
    if task == "sub":
        a, b = sorted((int(x) for x in rng.integers(0, hi, size=2)), reverse=True)
        return Example(f"{a:0{digits}d}-{b:0{digits}d}=", format_number(a - b, digits))
    if task == "mul":
        a, b = int(rng.integers(0, hi)), int(rng.integers(0, 10))
        return Example(f"{a:0{digits}d}*{b}=", format_number(a * b, digits + 1))
    if task == "add_scratchpad":
        a, b = (int(x) for x in rng.integers(0, hi, size=2))
        steps, final = scratchpad_steps(a, b, digits)
        return Example(f"{a:0{digits}d}+{b:0{digits}d}=|", "|".join(steps) + "|" + final, steps)
    if task == "reverse":
        s = "".join(rng.choice(list(_LETTERS), size=length))
        return Example(f"reverse {s}=", s[::-1])
    if task == "sort":
        s = "".join(str(int(d)) for d in rng.integers(0, 10, size=length))
        return Example(f"sort {s}=", "".join(sorted(s)))
    if task == "count":
        s = "".join(rng.choice(list(_COUNT_ALPHABET), size=length))
        c = str(rng.choice(list(_COUNT_ALPHABET)))
        n = s.count(c)
        return Example(f"count {c} in {s}=", format_number(n, len(str(length))))
    raise AssertionError(task)  # pragma: no cover


def make_examples(
    task: str,
    n: int,
    *,
    seed: int,
    digits: int = 2,
    length: int = 5,
    split: str = "all",
    max_length: int = 64,
) -> list[Example]:
    """``n`` random examples of ``task`` (see the module docstring for the formats).

    Args:
        task: one of :data:`TASKS`.
        n: number of examples (drawn with replacement).
        seed: numpy seed; the same seed gives the same list.
        digits: operand digits of the arithmetic tasks (1..9).
        length: string length of reverse/sort/count (1..20).
        split: ``"all"``, ``"train"`` or ``"test"``; the test split is the ~10% of prompts with
            ``crc32(prompt) % 10 == 0``, disjoint from the train split.
        max_length: the model's ``max_position_embeddings``; every ``<s> prompt answer </s>`` must fit.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    if split not in ("all", "train", "test"):
        raise ValueError(f"split must be 'all', 'train' or 'test', got {split!r}")
    if isinstance(digits, bool) or not isinstance(digits, int) or not 1 <= digits <= 9:
        raise ValueError(f"digits must be an int in 1..9, got {digits!r}")
    if isinstance(length, bool) or not isinstance(length, int) or not 1 <= length <= 20:
        raise ValueError(f"length must be an int in 1..20, got {length!r}")
    # longest possible example, computed from the format (operands all 9s / full length)
    worst = _draw(task, _WorstRng(), digits, length)
    need = len(worst.prompt) + len(worst.answer) + 2
    if need > max_length:
        raise ValueError(
            f"task {task!r} with digits={digits}, length={length} needs {need} positions (<s> prompt answer </s>) "
            f"but max_length={max_length}; use fewer digits/shorter strings or a model with more positions"
        )
    rng = np.random.default_rng(seed)
    out: list[Example] = []
    tries = 0
    while len(out) < n:
        ex = _draw(task, rng, digits, length)
        tries += 1
        if split == "all" or _in_test_split(ex.prompt) == (split == "test"):
            out.append(ex)
        elif tries > 200 * (n + 10):
            raise ValueError(
                f"task {task!r} with these sizes has too few distinct prompts for split={split!r}"
            )
    return out


class _WorstRng:
    """Stands in for a numpy Generator to draw the longest example of a task (all digits 9, full length)."""

    def integers(self, low: int, high: int | None = None, size: int | None = None) -> Any:
        top = (high if high is not None else low) - 1
        return top if size is None else np.full(size, top)

    def choice(self, seq: Sequence[str], size: int | None = None) -> Any:
        return seq[0] if size is None else np.array([seq[0]] * size)


def make_mix(
    task_mix: str | Sequence[str] | Mapping[str, float], n: int, *, seed: int, **task_kw: Any
) -> list[Example]:
    """``n`` examples from several tasks in proportion to ``task_mix`` (a task, a list = equal weights, or a
    ``{task: weight}`` mapping), shuffled; ``task_kw`` goes to :func:`make_examples`."""
    mix = _normalise_mix(task_mix)
    counts = [int(math.floor(n * w)) for w in mix.values()]
    counts[0] += n - sum(counts)
    out: list[Example] = []
    for i, (task, k) in enumerate(zip(mix, counts)):
        out += make_examples(task, k, seed=seed * 1000 + i, **task_kw)
    order = np.random.default_rng(seed).permutation(len(out))
    return [out[i] for i in order]


def _normalise_mix(task_mix: str | Sequence[str] | Mapping[str, float]) -> dict[str, float]:
    if isinstance(task_mix, str):
        task_mix = {task_mix: 1.0}
    elif not isinstance(task_mix, Mapping):
        task_mix = {t: 1.0 for t in task_mix}
    if not task_mix:
        raise ValueError("task_mix must name at least one task")
    for t, w in task_mix.items():
        if t not in TASKS:
            raise ValueError(f"task_mix: task must be one of {TASKS}, got {t!r}")
        if not (isinstance(w, (int, float)) and w > 0 and math.isfinite(w)):
            raise ValueError(f"task_mix: weight of {t!r} must be a positive number, got {w!r}")
    total = float(sum(task_mix.values()))
    return {t: float(task_mix[t]) / total for t in sorted(task_mix)}


def check_scratchpad(prompt: str, completion: str) -> list[bool]:
    """Label each step of a generated addition scratchpad right or wrong.

    ``prompt`` is an ``add_scratchpad`` prompt (``"37+48=|"``; ``"37+48="`` is accepted too); ``completion`` the
    generated text after it. The
    completion is split at ``|``; segment k is right iff it equals the ground-truth step k (column k from the
    least-significant, correct carry in and out). Returns ``digits + 1`` booleans: one per column step and, last,
    whether the final answer is right (it must be the segment right after the last step, with nothing after it).
    Missing segments are wrong.
    """
    head, sep, tail = prompt.partition("=")
    a_s, plus, b_s = head.partition("+")
    if (
        sep != "="
        or tail not in ("", "|")
        or plus != "+"
        or not a_s.isdigit()
        or not b_s.isdigit()
        or len(a_s) != len(b_s)
    ):
        raise ValueError(f"prompt must be an add_scratchpad prompt like '37+48=|', got {prompt!r}")
    digits = len(a_s)
    steps, final = scratchpad_steps(int(a_s), int(b_s), digits)
    segments = completion.split("|")
    labels = [k < len(segments) and segments[k] == step for k, step in enumerate(steps)]
    labels.append(len(segments) == digits + 1 and segments[digits] == final)
    return labels


# ------------------------------------------------------------------------------------------ encoding / eval
def _ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def encode_examples(
    tokenizer: Any, examples: Sequence[Example], *, max_length: int | None = None
) -> dict[str, Any]:
    """Right-padded ``input_ids``, ``attention_mask`` and ``labels`` (B, T) for SFT: ``<s> prompt answer </s>``
    with labels ``-100`` on ``<s>``, the prompt and padding, so the loss is on the answer and ``</s>`` only."""
    import torch

    if not examples:
        raise ValueError("examples must not be empty")
    rows, labels = [], []
    for ex in examples:
        p, a = _ids(tokenizer, ex.prompt), _ids(tokenizer, ex.answer)
        ids = [tokenizer.bos_token_id, *p, *a, tokenizer.eos_token_id]
        rows.append(ids)
        labels.append([-100] * (1 + len(p)) + a + [tokenizer.eos_token_id])
    longest = max(len(r) for r in rows)
    if max_length is not None and longest > max_length:
        raise ValueError(
            f"an example needs {longest} positions but the model has max_position_embeddings={max_length}"
        )
    B = len(rows)
    input_ids = torch.full((B, longest), tokenizer.pad_token_id, dtype=torch.long)
    attn = torch.zeros((B, longest), dtype=torch.long)
    lab = torch.full((B, longest), -100, dtype=torch.long)
    for i, (r, lr) in enumerate(zip(rows, labels)):
        input_ids[i, : len(r)] = torch.tensor(r)
        attn[i, : len(r)] = 1
        lab[i, : len(lr)] = torch.tensor(lr)
    return {"input_ids": input_ids, "attention_mask": attn, "labels": lab}


def generate(
    model: Any, tokenizer: Any, prompts: Sequence[str], *, max_new_tokens: int, batch_size: int = 128
) -> list[str]:
    """Greedy completions of ``prompts`` (``<s>`` prepended, left-padded), cut at ``</s>``; special tokens removed."""
    import torch

    if isinstance(prompts, str):
        raise ValueError("prompts must be a list of strings, got a single string")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    _check_vocab(model, tokenizer)
    limit = model.config.max_position_embeddings
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    out: list[str] = []
    try:
        for start in range(0, len(prompts), batch_size):
            chunk = [
                [tokenizer.bos_token_id, *_ids(tokenizer, p)] for p in prompts[start : start + batch_size]
            ]
            longest = max(len(c) for c in chunk)
            if longest + max_new_tokens > limit:
                raise ValueError(
                    f"prompt length {longest} + max_new_tokens {max_new_tokens} exceeds the model's "
                    f"max_position_embeddings={limit}"
                )
            ids = torch.full((len(chunk), longest), tokenizer.pad_token_id, dtype=torch.long)
            mask = torch.zeros_like(ids)
            for i, c in enumerate(chunk):  # left padding
                ids[i, longest - len(c) :] = torch.tensor(c)
                mask[i, longest - len(c) :] = 1
            with torch.no_grad():
                gen = model.generate(
                    input_ids=ids.to(device),
                    attention_mask=mask.to(device),
                    max_new_tokens=max_new_tokens,
                    do_sample=False,
                    num_beams=1,
                    pad_token_id=tokenizer.pad_token_id,
                    eos_token_id=tokenizer.eos_token_id,
                )
            for row in gen[:, longest:].tolist():
                if tokenizer.eos_token_id in row:
                    row = row[: row.index(tokenizer.eos_token_id)]
                out.append(tokenizer.decode(row, skip_special_tokens=True))
    finally:
        model.train(was_training)
    return out


def exact_match(model: Any, tokenizer: Any, examples: Sequence[Example], *, batch_size: int = 128) -> float:
    """Fraction of ``examples`` whose greedy completion equals ``answer`` exactly (generation stops at ``</s>``)."""
    if not examples:
        raise ValueError("examples must not be empty")
    max_new = max(len(ex.answer) for ex in examples) + 1
    preds = generate(
        model, tokenizer, [ex.prompt for ex in examples], max_new_tokens=max_new, batch_size=batch_size
    )
    return float(np.mean([p == ex.answer for p, ex in zip(preds, examples)]))


# ---------------------------------------------------------------------------------------------------- training
def train_lm(
    model: Any,
    tokenizer: Any,
    examples: Sequence[Example],
    *,
    steps: int,
    lr: float = 1e-3,
    batch_size: int = 128,
    seed: int = 0,
    optimizer: Any = None,
    progress: bool = False,
) -> list[float]:
    """Plain SFT: ``steps`` AdamW steps (or steps of ``optimizer``) of next-token cross-entropy on the answer tokens
    and ``</s>`` only, on minibatches drawn (with replacement across epochs) from ``examples`` by a torch generator
    seeded with ``seed``. Returns the loss of every step. ``lr`` is ignored when ``optimizer`` is given."""
    import torch

    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be an int >= 0, got {steps!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    _check_vocab(model, tokenizer)
    data = encode_examples(tokenizer, examples, max_length=model.config.max_position_embeddings)
    lengths = data["attention_mask"].sum(1)
    device = next(model.parameters()).device
    if optimizer is None:
        params = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    from icml25.train import batch_stream, check_finite
    from icml25.train import progress as bar

    gen = torch.Generator().manual_seed(seed)
    losses: list[float] = []
    model.train()
    steps_bar = bar(batch_stream(len(examples), batch_size, generator=gen, steps=steps), desc="train_lm",
                    total=steps, disable=not progress)
    for _, idx in steps_bar:
        T = int(lengths[idx].max())
        batch = {k: v[idx, :T].to(device) for k, v in data.items()}
        loss = model(**batch).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        value = check_finite(loss, step=len(losses), what="train_lm: loss")
        losses.append(value)
        steps_bar.set_postfix(loss=f"{value:.3f}")
    steps_bar.close()
    model.eval()
    return losses


# ------------------------------------------------------------------------------------------ cached pretraining
def pretrained_tiny_lm(
    task_mix: str | Sequence[str] | Mapping[str, float],
    *,
    steps: int,
    seed: int,
    cache_dir: str | os.PathLike | None = None,
    n_examples: int = 20000,
    lr: float = 1e-3,
    batch_size: int = 128,
    digits: int = 2,
    length: int = 5,
    progress: bool = False,
    **model_kw: Any,
) -> tuple[LlamaForCausalLM, PreTrainedTokenizerFast]:
    """A tiny LM trained with :func:`train_lm` on the **train split** of ``task_mix`` and cached.

    The cache entry (``<cache>/tiny-lm/<hash>/model.safetensors`` + ``model_config.json`` + ``train.json``) is keyed
    by a hash of the task mix, steps, seed, data sizes, lr, batch size, the model config, the vocabulary and a
    format version; see :mod:`icml25.testbeds.cache` for locking and corruption handling. Evaluate held-out
    operands with ``make_examples(task, n, seed=..., split="test")``. Returns ``(model.eval(), tokenizer)``;
    ``model.icml25_cache`` holds the :class:`~icml25.testbeds.cache.CacheInfo` and ``model.icml25_train`` the
    training record (losses, seconds).
    """
    import json

    import torch

    from icml25.checkpoint import CheckpointError, load_weights_into, save_tensors
    from icml25.io import atomic_write_json
    from icml25.testbeds.cache import load_or_build

    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be an int >= 0, got {steps!r}")
    mix = _normalise_mix(task_mix)
    tokenizer = build_tokenizer()
    model_kw = dict(model_kw)
    init_seed = model_kw.pop("init_seed", seed)
    cfg = lm_config(tokenizer, **model_kw)
    material = {
        "format": FORMAT_VERSION,
        "task_mix": mix,
        "steps": steps,
        "seed": seed,
        "init_seed": init_seed,
        "n_examples": n_examples,
        "lr": lr,
        "batch_size": batch_size,
        "digits": digits,
        "length": length,
        "model": cfg,
        "vocab": list(SPECIAL_TOKENS) + list(CHARS),
    }

    def build(folder: Path) -> None:
        model = build_tiny_lm(tokenizer, seed=init_seed, **model_kw)
        examples = make_mix(
            mix,
            n_examples,
            seed=seed,
            digits=digits,
            length=length,
            split="train",
            max_length=cfg["max_position_embeddings"],
        )
        t0 = time.perf_counter()
        losses = train_lm(
            model,
            tokenizer,
            examples,
            steps=steps,
            lr=lr,
            batch_size=batch_size,
            seed=seed,
            progress=progress,
        )
        seconds = time.perf_counter() - t0
        save_tensors(folder / "model.safetensors", model.state_dict())
        atomic_write_json(folder / "model_config.json", cfg)
        atomic_write_json(folder / "train.json", {"losses": losses, "seconds": seconds, "material": material})

    def load(folder: Path) -> Any:
        saved = json.loads((folder / "model_config.json").read_text())
        if saved != json.loads(json.dumps(cfg)):
            raise CheckpointError("model_config.json does not match the requested config")
        with torch.random.fork_rng(devices=[]):
            model = _model_from_config(cfg)
        load_weights_into(model, folder / "model.safetensors")
        record = json.loads((folder / "train.json").read_text())
        model.icml25_train = {"losses": record["losses"], "seconds": record["seconds"]}
        return model.eval()

    model, info = load_or_build("tiny-lm", material, build=build, load=load, cache_dir=cache_dir)
    model.icml25_cache = info
    return model, tokenizer


def clone_model(model: Any) -> Any:
    """A deep copy (e.g. a frozen reference model for DPO: ``ref_model=clone_model(model)``)."""
    return copy.deepcopy(model)
