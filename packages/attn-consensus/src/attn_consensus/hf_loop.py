"""The consensus loop over a Hugging Face GPT-2 / GPT-Neo block stack (the paper's GPT experiments).

Given prompts ``input_ids [B, T]``: ``h⁰ = wte(ids) + wpe(pos)``; then ``iterations`` passes, each running every block
of ``transformer.h`` with an explicit 4-D additive mask ``[1, 1, T, T]`` (``"causal"``: ``−∞`` above the diagonal;
``"full"``: zeros) and applying ``ln_f`` between passes. After every block the diagnostic
``1 − mean_j cos(h_1, h_j)`` (:func:`~attn_consensus.diagnostics.consensus_gap`) is recorded in float64, so a curve
has ``iterations · n_layer + 1`` points (the embeddings first). The diagnostic is fused (dot products and norms in the
states' precision, ``[B, T]`` results in float64; float32 rows below ``1.2e-4`` recomputed exactly from a normalised float64
copy; half precision always exact), so the loop stays within a few per cent of plain passes.

Options (``drop_mlp``, ``reinit``) follow the paper's experiments: MLP → 0 and ``ln_2`` → identity in every block
(``--noff``); weights as given (``"none"``, e.g. trained), randomly initialised once before the loop
(``"once"``, ``--randominit``) or re-drawn before every pass after the first (``"every_pass"``, ``--fullrandom``)
from a private generator seeded ``seed + i + 1`` (the global RNG is left alone). The random init is written here
(GPT-2: ``N(0, initializer_range)`` for linear and embedding weights, ``N(0, initializer_range/√(2·n_layer))`` for
the residual projections ``c_proj``; GPT-Neo: no depth scaling; LayerNorms to 1/0, biases to 0) instead of calling
``model._init_weights``, which transformers 5.x skips on weights loaded by ``from_pretrained``; after every re-init
we check that a weight actually changed.

Masks: an unmasked ``GPT2Block`` is bidirectional under ``eager`` and causal under ``sdpa`` in transformers 5.x, so
the mask is always explicit. ``"full"`` is refused where an explicit zero mask does not give full attention
(GPT-Neo, which always applies its causal buffer; GPT-2 ``eager`` under transformers 4.x).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from attn_consensus.errors import AttnConsensusError

REINIT = ("none", "once", "every_pass")
HF_MASKS = ("causal", "full")


class ZeroMLP(nn.Module):
    """The MLP removed: returns zeros of the input's shape (``--noff``)."""

    def forward(self, hidden_states: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        return torch.zeros_like(hidden_states)


@dataclass
class ConsensusCurve:
    """What :func:`hf_consensus_loop` measured.

    ``gap [S]``: mean over prompts of the diagnostic after every block (S = iterations · n_layer + 1, embeddings
    first); ``gap_per_prompt [B, S]``; ``diameter [2]``: mean geodesic diameter of the prompts at the embeddings
    and after the last block; ``n_layer``; ``mask``; ``attn_implementation``; ``final_hidden [B, T, D]``.
    """

    gap: np.ndarray
    gap_per_prompt: np.ndarray
    diameter: np.ndarray
    n_layer: int
    mask: str
    attn_implementation: str
    final_hidden: torch.Tensor | None = field(default=None, repr=False)

    def per_pass(self) -> np.ndarray:
        """The diagnostic at the embeddings and after the last block of every pass: ``[iterations + 1]``."""
        return self.gap[:: self.n_layer]

    @property
    def ratio(self) -> float:
        """Final over initial diagnostic."""
        return float(self.gap[-1] / self.gap[0]) if self.gap[0] > 0 else float("nan")


def _stack(model: Any) -> tuple[Any, nn.ModuleList, nn.Module]:
    tr = getattr(model, "transformer", None)
    h = getattr(tr, "h", None) if tr is not None else None
    ln_f = getattr(tr, "ln_f", None) if tr is not None else None
    if tr is None or not isinstance(h, nn.ModuleList) or not isinstance(ln_f, nn.Module):
        raise AttnConsensusError(
            f"model {type(model).__name__} is not supported: the consensus loop needs a GPT-2/GPT-Neo style model "
            "with model.transformer.h (the block stack) and model.transformer.ln_f")
    if not hasattr(tr, "wte") or not hasattr(tr, "wpe"):
        raise AttnConsensusError(f"model {type(model).__name__} is not supported: it has no transformer.wte / wpe "
                                 "(token and learned position embeddings)")
    return tr, h, ln_f


def attn_implementation(model: Any) -> str:
    return str(getattr(model.config, "_attn_implementation", None) or "eager")


def check_mask_supported(model: Any, mask: str) -> None:
    """Refuse mask types that an explicit 4-D mask cannot realise on this model (module docstring)."""
    if mask not in HF_MASKS:
        raise AttnConsensusError(f"mask must be one of {HF_MASKS}, got {mask!r}")
    impl = attn_implementation(model)
    if impl not in ("eager", "sdpa"):
        raise AttnConsensusError(f"attn_implementation {impl!r} is not supported (it may ignore an explicit 4-D "
                                 "mask); load the model with attn_implementation='eager' or 'sdpa'")
    if mask == "full":
        import transformers

        mtype = getattr(model.config, "model_type", "")
        major = int(transformers.__version__.split(".")[0])
        if mtype != "gpt2" or (impl == "eager" and major < 5):
            raise AttnConsensusError(
                f"mask 'full' does not take effect on {mtype or type(model).__name__} with {impl} attention under "
                f"transformers {transformers.__version__} (its causal buffer is always applied); use mask='causal'")


def make_mask(kind: str, length: int, *, dtype: torch.dtype = torch.float32, device: Any = "cpu") -> torch.Tensor:
    """The explicit additive attention mask ``[1, 1, T, T]``: 0 where attending is allowed, the dtype's minimum
    above the diagonal for ``"causal"``; all zeros for ``"full"``."""
    if kind not in HF_MASKS:
        raise AttnConsensusError(f"mask must be one of {HF_MASKS}, got {kind!r}")
    m = torch.zeros(1, 1, length, length, dtype=dtype, device=device)
    if kind == "causal":
        future = torch.ones(length, length, dtype=torch.bool, device=device).triu(1)
        m = m.masked_fill(future, torch.finfo(dtype).min)
    return m


def drop_mlps(model: Any) -> None:
    """MLP → 0 and ``ln_2`` → identity in every block (the paper's ``--noff``)."""
    _, blocks, _ = _stack(model)
    for block in blocks:
        if not hasattr(block, "mlp") or not hasattr(block, "ln_2"):
            raise AttnConsensusError(f"block {type(block).__name__} has no mlp / ln_2 to remove")
        block.mlp = ZeroMLP()
        block.ln_2 = nn.Identity()


def mlps_dropped(model: Any) -> bool:
    _, blocks, _ = _stack(model)
    return all(isinstance(b.mlp, ZeroMLP) and isinstance(b.ln_2, nn.Identity) for b in blocks)


def reinitialise(model: Any, *, seed: int, blocks_only: bool = False) -> None:
    """Draw fresh random weights in place from a private generator seeded ``seed`` (module docstring)."""
    from transformers.pytorch_utils import Conv1D

    tr, blocks, ln_f = _stack(model)
    cfg = model.config
    std = float(getattr(cfg, "initializer_range", 0.02))
    n_layer = len(blocks)
    depth_scaled = getattr(cfg, "model_type", "") == "gpt2"
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    root = nn.ModuleList([*blocks, ln_f]) if blocks_only else tr
    probe_param = next(p for p in blocks[0].parameters() if p.ndim == 2)  # a weight matrix, not a LayerNorm
    drawn: list[torch.Tensor] = []

    def normal_(p: torch.Tensor, s: float) -> None:
        new = torch.randn(p.shape, generator=gen, dtype=torch.float32).mul_(s).to(p.dtype)
        p.copy_(new)
        if p is probe_param:
            drawn.append(new)

    with torch.no_grad():
        for name, mod in root.named_modules():
            if isinstance(mod, (nn.Linear, Conv1D)):
                s = std / math.sqrt(2 * n_layer) if depth_scaled and name.endswith("c_proj") else std
                normal_(mod.weight, s)
                if mod.bias is not None:
                    mod.bias.zero_()
            elif isinstance(mod, nn.Embedding):
                normal_(mod.weight, std)
            elif isinstance(mod, nn.LayerNorm):
                if mod.weight is not None:
                    mod.weight.fill_(1.0)
                if mod.bias is not None:
                    mod.bias.zero_()
    if not drawn or not torch.equal(drawn[0], probe_param.detach()):
        raise RuntimeError("re-initialisation did not write the new weights")


REFINE_ULPS = 1e3
"""Rows whose fused (working-precision) diagnostic falls below ``REFINE_ULPS · eps(dtype)`` (1.2e-4 in float32)
are recomputed exactly in float64."""


def _gap_rows_exact(h: torch.Tensor, absolute: bool) -> torch.Tensor:
    """Diagnostic of each prompt ``[N]`` from ``h [N, T, D]``: normalised float64 copy (exact reference)."""
    u = torch.nn.functional.normalize(h.to(torch.float64), dim=-1)
    cos = u @ u[:, 0, :, None]  # [N, T, 1]
    if absolute:
        cos = cos.abs()
    return (1.0 - cos.mean(dim=(1, 2))).clamp_min(0.0)


def _gap_rows(h: torch.Tensor, absolute: bool, *, refine_below: float | None = None) -> torch.Tensor:
    """Diagnostic of each prompt ``[N]`` from ``h [N, T, D]``, fused: the dot products ``⟨h_1, h_j⟩`` and the norms
    ``‖h_j‖`` in the states' own precision, no normalised copy; only the ``[N, T]`` results go to float64 (an
    elementwise product and sum: on CPU several times cheaper than a batched GEMV against the strided ``h_1``).
    Working-precision rounding bounds the error of ``cos`` by about ``1e-7`` in float32, so rows below
    ``refine_below`` (default ``REFINE_ULPS · eps``, where that rounding is no longer small against the gap) are
    recomputed by :func:`_gap_rows_exact`. Half-precision states always take the exact path.
    """
    if h.dtype not in (torch.float32, torch.float64):
        return _gap_rows_exact(h, absolute)
    thr = REFINE_ULPS * torch.finfo(h.dtype).eps if refine_below is None else refine_below
    dots = (h * h[:, :1, :]).sum(-1).to(torch.float64)  # [N, T]
    norms = torch.linalg.vector_norm(h, dim=-1).to(torch.float64)  # [N, T]
    cos = dots / (norms[:, :1] * norms)
    if absolute:
        cos = cos.abs()
    gap = (1.0 - cos.mean(dim=1)).clamp_min(0.0)
    low = torch.nonzero(gap < thr).flatten()
    if low.numel():
        gap[low] = _gap_rows_exact(h[low], absolute)
    return gap


def _check_ids(model: Any, input_ids: Any) -> torch.Tensor:
    ids = torch.as_tensor(input_ids)
    if ids.ndim == 1:
        ids = ids[None]  # a single prompt [T] -> [1, T]
    if ids.ndim != 2 or ids.shape[0] < 1 or ids.shape[1] < 1:
        raise AttnConsensusError(f"input_ids must have shape [B, T] with B, T >= 1, got {tuple(ids.shape)}")
    if ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise AttnConsensusError(f"input_ids must be integer token ids, got dtype {ids.dtype}")
    vocab = int(model.config.vocab_size)
    if int(ids.min()) < 0 or int(ids.max()) >= vocab:
        raise AttnConsensusError(f"input_ids must be in [0, vocab_size={vocab}), got range "
                                 f"[{int(ids.min())}, {int(ids.max())}]")
    n_pos = int(getattr(model.config, "n_positions", getattr(model.config, "max_position_embeddings", 0)) or 0)
    if n_pos and ids.shape[1] > n_pos:
        raise AttnConsensusError(f"prompts have {ids.shape[1]} tokens but the model has {n_pos} positions")
    return ids.long()


def _call_block(block: nn.Module, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    out = block(h, attention_mask=mask)
    return out[0] if isinstance(out, (tuple, list)) else out


def hf_consensus_loop(model: Any, input_ids: Any, *, iterations: int, mask: str = "causal", drop_mlp: bool = False,
                      reinit: str = "none", seed: int = 0, absolute: bool = False,
                      renormalize_between_passes: bool = True, inplace: bool = False, diagnostics: bool = True,
                      progress: bool = False) -> ConsensusCurve:
    """Run the block stack of ``model`` ``iterations`` times on ``input_ids [B, T]`` and record the per-layer curve
    (module docstring). The model is put in ``eval()`` mode (no dropout); unless ``inplace``, a copy is patched /
    re-initialised, not the caller's model.

    ``renormalize_between_passes=False`` feeds the raw residual back (the January 2025 script); ``absolute=True``
    records ``1 − mean_j |cos|``; ``diagnostics=False`` records only the embeddings and the final state (used to
    time the loop's overhead).
    """
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise AttnConsensusError(f"iterations must be an integer >= 1, got {iterations!r}")
    if reinit not in REINIT:
        raise AttnConsensusError(f"reinit must be one of {REINIT}, got {reinit!r}")
    _stack(model)
    check_mask_supported(model, mask)
    ids = _check_ids(model, input_ids)
    if not inplace and (drop_mlp or reinit != "none"):
        model = copy.deepcopy(model)
    tr, blocks, ln_f = _stack(model)
    model.eval()
    if reinit != "none":
        reinitialise(model, seed=seed)
    if drop_mlp:
        drop_mlps(model)
    p0 = next(model.parameters())
    dtype, device = p0.dtype, p0.device
    ids = ids.to(device)
    am = make_mask(mask, ids.shape[1], dtype=dtype, device=device)
    n_layer = len(blocks)
    gaps: list[torch.Tensor] = []
    diams: list[float] = []
    from attn_consensus.diagnostics import geodesic_diameter

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=iterations, desc="consensus loop", leave=False)
    with torch.no_grad():
        pos = torch.arange(ids.shape[1], device=device)[None]  # [1, T]
        h = tr.wte(ids) + tr.wpe(pos)  # [B, T, D]
        gaps.append(_gap_rows_exact(h, absolute))
        diams.append(float(geodesic_diameter(h).mean()))
        b = h.shape[0]
        pending: list[torch.Tensor] = []  # block outputs (references) of the current chunk
        # diagnostics are computed together every `chunk` blocks (at most ~64 MB of states kept alive)
        chunk = max(1, min(16 * n_layer, 2**24 // max(1, h.numel())))
        for i in range(iterations):
            if reinit == "every_pass" and i > 0:
                reinitialise(model, seed=seed + i + 1, blocks_only=True)
                if drop_mlp and not mlps_dropped(model):  # pragma: no cover - modules are never replaced
                    raise RuntimeError("the MLP-skip patch was lost by the re-initialisation")
            for block in blocks:
                h = _call_block(block, h, am)
                if diagnostics:
                    pending.append(h)
            if diagnostics and (len(pending) >= chunk or i == iterations - 1):
                # one fused computation for several passes: [P·B, T, D] -> P·B gaps
                p = len(pending)
                gaps.extend(_gap_rows(torch.stack(pending).view(p * b, *h.shape[1:]), absolute).view(p, b).unbind(0))
                pending = []
            elif not diagnostics and i == iterations - 1:
                gaps.append(_gap_rows(h, absolute))
            if renormalize_between_passes and i < iterations - 1:
                h = ln_f(h)
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    if not torch.isfinite(h).all():
        raise AttnConsensusError(f"hidden states became non-finite within {iterations} passes")
    diams.append(float(geodesic_diameter(h).mean()))
    per_prompt = torch.stack(gaps, dim=1).cpu().numpy()  # [B, S]
    return ConsensusCurve(gap=per_prompt.mean(0), gap_per_prompt=per_prompt, diameter=np.asarray(diams),
                          n_layer=n_layer if diagnostics else 1, mask=mask,
                          attn_implementation=attn_implementation(model), final_hidden=h)


def plain_passes(model: Any, input_ids: Any, *, iterations: int, mask: str = "causal") -> torch.Tensor:
    """The same block calls with ``ln_f`` between passes and nothing else (the timing reference)."""
    tr, blocks, ln_f = _stack(model)
    ids = _check_ids(model, input_ids)
    model.eval()
    am = make_mask(mask, ids.shape[1], dtype=next(model.parameters()).dtype)
    with torch.no_grad():
        h = tr.wte(ids) + tr.wpe(torch.arange(ids.shape[1])[None])
        for i in range(iterations):
            for block in blocks:
                h = _call_block(block, h, am)
            if i < iterations - 1:
                h = ln_f(h)
    return h
