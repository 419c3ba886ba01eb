"""Instruction task streams: the synthetic five-task stream (exact answers, known grouping) and a JSONL loader in the
Alpaca / CoIN shape (``instruction``, ``input``, ``output``).

Every prompt is ``"<instruction>: <input>="``; the instruction (the text before the first ``:``) is what the router
compares (:func:`template_of`, the same extraction at training and test time).

========  ===================================  ===========================================  ==========================
task      instruction                          example prompt                               answer
========  ===================================  ===========================================  ==========================
reverse   ``reverse the word``                 ``reverse the word: abcd=``                  ``dcba``
repeat    ``say the word twice``               ``say the word twice: abcd=``                ``abcdabcd``
flip      ``reverse the letters of the word``  ``reverse the letters of the word: abcd=``   ``dcba`` (same function)
count     ``count the letter``                 ``count the letter: a in abcaa=``            ``3``
behead    ``remove the first character``       ``remove the first character: abcde=``       ``bcde``
========  ===================================  ===========================================  ==========================

The base model (the icml25 tiny Llama) was pre-trained on bare ``reverse abcde=``, ``sort 52813=`` and
``count a in abcaa=``; every instruction format here is new to it (base accuracy about 0), and a fresh LoRA adapter
learns each within the stream's 100 steps (the competence gates of reproduce measure this). ``flip`` is a
paraphrase of ``reverse`` built to be *retrained* into group 1 at τ = 0.3 (TF-IDF similarity 0.71 to "reverse the
word", 0 to every other instruction but "say the word twice", 0.20); ``repeat`` and ``behead`` share ``reverse``'s
payload (a word of lowercase letters) with other operations, so for a single sequentially fine-tuned adapter only
the instruction tells them apart. "say the word twice" scores 0.26 against "reverse the word" (below τ), so the
designed grouping is ``[1, 2, 1, 3, 4]`` with decisions ``expand, expand, retrain, expand, expand``.

Splits are by payload: ``crc32(payload) % 10 == 0`` is test, ``== 1`` validation, the rest train, so held-out
evaluation uses inputs never trained on (the one-digit arithmetic tasks of :data:`EXTRA_TASKS`, with only 100
operand pairs, draw their splits independently instead).
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
    "reverse": ("reverse the word", "reverse"),
    "repeat": ("say the word twice", "repeat"),
    "flip": ("reverse the letters of the word", "reverse"),
    "count": ("count the letter", "count"),
    "behead": ("remove the first character", "behead"),
}
#: further tasks, usable by name in ``Config.tasks``: ``sort`` (learned in about 40 steps; left out of the default
#: stream for time) and the earlier arithmetic stream (one-digit operands, least-significant digit first), which a
#: fresh LoRA adapter needs several hundred steps to learn on the tiny Llama
EXTRA_TASKS: dict[str, tuple[str, str]] = {
    "sort": ("sort the digits", "sort"),
    "add": ("add the two numbers", "add"),
    "sum": ("sum up the two numbers", "add"),
    "subtract": ("take the difference", "sub"),
}
KNOWN_TASKS: dict[str, tuple[str, str]] = {**DEFAULT_STREAM, **EXTRA_TASKS}
#: designed truth of the default stream: group of each task and the router's decision
DESIGNED_GROUPS = [1, 2, 1, 3, 4]
DESIGNED_DECISIONS = ["expand", "expand", "retrain", "expand", "expand"]
SPLITS = ("train", "val", "test")


def designed_truth(names: Sequence[str]) -> tuple[list[int], list[str]]:
    """Designed groups and decisions of a sub-stream of :data:`DEFAULT_STREAM`: ``flip`` belongs with ``reverse``
    (the paraphrase), every other task is its own group; groups are numbered in order of first appearance."""
    family = {n: KNOWN_TASKS[n][1] for n in KNOWN_TASKS}  # tasks with one operation share a group
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
    if op == "behead":
        s = "".join(rng.choice(list(_LETTERS), size=5))
        return s, s[1:]
    if op == "repeat":
        s = "".join(rng.choice(list(_LETTERS), size=4))
        return s, s + s
    if op == "sort":
        s = "".join(str(int(d)) for d in rng.integers(0, 10, size=5))
        return s, "".join(sorted(s))
    if op == "count":
        s = "".join(rng.choice(list("abcd"), size=5))
        c = str(rng.choice(list("abcd")))
        return f"{c} in {s}", str(s.count(c))
    raise LciaError(f"unknown operation {op!r}")  # pragma: no cover


def make_task(name: str, n: int, *, seed: int, n_eval: int = 64) -> Task:
    """Task ``name`` of :data:`KNOWN_TASKS` with ``n`` train and ``n_eval`` validation and test examples."""
    if name not in KNOWN_TASKS:
        raise LciaError(f"task must be one of {list(KNOWN_TASKS)}, got {name!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise LciaError(f"task {name!r}: n (examples) must be an int >= 1, got {n!r}")
    template, op = KNOWN_TASKS[name]
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
    """The five-task stream (or the named tasks of :data:`KNOWN_TASKS`, in the given order)."""
    names = list(DEFAULT_STREAM) if tasks is None else list(tasks)
    if not names:
        raise LciaError("the task stream is empty: name at least one task")
    return [make_task(t, n, seed=seed, n_eval=n_eval) for t in names]


def prompt_of(instruction: str, input_text: str = "") -> str:
    """The prompt of an instruction record: ``"<instruction>: <input>="`` (``"<instruction>="`` without input), the
    format of the synthetic stream, so :func:`template_of` gives back the instruction."""
    return f"{instruction}: {input_text}=" if input_text else f"{instruction}="


def load_jsonl_stream(path: str | Path) -> list[Task]:
    """A user task stream in the Alpaca / CoIN instruction shape: one JSON object per line with ``instruction``,
    ``output``, optional ``input`` (default empty), optional ``task`` (default: the instruction, so each distinct
    instruction is a task) and optional ``split`` (``train``/``val``/``test``; default: by a hash of the input).
    Tasks keep the order of their first line; each task's templates are its distinct instructions. The prompt is
    :func:`prompt_of` and the answer the ``output``. Every line is checked here, before any model is built, and the
    stream is checked by :func:`check_stream` (every task has training and test examples)."""
    p = Path(path)
    if not p.is_file():
        raise LciaError(f"task stream {str(p)!r} is not a file")
    tasks: dict[str, Task] = {}
    for k, line in enumerate(p.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LciaError(f"{p}:{k}: not a JSON object ({exc})") from None
        if not isinstance(row, dict):
            raise LciaError(f"{p}:{k}: each line must be a JSON object with instruction, input, output")
        if "prompt" in row and "instruction" not in row:  # the earlier task / prompt / answer shape
            if not all(isinstance(row.get(f), str) and row.get(f) for f in ("task", "prompt", "answer")):
                raise LciaError(f"{p}:{k}: a line with 'prompt' (the task / prompt / answer shape) needs the string "
                                f"fields task, prompt and answer; got fields {sorted(row)}")
            head, _, rest = row["prompt"].partition(":")
            row = {"task": row["task"], "instruction": head, "input": rest.strip().removesuffix("="),
                   "output": row["answer"], **({"split": row["split"]} if "split" in row else {})}
        missing = [f for f in ("instruction", "output") if f not in row]
        if missing:
            raise LciaError(f"{p}:{k}: missing field(s) {missing}; each line needs instruction and output (and "
                            f"optionally input, task, split), got fields {sorted(row)}")
        for f in ("instruction", "input", "output", "task", "split"):
            if f in row and not isinstance(row[f], str):
                raise LciaError(f"{p}:{k}: field {f!r} must be a string, got {type(row[f]).__name__}")
        instruction, input_text, output = row["instruction"].strip(), row.get("input", "").strip(), row["output"]
        if not instruction:
            raise LciaError(f"{p}:{k}: field 'instruction' is empty")
        if not output:
            raise LciaError(f"{p}:{k}: field 'output' is empty")
        if ":" in instruction or "=" in instruction:
            raise LciaError(f"{p}:{k}: field 'instruction' must not contain ':' or '=' (they separate the "
                            f"instruction, input and answer in the prompt), got {instruction!r}")
        from lcia.grouping import check_template

        check_template(instruction, f"{p}:{k}: field 'instruction'")
        name = row.get("task") or instruction
        split = row.get("split") or _split_of(input_text or output)
        if split not in SPLITS:
            raise LciaError(f"{p}:{k}: field 'split' must be one of {SPLITS}, got {split!r}")
        t = tasks.setdefault(name, Task(name=name, templates=[]))
        if instruction not in t.templates:
            t.templates.append(instruction)
        getattr(t, split).append(Example(prompt_of(instruction, input_text), output))
    if not tasks:
        raise LciaError(f"task stream {str(p)!r} is empty")
    out = list(tasks.values())
    check_stream(out)
    return out


def write_jsonl_stream(tasks: Sequence[Task], path: str | Path) -> Path:
    """Write ``tasks`` in the instruction / input / output shape :func:`load_jsonl_stream` reads (with ``task`` and
    ``split``), e.g. to export the synthetic stream as an example file."""
    lines = []
    for t in tasks:
        for split in SPLITS:
            for ex in getattr(t, split):
                instruction, _, rest = ex.prompt.partition(":")
                lines.append(json.dumps({"task": t.name, "instruction": instruction.strip(),
                                         "input": rest.strip().removesuffix("="), "output": ex.answer,
                                         "split": split}))
    p = Path(path)
    p.write_text("\n".join(lines) + "\n")
    return p


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
