"""Loading and saving causal LMs for LIFT: a real ``transformers`` model id/path, or the offline tiny LM.

``load_model("tiny")`` gives the tiny Llama of the icml25 test bed pretrained on the source task (2-digit addition),
built from code and cached (no network). Any other string is a Hugging Face model id or a local folder loaded with
``AutoModelForCausalLM`` / ``AutoTokenizer``; when that needs the network and there is none, a clear
:class:`ModelLoadError` says so. ``save_model`` writes ``save_pretrained`` files; a folder written from the tiny
LM carries ``lift_tokenizer.json`` so that ``load_model(folder)`` rebuilds its character tokenizer.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lift.errors import LiftConfigError

__all__ = ["ModelLoadError", "TinySpec", "load_model", "save_model", "TINY"]

TINY = "tiny"
_TOKENIZER_MARKER = "lift_tokenizer.json"


class ModelLoadError(LiftConfigError):
    """A model id/path could not be loaded (missing folder, or a hub id while offline)."""


@dataclass(frozen=True)
class TinySpec:
    """The pretrained tiny LM used as the "source" model (see ``_tiny-lm.md``)."""

    source_task: str = "add"
    pretrain_steps: int = 600
    seed: int = 0
    hidden_size: int = 96
    num_layers: int = 3


def load_model(model: str, *, tiny: TinySpec | None = None, cache_dir: str | os.PathLike | None = None,
               device: Any = "cpu") -> tuple[Any, Any]:
    """``(model, tokenizer)`` for ``"tiny"``, a local ``save_pretrained`` folder, or a hub id (needs the network)."""
    import torch

    if not isinstance(model, str) or not model:
        raise LiftConfigError(f"model must be 'tiny', a local folder or a Hugging Face model id; got {model!r}")
    if model == TINY:
        from icml25.testbeds.lm import pretrained_tiny_lm

        spec = tiny or TinySpec()
        m, tok = pretrained_tiny_lm(spec.source_task, steps=spec.pretrain_steps, seed=spec.seed, cache_dir=cache_dir,
                                    hidden_size=spec.hidden_size, num_layers=spec.num_layers)
        return m.to(device), tok
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(model).expanduser()
    is_local = path.exists()
    if not is_local and (model.startswith((".", "/", "~")) or os.sep in model.strip("/").replace("/", "", 1)):
        raise ModelLoadError(f"model folder {model!r} does not exist")
    from icml25.errors import user_message
    from icml25.hub import hub_kwargs, model_kwargs

    kw = {"local_files_only": True} if is_local else hub_kwargs()  # offline: fail in seconds, no retries
    where = "local folder" if is_local else "Hugging Face model id (this needs the network or a filled HF cache)"
    try:
        m = AutoModelForCausalLM.from_pretrained(str(path) if is_local else model, torch_dtype=torch.float32,
                                                 **model_kwargs(kw))
        if is_local and (path / _TOKENIZER_MARKER).exists():
            from icml25.testbeds.lm import build_tokenizer

            tok = build_tokenizer()
        else:
            tok = AutoTokenizer.from_pretrained(str(path) if is_local else model, **kw)
    except OSError as exc:
        raise ModelLoadError(f"could not load {model!r} as a {where}: {str(exc).splitlines()[0]}") from exc
    except Exception as exc:  # corrupt weights (SafetensorError), a config without model_type (ValueError), ...
        msg = user_message(exc)
        if msg is None:
            raise
        raise ModelLoadError(f"could not load {model!r} as a {where}: {msg.splitlines()[0]}") from exc
    if tok.pad_token_id is None and tok.eos_token_id is not None:
        tok.pad_token = tok.eos_token
    return m.to(device), tok


def save_model(folder: str | os.PathLike, model: Any, tokenizer: Any, *, extra: dict[str, Any] | None = None) -> Path:
    """``save_pretrained`` of the (merged) model and its tokenizer into ``folder``; returns the folder."""
    from icml25.io import atomic_write_text

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if hasattr(model, "merge_and_unload"):  # a peft model: save the merged base model
        model = model.merge_and_unload()
    model.save_pretrained(str(folder), safe_serialization=True)
    if type(tokenizer).__name__ == "CharTokenizerFast":
        atomic_write_text(folder / _TOKENIZER_MARKER, json.dumps({"tokenizer": "icml25.testbeds.lm.build_tokenizer"}))
    else:
        tokenizer.save_pretrained(str(folder))
    if extra:
        atomic_write_text(folder / "lift_training.json", json.dumps(extra, indent=2, default=str))
    return folder


def load_examples(*, task: str | None = None, data: str | os.PathLike | None = None, n: int = 2000, seed: int = 0,
                  split: str = "train") -> list[Any]:
    """Examples ``(prompt, answer)``: from a JSONL file (``{"prompt": ..., "answer": ...}`` per line) or a test-bed task."""
    from icml25.testbeds.lm import TASKS, Example, make_examples

    if data is not None:
        path = Path(data)
        if not path.exists():
            raise FileNotFoundError(f"data file {str(path)!r} does not exist")
        out = []
        for i, line in enumerate(path.read_text().splitlines()):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                out.append(Example(str(row["prompt"]), str(row["answer"])))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise LiftConfigError(f"data line {i + 1}: expected {{\"prompt\": ..., \"answer\": ...}} ({exc})") from exc
        if not out:
            raise LiftConfigError(f"data file {str(path)!r} has no examples")
        return out
    if task not in TASKS:
        raise LiftConfigError(f"task must be one of {', '.join(TASKS)} (or give --data FILE.jsonl); got {task!r}")
    return make_examples(task, n, seed=seed, split=split)


def exact_match_any(model: Any, tokenizer: Any, examples: list[Any], *, batch_size: int = 64) -> float:
    """Greedy exact match for the tiny LM (test-bed helper) or any ``transformers`` causal LM and tokenizer."""
    import torch

    if type(tokenizer).__name__ == "CharTokenizerFast":
        from icml25.testbeds.lm import exact_match

        return exact_match(model, tokenizer, examples, batch_size=batch_size)
    tokenizer.padding_side = "left"
    device = next(model.parameters()).device
    max_new = max(len(tokenizer(ex.answer, add_special_tokens=False)["input_ids"]) for ex in examples) + 1
    hits = 0
    model.eval()
    for start in range(0, len(examples), batch_size):
        chunk = examples[start: start + batch_size]
        enc = tokenizer([ex.prompt for ex in chunk], return_tensors="pt", padding=True).to(device)
        with torch.no_grad():
            gen = model.generate(**enc, max_new_tokens=max_new, do_sample=False, num_beams=1,
                                 pad_token_id=tokenizer.pad_token_id)
        texts = tokenizer.batch_decode(gen[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
        hits += sum(t.strip() == ex.answer.strip() for t, ex in zip(texts, chunk))
    return hits / len(examples)
