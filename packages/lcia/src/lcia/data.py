"""Instruction task streams: the synthetic six-task stream (exact answers, known grouping) and a JSONL loader.

Every prompt is ``"<instruction template>: <payload>="``; the template (the text before the first ``:``) is what the
router compares (:func:`template_of`, the same extraction at training and test time). Numeric answers are written
least-significant digit first, as in the tiny-LM test bed, so that the tiny model can compute them left to right.

==========  =============================  ======================================  ===========================
task        template                       example prompt                          answer
==========  =============================  ======================================  ===========================
add         ``add the two numbers``        ``add the two numbers: 7 8=``           ``51`` (15, LSB first)
reverse     ``reverse the word``           ``reverse the word: abcd=``             ``dcba``
sort        ``sort the digits``            ``sort the digits: 52813=``             ``12358``
sum         ``sum up the two numbers``     ``sum up the two numbers: 7 8=``        ``51`` (same function)
count       ``count the letter``           ``count the letter: a in abcaa=``       ``3``
subtract    ``take the difference``        ``take the difference: 8 3=``           ``5``
==========  =============================  ======================================  ===========================

``sum`` is a paraphrase of ``add`` built to be *retrained* into group 1 at τ = 0.3 (TF-IDF similarity 0.336 to
"add the two numbers", 0 to every other template); ``subtract`` shares the payload format of ``add`` (only the
instruction tells the operations apart; the base model was pre-trained on the test bed's ``37+48=`` and ``45-07=``), so a single sequentially fine-tuned adapter interferes. The designed
grouping is therefore ``[1, 2, 3, 1, 4, 5]`` with decisions ``expand, expand, expand, retrain, expand, expand``.

Splits of the string tasks are by payload: ``crc32(payload) % 10 == 0`` is test, ``== 1`` validation, the rest
train, so held-out evaluation uses strings never trained on. The one-digit arithmetic tasks have only 100 operand
pairs; their train/validation/test examples are independent draws from all of them (we measure retention there).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from icml25.testbeds.lm import Example, format_number

from lcia.errors import LciaError

#: name -> (template, operation) of the default stream, in training order
DEFAULT_STREAM: dict[str, tuple[str, str]] = {
    "add": ("add the two numbers", "add"),
    "reverse": ("reverse the word", "reverse"),
    "sort": ("sort the digits", "sort"),
    "sum": ("sum up the two numbers", "add"),
    "count": ("count the letter", "count"),
    "subtract": ("take the difference", "sub"),
}
#: designed truth of the default stream: group of each task and the router's decision
DESIGNED_GROUPS = [1, 2, 3, 1, 4, 5]
DESIGNED_DECISIONS = ["expand", "expand", "expand", "retrain", "expand", "expand"]
SPLITS = ("train", "val", "test")


def designed_truth(names: Sequence[str]) -> tuple[list[int], list[str]]:
    """Designed groups and decisions of a sub-stream of :data:`DEFAULT_STREAM`: ``sum`` belongs with ``add`` (the
    paraphrase), every other task is its own group; groups are numbered in order of first appearance."""
    family = {n: ("add" if n in ("add", "sum") else n) for n in DEFAULT_STREAM}
    ids: dict[str, int] = {}
    groups, decisions = [], []
    for n in names:
        f = family[n]
        decisions.append("retrain" if f in ids else "expand")
        ids.setdefault(f, len(ids) + 1)
        groups.append(ids[f])
    return groups, decisions
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass
class Task:
    """One instruction task: its name, instruction templates and train/validation/test examples."""

    name: str
    templates: list[str]
    train: list[Example] = field(default_factory=list)
    val: list[Example] = field(default_factory=list)
    test: list[Example] = field(default_factory=list)


def template_of(prompt: str) -> str:
    """The instruction template of a prompt: the text before the first ``:`` (the whole prompt if there is none)."""
    head, sep, _ = prompt.partition(":")
    return head.strip() if sep else prompt.strip()


def _split_of(payload: str) -> str:
    r = zlib.crc32(payload.encode("utf-8")) % 10
    return "test" if r == 0 else "val" if r == 1 else "train"


def _draw(op: str, rng: np.random.Generator) -> tuple[str, str]:
    if op == "add":
        a, b = (int(x) for x in rng.integers(0, 10, size=2))
        return f"{a} {b}", format_number(a + b, 2)
    if op == "sub":
        a, b = sorted((int(x) for x in rng.integers(0, 10, size=2)), reverse=True)
        return f"{a} {b}", str(a - b)
    if op == "reverse":
        s = "".join(rng.choice(list(_LETTERS), size=4))
        return s, s[::-1]
    if op == "sort":
        s = "".join(str(int(d)) for d in rng.integers(0, 10, size=5))
        return s, "".join(sorted(s))
    if op == "count":
        s = "".join(rng.choice(list("abcd"), size=5))
        c = str(rng.choice(list("abcd")))
        return f"{c} in {s}", str(s.count(c))
    raise LciaError(f"unknown operation {op!r}")  # pragma: no cover


def make_task(name: str, n: int, *, seed: int, n_eval: int = 64) -> Task:
    """Task ``name`` of :data:`DEFAULT_STREAM` with ``n`` train and ``n_eval`` validation and test examples."""
    if name not in DEFAULT_STREAM:
        raise LciaError(f"task must be one of {list(DEFAULT_STREAM)}, got {name!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise LciaError(f"task {name!r}: n (examples) must be an int >= 1, got {n!r}")
    template, op = DEFAULT_STREAM[name]
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    want = {"train": n, "val": n_eval, "test": n_eval}
    out: dict[str, list[Example]] = {s: [] for s in SPLITS}
    tries = 0
    while any(len(out[s]) < want[s] for s in SPLITS):
        payload, answer = _draw(op, rng)
        # one-digit arithmetic has only 100 operand pairs: its splits are independent draws (retention, not
        # generalisation to unseen operands, is measured there); the string tasks split by payload hash
        split = SPLITS[tries % 3] if op in ("add", "sub") else _split_of(payload)
        if len(out[split]) < want[split]:
            out[split].append(Example(f"{template}: {payload}=", answer))
        tries += 1
        if tries > 100 * (n + 2 * n_eval) + 1000:  # pragma: no cover - sizes are far from this
            raise LciaError(f"task {name!r}: too few distinct payloads for the requested sizes")
    return Task(name=name, templates=[template], train=out["train"], val=out["val"], test=out["test"])


def default_stream(n: int, *, seed: int, n_eval: int = 64, tasks: Sequence[str] | None = None) -> list[Task]:
    """The six-task stream (or the named subset, in the given order)."""
    names = list(DEFAULT_STREAM) if tasks is None else list(tasks)
    if not names:
        raise LciaError("the task stream is empty: name at least one task")
    return [make_task(t, n, seed=seed, n_eval=n_eval) for t in names]


def load_jsonl_stream(path: str | Path) -> list[Task]:
    """A user task stream: one JSON object per line with ``task``, ``prompt``, ``answer`` and optional ``split``
    (``train``/``val``/``test``, default: by payload hash). Tasks keep the order of their first line; each task's
    templates are the distinct :func:`template_of` of its prompts."""
    p = Path(path)
    if not p.is_file():
        raise LciaError(f"task stream {str(p)!r} is not a file")
    tasks: dict[str, Task] = {}
    for k, line in enumerate(p.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            name, prompt, answer = str(row["task"]), str(row["prompt"]), str(row["answer"])
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise LciaError(f"{p}:{k}: each line must be a JSON object with task, prompt, answer ({exc})") from None
        split = row.get("split") or _split_of(prompt.partition(":")[2] or prompt)
        if split not in SPLITS:
            raise LciaError(f"{p}:{k}: split must be one of {SPLITS}, got {split!r}")
        t = tasks.setdefault(name, Task(name=name, templates=[]))
        tmpl = template_of(prompt)
        if tmpl not in t.templates:
            t.templates.append(tmpl)
        getattr(t, split).append(Example(prompt, answer))
    if not tasks:
        raise LciaError(f"task stream {str(p)!r} is empty")
    return list(tasks.values())


def check_stream(tasks: Sequence[Task], *, max_length: int | None = None) -> None:
    """Refuse an empty stream, duplicate task names, tasks without training or test examples, and examples that do
    not fit the model's context (``<s> prompt answer </s>`` must fit ``max_length`` positions, in characters)."""
    from lcia.grouping import check_template

    if not tasks:
        raise LciaError("the task stream is empty: give at least one task")
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        raise LciaError(f"task names must be unique, got {names}")
    for t in tasks:
        if not t.train:
            raise LciaError(f"task {t.name!r} has no training examples")
        if not t.test:
            raise LciaError(f"task {t.name!r} has no test examples")
        if not t.templates:
            raise LciaError(f"task {t.name!r} has an empty instruction set")
        for i, tmpl in enumerate(t.templates):
            check_template(tmpl, f"task {t.name!r} template {i}")
        if max_length is not None:
            longest = max(len(e.prompt) + len(e.answer) + 2 for e in t.train + t.val + t.test)
            if longest > max_length:
                raise LciaError(f"task {t.name!r}: an example needs {longest} positions (<s> prompt answer </s>) but "
                                f"the model's context is {max_length}; shorten the prompts")
