"""The PIPA model: a causal LM (the positive conditional f_θ) plus a scalar value head (the class prior g_θ).

``g_θ(x, y^{<k}) = σ(w·h + b)`` where ``h`` is the LM's last hidden state (after the final norm) at the last token
of the context (the last prompt token at answer level; the last token before step k at step level). The head adds
``hidden + 1`` parameters and no extra forward pass.

Sequences are encoded as ``[BOS] prompt step_1 … step_K [EOS]`` (BOS/EOS only where the tokenizer has them), the
text tokenized as a whole and every token assigned to the step holding its last character (``EOS`` belongs to the
last step), so the ids are the ones generation produces, for any HF tokenizer. ``segment_logps`` sums token log-probabilities per
step; padding and the prompt never enter them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pipa.losses import PIPAError

__all__ = ["ValueHeadModel", "EncodedBatch", "encode_batch", "special_ids", "token_logps", "segment_logps", "value_logits_at"]


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

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs: dict | None = None) -> None:
        """Delegate to the LM, so that ``gradient_checkpointing=True`` works in PIPATrainer as in trl's trainers."""
        self.lm.gradient_checkpointing_enable(gradient_checkpointing_kwargs=gradient_checkpointing_kwargs)

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


def special_ids(tokenizer: Any) -> tuple[int | None, int | None, int]:
    """``(bos, eos, pad)`` of any HF tokenizer: BOS/EOS are used only where the tokenizer has them; padding falls
    back to EOS, then to 0 (padded positions are masked everywhere, so the id only has to be valid)."""
    bos, eos = tokenizer.bos_token_id, tokenizer.eos_token_id
    pad = tokenizer.pad_token_id
    if pad is None:
        pad = eos if eos is not None else 0
    return bos, eos, pad


def _tokenize_in_context(tokenizer: Any, prompt: str, steps: Sequence[str], row: int) -> tuple[list[int], list[int]]:
    """Token ids of ``prompt + step_1 + … + step_K`` tokenized *as one text*, and the step index of every token.

    With a fast tokenizer the character offsets assign each token to the step holding its last character (a token
    that straddles a boundary belongs to the later segment; a token ending inside the prompt is prompt). Slow
    tokenizers (no offsets) fall back to tokenizing each piece on its own.
    """
    if getattr(tokenizer, "is_fast", False):
        text = prompt + "".join(steps)
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ends, e = [], len(prompt)
        for st in steps:
            e += len(st)
            ends.append(e)  # step k covers characters [ends[k-1], ends[k])
        ids, seg = list(enc["input_ids"]), []
        for a, b in enc["offset_mapping"]:
            last = max(b - 1, a)
            if last < len(prompt):
                seg.append(-1)
                continue
            seg.append(next(k for k, end in enumerate(ends) if last < end))
        for k in range(len(steps)):
            if k not in seg and steps[k] != "":  # an empty (last) step is covered by EOS, see encode_batch
                raise PIPAError(f"row {row}: step {k} ({steps[k]!r}) has no token of its own under this tokenizer "
                                "(it merges into the next step); join it with its neighbour")
        return ids, seg
    ids, seg = _ids(tokenizer, prompt), []
    seg = [-1] * len(ids)
    for k, st in enumerate(steps):
        t = _ids(tokenizer, st)
        if not t and k < len(steps) - 1:
            raise PIPAError(f"row {row}: step {k} is empty")
        ids += t
        seg += [k] * len(t)
    return ids, seg


def encode_batch(tokenizer: Any, prompts: Sequence[str], steps: Sequence[Sequence[str]],
                 labels: Sequence[Sequence[int]] | None = None, *, max_length: int) -> EncodedBatch:
    """Encode ``[BOS] prompt step_1 … step_K [EOS]`` rows, right-padded (BOS/EOS where the tokenizer has them).

    Steps are tokenized in context (the whole text at once, see :func:`_tokenize_in_context`), so the ids are the
    ones the model sees at generation time. Raises on overlong rows (no truncation).
    """
    if len(prompts) != len(steps):
        raise PIPAError(f"{len(prompts)} prompts but {len(steps)} step lists")
    if labels is not None and len(labels) != len(steps):
        raise PIPAError(f"{len(labels)} label lists but {len(steps)} step lists")
    bos, eos, pad = special_ids(tokenizer)
    rows, segs, vpos = [], [], []
    for i, (p, st) in enumerate(zip(prompts, steps)):
        if not st or all(s == "" for s in st):
            raise PIPAError(f"row {i}: empty completion")
        # an empty step has no tokens; only the last one may be empty, when EOS (which belongs to it) is its token
        for k, s_k in enumerate(st):
            if s_k == "" and not (k == len(st) - 1 and eos is not None):
                raise PIPAError(f"row {i}: step {k} is empty")
        if labels is not None and len(labels[i]) != len(st):
            raise PIPAError(f"row {i}: {len(labels[i])} step labels for {len(st)} steps")
        body, seg = _tokenize_in_context(tokenizer, p, list(st), i)
        head = [bos] if bos is not None else []
        ids = head + body + ([eos] if eos is not None else [])
        seg = [-1] * len(head) + seg + ([len(st) - 1] if eos is not None else [])  # EOS belongs to the last step
        pos = [seg.index(k) - 1 for k in range(len(st))]  # last token of the context before step k
        if pos[0] < 0:
            raise PIPAError(f"row {i}: the value head needs a context token before the completion (empty prompt and "
                            "a tokenizer without a BOS token)")
        if len(ids) > max_length:
            raise PIPAError(f"row {i} needs {len(ids)} tokens but max_length={max_length} (no silent truncation)")
        rows.append(ids)
        segs.append(seg)
        vpos.append(pos)
    B, T, K = len(rows), max(len(r) for r in rows), max(len(v) for v in vpos)
    input_ids = torch.full((B, T), pad, dtype=torch.long)
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
