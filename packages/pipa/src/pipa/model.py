"""The PIPA model: a causal LM (the positive conditional f_θ) plus a scalar value head (the class prior g_θ).

``g_θ(x, y^{<k}) = σ(w·h + b)`` where ``h`` is the LM's last hidden state (after the final norm) at the last token
of the context (the last prompt token at answer level; the last token before step k at step level). The head adds
``hidden + 1`` parameters and no extra forward pass.

Sequences are encoded as ``<s> prompt step_1 … step_K </s>`` with every step tokenized on its own, so each token
belongs to exactly one step (``</s>`` belongs to the last one). ``segment_logps`` sums token log-probabilities per
step; padding and the prompt never enter them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pipa.losses import PIPAError

__all__ = ["ValueHeadModel", "EncodedBatch", "encode_batch", "token_logps", "segment_logps", "value_logits_at"]


class ValueHeadModel(nn.Module):
    """Wraps a ``transformers`` causal LM and adds ``value_head: Linear(hidden, 1)`` (zero-initialised weight; the
    bias starts at ``logit(prior_rate)``)."""

    def __init__(self, lm: nn.Module, *, prior_rate: float = 0.5) -> None:
        super().__init__()
        if not 0.0 < prior_rate < 1.0:
            raise PIPAError(f"prior_rate must be in (0, 1), got {prior_rate}")
        self.lm = lm
        hidden = lm.config.hidden_size
        self.value_head = nn.Linear(hidden, 1)
        nn.init.zeros_(self.value_head.weight)
        with torch.no_grad():
            self.value_head.bias.fill_(float(torch.logit(torch.tensor(prior_rate))))

    @property
    def config(self) -> Any:
        return self.lm.config

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns ``logits (B, T, V)`` and ``values (B, T)`` (the value-head logit at every position)."""
        out = self.lm(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True, use_cache=False)
        h = out.hidden_states[-1]  # (B, T, hidden), after the final norm
        return out.logits, self.value_head(h).squeeze(-1)

    def save(self, path: str | Path) -> Path:
        """``path/lm`` (``save_pretrained``, safetensors) and ``path/value_head.safetensors``."""
        from icml25.checkpoint import save_tensors

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.lm.save_pretrained(path / "lm", safe_serialization=True)
        save_tensors(path / "value_head.safetensors", self.value_head.state_dict())
        return path

    @classmethod
    def load(cls, path: str | Path) -> ValueHeadModel:
        from icml25.checkpoint import load_tensors
        from transformers import AutoModelForCausalLM

        path = Path(path)
        if not (path / "lm").is_dir():
            raise FileNotFoundError(f"{path} is not a PIPA checkpoint (no lm/ folder)")
        from icml25.errors import UserInputError, user_message

        try:
            lm = AutoModelForCausalLM.from_pretrained(path / "lm", local_files_only=True)
            model = cls(lm)
            model.value_head.load_state_dict(load_tensors(path / "value_head.safetensors"), strict=True)
        except Exception as exc:  # a corrupt or foreign checkpoint: name the folder, keep bugs' tracebacks
            msg = user_message(exc) if not isinstance(exc, RuntimeError) else str(exc).splitlines()[0]
            if msg is None:
                raise
            raise UserInputError(f"{str(path)!r} is not a loadable PIPA checkpoint: {msg}") from exc
        return model


class EncodedBatch(dict):
    """``input_ids``, ``attention_mask`` (B, T); ``segments`` (B, T) = step index of each token (−1 for ``<s>``,
    prompt and padding); ``value_pos`` (B, K) = position whose hidden state gives g for step k; ``step_mask`` (B, K);
    ``labels`` (B, K) float (0/1; answer level has K = 1)."""


def _ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def encode_batch(tokenizer: Any, prompts: Sequence[str], steps: Sequence[Sequence[str]],
                 labels: Sequence[Sequence[int]] | None = None, *, max_length: int) -> EncodedBatch:
    """Encode ``<s> prompt step_1 … step_K </s>`` rows, right-padded. Raises on overlong rows (no truncation)."""
    if len(prompts) != len(steps):
        raise PIPAError(f"{len(prompts)} prompts but {len(steps)} step lists")
    if labels is not None and len(labels) != len(steps):
        raise PIPAError(f"{len(labels)} label lists but {len(steps)} step lists")
    rows, segs, vpos = [], [], []
    for i, (p, st) in enumerate(zip(prompts, steps)):
        if not st or all(s == "" for s in st):
            raise PIPAError(f"row {i}: empty completion")
        if labels is not None and len(labels[i]) != len(st):
            raise PIPAError(f"row {i}: {len(labels[i])} step labels for {len(st)} steps")
        ids = [tokenizer.bos_token_id, *_ids(tokenizer, p)]
        seg = [-1] * len(ids)
        pos = []
        for k, s in enumerate(st):
            pos.append(len(ids) - 1)  # last token of the context before step k
            t = _ids(tokenizer, s) + ([tokenizer.eos_token_id] if k == len(st) - 1 else [])
            if not t:
                raise PIPAError(f"row {i}: step {k} is empty")
            ids += t
            seg += [k] * len(t)
        if len(ids) > max_length:
            raise PIPAError(f"row {i} needs {len(ids)} tokens but max_length={max_length} (no silent truncation)")
        rows.append(ids)
        segs.append(seg)
        vpos.append(pos)
    B, T, K = len(rows), max(len(r) for r in rows), max(len(v) for v in vpos)
    input_ids = torch.full((B, T), tokenizer.pad_token_id, dtype=torch.long)
    attn = torch.zeros((B, T), dtype=torch.long)
    segments = torch.full((B, T), -1, dtype=torch.long)
    value_pos = torch.zeros((B, K), dtype=torch.long)
    step_mask = torch.zeros((B, K), dtype=torch.bool)
    lab = torch.zeros((B, K), dtype=torch.float32)
    for i in range(B):
        n = len(rows[i])
        input_ids[i, :n] = torch.tensor(rows[i])
        attn[i, :n] = 1
        segments[i, :n] = torch.tensor(segs[i])
        k = len(vpos[i])
        value_pos[i, :k] = torch.tensor(vpos[i])
        step_mask[i, :k] = True
        if labels is not None:
            lv = labels[i]
            if any(v not in (0, 1, True, False) for v in lv):
                raise PIPAError(f"row {i}: labels must be 0 or 1, got {list(lv)}")
            lab[i, :k] = torch.tensor([float(v) for v in lv])
    return EncodedBatch(input_ids=input_ids, attention_mask=attn, segments=segments, value_pos=value_pos,
                        step_mask=step_mask, labels=lab)


def token_logps(logits: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
    """``log p(token_t | tokens_<t)`` for t = 1..T−1: ``(B, T−1)`` (position t−1 predicts token t)."""
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    return logp.gather(-1, input_ids[:, 1:, None]).squeeze(-1)


def segment_logps(tok_logps: torch.Tensor, segments: torch.Tensor, num_steps: int) -> torch.Tensor:
    """Sum of token log-probs per step: ``(B, K)``. ``segments`` is ``(B, T)``; tokens with −1 are ignored."""
    seg = segments[:, 1:]  # align with tok_logps: target tokens 1..T-1
    idx = seg.clamp(min=0)
    keep = (seg >= 0).to(tok_logps.dtype)
    out = torch.zeros(tok_logps.shape[0], num_steps, dtype=tok_logps.dtype, device=tok_logps.device)
    return out.scatter_add(1, idx, tok_logps * keep)


def value_logits_at(values: torch.Tensor, value_pos: torch.Tensor) -> torch.Tensor:
    """Gather the value-head logits ``(B, T)`` at ``value_pos`` ``(B, K)``."""
    return values.gather(1, value_pos)
