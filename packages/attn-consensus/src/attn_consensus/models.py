"""GPT-2 models for the consensus loop: a tiny random-init ``GPT2Config`` model, the same briefly trained on the
tiny-LM test bed's tasks (the offline stand-in for pretrained weights), a user's model by path or hub id, and
random prompts.

All models are fp32, in ``eval()`` mode, with every dropout rate 0 (a model built from a config starts in training
mode with dropout 0.1, which would make the loop stochastic).
"""

from __future__ import annotations

from typing import Any

import torch

from attn_consensus.errors import AttnConsensusError

ATTN_IMPLS = ("sdpa", "eager")


def tiny_gpt2(*, n_layer: int = 6, n_embd: int = 128, n_head: int = 4, vocab_size: int = 512, n_positions: int = 64,
              seed: int = 0, attn_implementation: str = "sdpa") -> Any:
    """A randomly initialised ``GPT2LMHeadModel`` from a ``GPT2Config`` (HF init: std 0.02, residual projections
    0.02/√(2·n_layer)), seeded without touching the global RNG; fp32, eval, no dropout."""
    from transformers import GPT2Config, GPT2LMHeadModel

    for name, val in (("n_layer", n_layer), ("n_embd", n_embd), ("n_head", n_head), ("vocab_size", vocab_size),
                      ("n_positions", n_positions)):
        if isinstance(val, bool) or not isinstance(val, int) or val < 1:
            raise AttnConsensusError(f"{name} must be an integer >= 1, got {val!r}")
    if n_embd % n_head:
        raise AttnConsensusError(f"n_embd ({n_embd}) must be divisible by n_head ({n_head})")
    if attn_implementation not in ATTN_IMPLS:
        raise AttnConsensusError(f"attn_implementation must be one of {ATTN_IMPLS}, got {attn_implementation!r}")
    cfg = GPT2Config(n_layer=n_layer, n_embd=n_embd, n_head=n_head, vocab_size=vocab_size, n_positions=n_positions,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     bos_token_id=vocab_size - 1, eos_token_id=vocab_size - 1)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GPT2LMHeadModel(cfg)
    set_attn_implementation(model, attn_implementation)
    return model.float().eval()


def set_attn_implementation(model: Any, impl: str) -> Any:
    """Switch a GPT-2's attention kernel (``"eager"`` or ``"sdpa"``) in place."""
    if impl not in ATTN_IMPLS:
        raise AttnConsensusError(f"attn_implementation must be one of {ATTN_IMPLS}, got {impl!r}")
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(impl)
    else:  # pragma: no cover - older transformers
        model.config._attn_implementation = impl
    return model


def trained_tiny_gpt2(*, n_layer: int = 6, n_embd: int = 128, n_head: int = 4, steps: int = 150, seed: int = 0,
                      tasks: tuple[str, ...] = ("add", "reverse", "sort"), lr: float = 3e-3,
                      batch_size: int = 64) -> tuple[Any, list[float]]:
    """A tiny GPT-2 over the test bed's character vocabulary, trained ``steps`` AdamW steps on a mix of the tiny-LM
    tasks (``icml25.testbeds.lm``): the offline stand-in for "trained weights". Returns ``(model, losses)``."""
    from icml25.testbeds.lm import build_tokenizer, make_examples, train_lm

    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise AttnConsensusError(f"steps must be an integer >= 1, got {steps!r}")
    tok = build_tokenizer()
    model = tiny_gpt2(n_layer=n_layer, n_embd=n_embd, n_head=n_head, vocab_size=len(tok), n_positions=64,
                      seed=seed)
    examples = []
    per_task = max(64, min(2000, steps * batch_size // max(1, len(tasks))))
    for i, task in enumerate(tasks):
        examples += make_examples(task, per_task, seed=1000 * seed + i, split="train")
    with torch.random.fork_rng(devices=[]):
        losses = train_lm(model, tok, examples, steps=steps, lr=lr, batch_size=batch_size, seed=seed)
    return model.eval(), losses


def load_model(path_or_id: str, *, attn_implementation: str = "sdpa") -> Any:
    """A user's GPT-2 / GPT-Neo (``AutoModelForCausalLM.from_pretrained``) in fp32 and eval mode. Needs the network
    for a hub id (fails with a clear error offline)."""
    from pathlib import Path

    from icml25.hub import hub_kwargs, model_kwargs
    from transformers import AutoModelForCausalLM

    local = Path(path_or_id)
    if local.exists() and not local.is_dir():
        raise AttnConsensusError(f"--model {path_or_id!r} is a file; pass a model folder (config.json + weights), "
                                 "'tiny', 'tiny-trained' or a hub id")
    kw = {"local_files_only": True} if local.exists() else hub_kwargs()  # offline: fail in seconds
    try:
        model = AutoModelForCausalLM.from_pretrained(path_or_id, torch_dtype=torch.float32,
                                                     attn_implementation=attn_implementation, **model_kwargs(kw))
    except OSError as exc:
        raise AttnConsensusError(f"--model {path_or_id!r}: cannot load it ({exc.__class__.__name__}: "
                                 f"{str(exc).splitlines()[0][:200]}); pass a local folder or go online") from None
    except Exception as exc:  # a config without model_type (ValueError), corrupt weights (SafetensorError), ...
        if not local.exists() or not (isinstance(exc, ValueError) or type(exc).__name__ == "SafetensorError"):
            raise
        raise AttnConsensusError(f"--model {path_or_id!r} is not a loadable GPT-2 / GPT-Neo folder "
                                 f"({exc.__class__.__name__}: {str(exc).splitlines()[0][:200]})") from None
    return model.eval()


def random_prompts(batch: int, length: int, *, vocab_size: int, seed: int) -> torch.Tensor:
    """``[batch, length]`` uniformly random token ids (the paper's random prompts)."""
    for name, val in (("batch", batch), ("length", length), ("vocab_size", vocab_size)):
        if isinstance(val, bool) or not isinstance(val, int) or val < 1:
            raise AttnConsensusError(f"{name} must be an integer >= 1, got {val!r}")
    g = torch.Generator().manual_seed(int(seed))
    return torch.randint(0, vocab_size, (batch, length), generator=g)


def text_prompts(path: Any, model_dir: str, *, max_length: int) -> tuple[torch.Tensor, list[str]]:
    """Token ids ``[B, T]`` of the text prompts in ``path`` (one per line, blank lines skipped), tokenised with the
    tokenizer saved beside the model in ``model_dir`` (``AutoTokenizer.from_pretrained``, local files only).

    The loop runs on one ``[B, T]`` batch without padding (a pad token would itself take part in the dynamics), so
    every prompt is cut to ``T = min(max_length, the shortest prompt's token count)``. Returns the ids and the
    prompts."""
    from pathlib import Path

    from transformers import AutoTokenizer

    p = Path(path)
    try:
        lines = [ln.strip() for ln in p.read_text(encoding="utf-8").splitlines()]
    except FileNotFoundError:
        raise AttnConsensusError(f"--prompts {str(p)!r}: no such file") from None
    except IsADirectoryError:
        raise AttnConsensusError(f"--prompts {str(p)!r} is a folder; pass a text file, one prompt per line") from None
    except UnicodeDecodeError:
        raise AttnConsensusError(f"--prompts {str(p)!r} is not UTF-8 text (one prompt per line)") from None
    prompts = [ln for ln in lines if ln]
    if not prompts:
        raise AttnConsensusError(f"--prompts {str(p)!r} holds no prompt (one non-empty line each)")
    if not Path(model_dir).is_dir():
        raise AttnConsensusError(f"--prompts needs --model to be a local folder with its tokenizer, got "
                                 f"{model_dir!r}")
    try:
        tok = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    except (OSError, ValueError, TypeError) as exc:
        raise AttnConsensusError(f"--model {model_dir!r}: no tokenizer to read --prompts with "
                                 f"({exc.__class__.__name__}: {str(exc).splitlines()[0][:160]})") from None
    ids = [tok(t, add_special_tokens=False)["input_ids"] for t in prompts]
    if min(len(i) for i in ids) < 1:
        raise AttnConsensusError(f"--prompts {str(p)!r}: a prompt tokenises to no token")
    t = min(max_length, min(len(i) for i in ids))
    return torch.tensor([i[:t] for i in ids], dtype=torch.long), prompts
