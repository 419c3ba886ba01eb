"""Learnable-context text encoder for an open_clip text tower (frozen), CoOp/FOCoOp style.

A prompt p with learned context ctx_p ∈ R^{M×w} and a fixed suffix ("{classname}." or "{negative word}.") is the
token-embedding sequence

    x_p = [E(SOS), ctx_p,1 … ctx_p,M, E(w_1) … E(EOT), E(pad) …]  ∈ R^{L×w}

(the suffix is shifted right by M and truncated to the context length L). The frozen tower then computes
t_p = LN(Transformer(x_p + PE; causal mask))[eot_p + M] · W_proj, with eot_p the position of the largest token id
(open_clip's ``pool_type='argmax'``). open_clip's text transformer is **batch_first** (no sequence-first permute) and
needs ``attn_mask`` (the causal mask). Shapes: prefix (P, 1, w), suffix (P, L−1−M, w), ctx (P, M, w) → features (P, e).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from focoop.errors import FOCoOpConfigError


class FrozenTextTower(nn.Module):
    """The frozen text transformer of an open_clip ``CLIP`` (positional embedding, transformer, final LN, projection).

    The token-embedding table is *not* kept: prompt token embeddings are precomputed once in :class:`PromptBank`.
    """

    def __init__(self, *, clip_model: nn.Module):
        super().__init__()
        for name in ("transformer", "ln_final", "positional_embedding", "text_projection", "attn_mask"):
            if not hasattr(clip_model, name):
                raise FOCoOpConfigError(f"clip_model lacks the open_clip text attribute {name!r}")
        pool = getattr(clip_model, "text_pool_type", "argmax")
        if pool != "argmax":
            raise FOCoOpConfigError(f"only open_clip text_pool_type='argmax' is supported, got {pool!r}")
        self.transformer = copy.deepcopy(clip_model.transformer)
        self.ln_final = copy.deepcopy(clip_model.ln_final)
        proj = clip_model.text_projection
        self.text_projection = copy.deepcopy(proj) if isinstance(proj, nn.Module) else nn.Parameter(
            proj.detach().clone())
        self.positional_embedding = nn.Parameter(clip_model.positional_embedding.detach().clone())
        mask = clip_model.attn_mask
        self.register_buffer("attn_mask", None if mask is None else mask.detach().clone(), persistent=False)
        self.context_length = int(self.positional_embedding.shape[0])
        self.width = int(self.positional_embedding.shape[1])
        self.arch = _describe(clip_model)
        self.requires_grad_(False)
        self.eval()

    @classmethod
    def from_arch(cls, arch: dict) -> FrozenTextTower:
        """An uninitialised tower of the architecture ``arch`` (from :attr:`arch`); load its weights afterwards.

        Used to read a saved :class:`~focoop.setup.FederationSetup` (safetensors + JSON, no pickle).
        """
        from open_clip import transformer as oct

        acts = {"GELU": nn.GELU, "QuickGELU": oct.QuickGELU}
        norms = {"LayerNorm": oct.LayerNorm, "LayerNormFp32": oct.LayerNormFp32}
        try:
            act, norm, fnorm = acts[arch["act"]], norms[arch["norm"]], norms[arch["final_norm"]]
        except KeyError as exc:
            raise FOCoOpConfigError(f"saved text tower: unsupported layer type {exc.args[0]!r}") from None
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        w = int(arch["width"])
        self.transformer = oct.Transformer(w, int(arch["layers"]), int(arch["heads"]), mlp_ratio=float(arch["mlp_ratio"]),
                                           ls_init_value=1.0 if arch["layer_scale"] else None, act_layer=act,
                                           norm_layer=norm, batch_first=bool(arch["batch_first"]))
        self.ln_final = fnorm(w)
        self.text_projection = (nn.Linear(w, int(arch["embed_dim"]), bias=bool(arch["proj_bias"]))
                                if arch["proj_module"] else nn.Parameter(torch.zeros(w, int(arch["embed_dim"]))))
        self.positional_embedding = nn.Parameter(torch.zeros(int(arch["context_length"]), w))
        self.register_buffer("attn_mask", None, persistent=False)
        self.context_length, self.width, self.arch = int(arch["context_length"]), w, dict(arch)
        self.requires_grad_(False)
        self.eval()
        return self


    def forward(self, x: torch.Tensor, eot: torch.Tensor) -> torch.Tensor:
        """x: (P, L, w) token embeddings, eot: (P,) pooling positions → (P, e) unnormalised text features."""
        x = x + self.positional_embedding.to(x.dtype)
        x = self.transformer(x, attn_mask=self.attn_mask)  # batch_first: (P, L, w)
        x = self.ln_final(x)
        x = x[torch.arange(x.shape[0]), eot]  # (P, w)
        if isinstance(self.text_projection, nn.Module):
            return self.text_projection(x)
        return x @ self.text_projection  # (P, e)


class PromptBank:
    """Precomputed fixed token embeddings of P prompt suffixes with room for M learned context vectors.

    prefix (P, 1, w) = E(SOS); suffix (P, L−1−M, w) = E(tokens after SOS), truncated; eot (P,) = argmax(ids) + M.
    """

    def __init__(self, *, texts: Sequence[str], tokenize: Callable, token_embedding: nn.Module, n_ctx: int,
                 context_length: int):
        if n_ctx < 0:
            raise FOCoOpConfigError(f"n_ctx must be >= 0, got {n_ctx}")
        if not texts:
            raise FOCoOpConfigError("a prompt bank needs at least one text")
        ids = tokenize(list(texts))
        ids = torch.as_tensor(ids, dtype=torch.long)  # (P, L)
        if ids.shape[1] != context_length:
            raise FOCoOpConfigError(f"tokenizer returned length {ids.shape[1]}, model context_length is "
                                    f"{context_length}")
        eot = ids.argmax(-1)  # (P,)
        over = eot + n_ctx >= context_length
        if bool(over.any()):
            bad = [t for t, o in zip(texts, over.tolist()) if o]
            raise FOCoOpConfigError(
                f"prompt too long: n_ctx={n_ctx} context vectors plus the tokens of {bad[:3]} overflow the "
                f"context_length {context_length}; use a smaller n_ctx or shorter class names")
        with torch.no_grad():
            emb = token_embedding(ids).detach().float()  # (P, L, w)
        self.texts = list(texts)
        self.n_ctx = n_ctx
        self.prefix = emb[:, :1]  # (P, 1, w)
        self.suffix = emb[:, 1:context_length - n_ctx]  # (P, L-1-M, w)
        self.eot = eot + n_ctx
        self.ids = ids

    def __len__(self) -> int:
        return len(self.texts)

    _TENSORS = ("prefix", "suffix", "eot", "ids")

    def to(self, device) -> PromptBank:
        """A copy whose tensors live on ``device``."""
        other = self.__class__.__new__(self.__class__)
        other.texts, other.n_ctx = list(self.texts), self.n_ctx
        for k in self._TENSORS:
            setattr(other, k, getattr(self, k).to(device))
        return other

    def state(self) -> tuple[dict, dict[str, torch.Tensor]]:
        """(JSON part, tensors) for saving without pickle; :meth:`from_state` inverts it."""
        return {"texts": self.texts, "n_ctx": self.n_ctx}, {k: getattr(self, k) for k in self._TENSORS}

    @classmethod
    def from_state(cls, info: dict, tensors: dict[str, torch.Tensor]) -> PromptBank:
        self = cls.__new__(cls)
        self.texts, self.n_ctx = list(info["texts"]), int(info["n_ctx"])
        for k in cls._TENSORS:
            setattr(self, k, tensors[k])
        return self

    def embeddings(self, ctx: torch.Tensor) -> torch.Tensor:
        """ctx (P, M, w) or (1, M, w) (shared) → token embeddings (P, L, w)."""
        p = len(self)
        if ctx.shape[0] == 1 and p > 1:
            ctx = ctx.expand(p, -1, -1)
        return torch.cat([self.prefix, ctx, self.suffix], dim=1)

    def encode(self, tower: FrozenTextTower, ctx: torch.Tensor, *, normalize: bool = True) -> torch.Tensor:
        """Text features (P, e) of the prompts with context ``ctx``."""
        feats = tower(self.embeddings(ctx), self.eot)
        return F.normalize(feats, dim=-1) if normalize else feats


def _describe(clip_model: nn.Module) -> dict | None:
    """The text tower's architecture as JSON (enough to rebuild it with open_clip), or None if it is not a plain
    open_clip ``Transformer`` of ``ResidualAttentionBlock`` s (then the setup cannot be saved)."""
    tr, proj = clip_model.transformer, clip_model.text_projection
    blocks = list(getattr(tr, "resblocks", []))
    if not blocks or any(type(b).__name__ != "ResidualAttentionBlock" for b in blocks):
        return None
    b = blocks[0]
    width = int(clip_model.positional_embedding.shape[1])
    if isinstance(proj, nn.Linear):
        embed, proj_module, bias = proj.out_features, True, proj.bias is not None
    elif isinstance(proj, nn.Module):
        return None
    else:
        embed, proj_module, bias = int(proj.shape[1]), False, False
    return {"width": width, "layers": len(blocks), "heads": int(b.attn.num_heads),
            "mlp_ratio": b.mlp.c_fc.out_features / width, "act": type(b.mlp.gelu).__name__,
            "norm": type(b.ln_1).__name__, "final_norm": type(clip_model.ln_final).__name__,
            "layer_scale": not isinstance(b.ls_1, nn.Identity), "batch_first": bool(getattr(tr, "batch_first", True)),
            "embed_dim": int(embed), "proj_module": proj_module, "proj_bias": bias,
            "context_length": int(clip_model.positional_embedding.shape[0])}
