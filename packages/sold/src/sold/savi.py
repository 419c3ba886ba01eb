"""SAVi-style slot-attention video autoencoder (stage A of SOLD, Mosbach et al., ICML 2025, Sec. 3.1).

Per frame ``x_t ∈ [0, 1]^{3×H×W}``:

* **Encoder**: a CNN (``enc_layers`` × conv k×k, ReLU; the first with stride ``enc_stride``) plus a soft positional embedding (a linear map of the 4-channel
  grid ``(x, y, 1−x, 1−y)`` added to the features), then LayerNorm + MLP: features ``F ∈ R^{N×F}``, ``N = (H/stride)·(W/stride)``.
* **Corrector = slot attention** (Locatello et al. 2020), ``K`` slots of width ``D``::

      k, v = W_k LN(F), W_v LN(F);  q = W_q LN(s)
      A = softmax_over_slots(q kᵀ / √D) + ε;   Ā_{k,n} = A_{k,n} / Σ_n A_{k,n}   (renormalised over locations)
      s ← GRU(Ā v, s);   s ← s + MLP(LN(s))

  ``first_iters`` (3) iterations on the first frame, ``later_iters`` (1) on later frames.
* **Initialiser**: learned slots ``s_0 ∈ R^{K×D}``, initialised uniform in ±√(6/(1+D)).
* **Predictor**: a transformer layer over the slots of a step (optionally plus an action token) that gives the prior
  for the next frame: ``s_{t+1}^{prior} = P(s_t[, a_t])``.
* **Decoder**: a spatial broadcast of each slot to a small grid plus a positional embedding, a CNN with transposed
  convolutions up to ``H×W`` and 4 output channels (RGB and a mask logit). Masks ``m = softmax_over_slots(logits)``
  and ``x̂ = Σ_k m_k ⊙ clamp(rgb_k, 0, 1)``.

Shapes: ``video [B, T, 3, H, W]`` (uint8 or float in [0, 1]) → ``slots [B, T, K, D]``;
``decode(slots [..., K, D]) → image [..., 3, H, W], masks [..., K, H, W]``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from sold.errors import SoldError, check_heads


def as_video(video, image_size: int, *, name: str = "video") -> torch.Tensor:
    """Check and convert ``[B, T, 3, H, W]`` uint8 (0..255) or float in [0, 1] to a float tensor in [0, 1]."""
    x = torch.as_tensor(np.asarray(video) if not isinstance(video, torch.Tensor) else video)
    if x.ndim != 5 or x.shape[2] != 3:
        raise SoldError(f"{name} must have shape [B, T, 3, H, W], got {tuple(x.shape)}")
    if tuple(x.shape[-2:]) != (image_size, image_size):
        raise SoldError(f"{name} must be {image_size}×{image_size} (H×W) for this model, got "
                        f"{x.shape[-2]}×{x.shape[-1]}")
    if x.dtype == torch.uint8:
        return x.float() / 255.0
    if not x.is_floating_point():
        raise SoldError(f"{name} must be uint8 in [0, 255] or float in [0, 1], got dtype {x.dtype}")
    if x.numel() and (not torch.isfinite(x).all() or x.min() < 0 or x.max() > 1):
        raise SoldError(f"{name} is float but not in [0, 1] (min {float(x.min()):.3g}, max {float(x.max()):.3g}); "
                        "pass uint8 frames or divide by 255")
    return x.float()


def frames_to_video(frames: np.ndarray) -> np.ndarray:
    """Environment frames ``[(B,) T, H, W, 3]`` uint8 → ``[B, T, 3, H, W]`` uint8 (channels first)."""
    f = np.asarray(frames)
    if f.ndim == 4:
        f = f[None]
    if f.ndim != 5 or f.shape[-1] != 3:
        raise SoldError(f"frames must have shape [(B,) T, H, W, 3], got {f.shape}")
    return np.ascontiguousarray(f.transpose(0, 1, 4, 2, 3))


def _grid(h: int, w: int) -> torch.Tensor:
    """``[H, W, 4]`` positional grid ``(y, x, 1 − y, 1 − x)`` with coordinates in [0, 1]."""
    ys, xs = torch.linspace(0, 1, h), torch.linspace(0, 1, w)
    yy, xx = torch.meshgrid(ys, xs, indexing="ij")
    return torch.stack([yy, xx, 1 - yy, 1 - xx], -1)


class SoftPositionEmbed(nn.Module):
    """Adds ``W · grid + b`` to channels-last features ``[B, H, W, C]``."""

    def __init__(self, *, channels: int, size: int):
        super().__init__()
        self.proj = nn.Linear(4, channels)
        self.register_buffer("grid", _grid(size, size), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.proj(self.grid)


class SlotAttention(nn.Module):
    """Slot attention (the SAVi corrector): competition over slots, weighted mean over locations, GRU + MLP.

    ``forward(features [B, N, F], slots [B, K, D], iters) → (slots [B, K, D], attn [B, K, N])`` where ``attn`` is the
    last iteration's attention renormalised over locations (rows sum to 1). ``scale="qk"`` divides the logits by
    √D (query/key width, standard slot attention); ``scale="feature"`` by √F as in the released code.
    """

    def __init__(self, *, slot_dim: int, feat_dim: int, mlp_hidden: int = 64, eps: float = 1e-8,
                 scale: str = "qk"):
        super().__init__()
        if scale not in ("qk", "feature"):
            raise SoldError(f"attn_scale must be 'qk' or 'feature', got {scale!r}")
        self.eps = eps
        self.scale = slot_dim ** -0.5 if scale == "qk" else feat_dim ** -0.5
        self.norm_feat, self.norm_slots, self.norm_mlp = nn.LayerNorm(feat_dim), nn.LayerNorm(slot_dim), \
            nn.LayerNorm(slot_dim)
        self.to_q = nn.Linear(slot_dim, slot_dim, bias=False)
        self.to_k = nn.Linear(feat_dim, slot_dim, bias=False)
        self.to_v = nn.Linear(feat_dim, slot_dim, bias=False)
        self.gru = nn.GRUCell(slot_dim, slot_dim)
        self.mlp = nn.Sequential(nn.Linear(slot_dim, mlp_hidden), nn.ReLU(), nn.Linear(mlp_hidden, slot_dim))

    def attention(self, features: torch.Tensor, slots: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(A [B, K, N], Ā [B, K, N])``: softmax over slots (columns sum to 1) and, after ``+ ε``, renormalised
        over locations (rows sum to 1)."""
        f = self.norm_feat(features)
        k = self.to_k(f)
        q = self.to_q(self.norm_slots(slots))
        logits = torch.einsum("bkd,bnd->bkn", q, k) * self.scale
        a = logits.softmax(dim=1)
        a_eps = a + self.eps
        return a, a_eps / a_eps.sum(-1, keepdim=True)

    def forward(self, features: torch.Tensor, slots: torch.Tensor, iters: int) -> tuple[torch.Tensor, torch.Tensor]:
        b, k, d = slots.shape
        v = self.to_v(self.norm_feat(features))
        attn = None
        for _ in range(iters):
            _, attn = self.attention(features, slots)
            updates = torch.einsum("bkn,bnd->bkd", attn, v)
            slots = self.gru(updates.reshape(b * k, d), slots.reshape(b * k, d)).reshape(b, k, d)
            slots = slots + self.mlp(self.norm_mlp(slots))
        return slots, attn


class SpatialBroadcastDecoder(nn.Module):
    """Decode each slot alone: broadcast to ``g×g`` + positional embedding, CNN up to ``H×W``, RGB + mask logit.

    ``forward(slots [M, D]) → (rgb [M, 3, H, W], logits [M, H, W])`` (``M`` = every slot of every frame).
    """

    def __init__(self, *, slot_dim: int, image_size: int, channels: int = 32, broadcast: int = 8):
        super().__init__()
        ups = image_size // broadcast
        if image_size % broadcast or ups & (ups - 1):
            raise SoldError(f"image_size ({image_size}) must be broadcast ({broadcast}) times a power of 2")
        self.broadcast = broadcast
        self.pos = SoftPositionEmbed(channels=slot_dim, size=broadcast)
        layers: list[nn.Module] = [nn.Conv2d(slot_dim, channels, 3, padding=1), nn.ReLU()]
        n_up = int(math.log2(ups))
        for i in range(n_up):
            last = i == n_up - 1
            layers += [nn.ConvTranspose2d(channels, 4 if last else channels, 4, stride=2, padding=1)]
            if not last:
                layers.append(nn.ReLU())
        if n_up == 0:
            layers.append(nn.Conv2d(channels, 4, 3, padding=1))
        self.net = nn.Sequential(*layers)

    def forward(self, slots: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        m, d = slots.shape
        g = self.broadcast
        x = self.pos(slots[:, None, None, :].expand(m, g, g, d))      # [M, g, g, D]
        out = self.net(x.permute(0, 3, 1, 2))                          # [M, 4, H, W]
        return out[:, :3], out[:, 3]


class SAVi(nn.Module):
    """Slot attention for video: encode a video into ``K`` slots per frame and decode slots into frames.

    See the module docstring for the equations. ``encode(video [B, T, 3, H, W]) → slots [B, T, K, D]`` and
    ``decode(slots [..., K, D]) → (image [..., 3, H, W], masks [..., K, H, W])``.
    """

    def __init__(self, *, image_size: int = 32, num_slots: int = 4, slot_dim: int = 32, feat_dim: int = 32,
                 enc_channels: int = 16, enc_layers: int = 3, kernel: int = 5, enc_stride: int = 2,
                 dec_channels: int = 16,
                 broadcast: int = 8, first_iters: int = 3, later_iters: int = 1, heads: int = 4,
                 mlp_hidden: int = 64, action_dim: int = 2, action_conditioned: bool = False,
                 slot_init: str = "uniform", attn_scale: str = "qk"):
        super().__init__()
        if not isinstance(num_slots, int) or num_slots < 1:
            raise SoldError(f"num_slots must be >= 1, got {num_slots!r}")
        for name, v in (("slot_dim", slot_dim), ("feat_dim", feat_dim), ("enc_channels", enc_channels),
                        ("enc_layers", enc_layers), ("dec_channels", dec_channels), ("first_iters", first_iters),
                        ("later_iters", later_iters), ("heads", heads), ("action_dim", action_dim)):
            if not isinstance(v, int) or v < 1:
                raise SoldError(f"{name} must be a positive integer, got {v!r}")
        check_heads("slot_dim", slot_dim, heads)
        if slot_init not in ("uniform", "released"):
            raise SoldError(f"slot_init must be 'uniform' or 'released', got {slot_init!r}")
        self.image_size, self.num_slots, self.slot_dim = image_size, num_slots, slot_dim
        self.first_iters, self.later_iters = first_iters, later_iters
        self.action_dim, self.action_conditioned = action_dim, action_conditioned
        if enc_stride not in (1, 2) or image_size % enc_stride:
            raise SoldError(f"enc_stride must be 1 or 2 (dividing image_size), got {enc_stride!r}")
        convs: list[nn.Module] = []
        c_in = 3
        for i in range(enc_layers):
            stride = enc_stride if i == 0 else 1
            convs += [nn.Conv2d(c_in, enc_channels, kernel, stride=stride, padding=kernel // 2), nn.ReLU()]
            c_in = enc_channels
        self.cnn = nn.Sequential(*convs)
        self.feat_size = image_size // enc_stride
        self.enc_pos = SoftPositionEmbed(channels=enc_channels, size=self.feat_size)
        self.enc_mlp = nn.Sequential(nn.LayerNorm(enc_channels), nn.Linear(enc_channels, feat_dim), nn.ReLU(),
                                     nn.Linear(feat_dim, feat_dim))
        self.corrector = SlotAttention(slot_dim=slot_dim, feat_dim=feat_dim, mlp_hidden=mlp_hidden, scale=attn_scale)
        # learned initial slots: uniform ±√(6/(1+D)) (intended); "released": the ±√(6/(8D))-ish Xavier overwrite
        bound = math.sqrt(6.0 / (1 + slot_dim)) if slot_init == "uniform" else math.sqrt(6.0 / ((num_slots + 1) * slot_dim))
        self.init_slots = nn.Parameter(torch.empty(num_slots, slot_dim).uniform_(-bound, bound))
        self.predictor = nn.TransformerEncoderLayer(slot_dim, heads, dim_feedforward=2 * slot_dim, dropout=0.0,
                                                    batch_first=True, norm_first=True)
        self.action_token = nn.Linear(action_dim, slot_dim) if action_conditioned else None
        self.decoder = SpatialBroadcastDecoder(slot_dim=slot_dim, image_size=image_size, channels=dec_channels,
                                               broadcast=broadcast)

    # ------------------------------------------------------------------ parts
    def features(self, frames: torch.Tensor) -> torch.Tensor:
        """``frames [M, 3, H, W]`` in [0, 1] → features ``[M, N, F]`` (``N = feat_size²``)."""
        h = self.cnn(frames).permute(0, 2, 3, 1)                      # [M, H', W', C]
        h = self.enc_pos(h)
        return self.enc_mlp(h.flatten(1, 2))                          # [M, H'·W', F]

    def predict_slots(self, slots: torch.Tensor, action: torch.Tensor | None = None) -> torch.Tensor:
        """Prior for the next frame: ``slots [B, K, D]`` (and the action taken at this frame ``[B, A]``)."""
        if self.action_token is None:
            return self.predictor(slots)
        if action is None:
            raise SoldError("this SAVi is action-conditioned: encode(video, actions=...) needs the actions")
        tokens = torch.cat([slots, self.action_token(action)[:, None]], 1)  # [B, K + 1, D]
        return self.predictor(tokens)[:, : self.num_slots]

    # ------------------------------------------------------------------ public API
    def encode(self, video, actions=None, *, return_attn: bool = False, init_slots: torch.Tensor | None = None):
        """``video [B, T, 3, H, W]`` → ``slots [B, T, K, D]`` (and ``attn [B, T, K, H·W]`` with ``return_attn``).

        ``actions [B, T, A]``: the action taken *at* frame ``t`` (used only when ``action_conditioned``).
        ``init_slots [B, K, D]`` replaces the learned initialiser (e.g. to test permutation equivariance).
        """
        x = as_video(video, self.image_size)
        b, t = x.shape[:2]
        if actions is not None:
            actions = torch.as_tensor(actions, dtype=torch.float32)
            if actions.ndim != 3 or actions.shape[:2] != (b, t) or actions.shape[2] != self.action_dim:
                raise SoldError(f"actions must have shape [B, T, {self.action_dim}] = [{b}, {t}, {self.action_dim}], "
                                f"got {tuple(actions.shape)}")
        feats = self.features(x.flatten(0, 1)).unflatten(0, (b, t))  # [B, T, N, F]
        slots = self.init_slots.expand(b, -1, -1) if init_slots is None else init_slots
        out, attns = [], []
        for i in range(t):
            if i > 0:
                slots = self.predict_slots(slots, None if actions is None else actions[:, i - 1])
            slots, attn = self.corrector(feats[:, i], slots, self.first_iters if i == 0 else self.later_iters)
            out.append(slots)
            attns.append(attn)
        slots = torch.stack(out, 1)
        return (slots, torch.stack(attns, 1)) if return_attn else slots

    def decode(self, slots: torch.Tensor, *, return_components: bool = False):
        """``slots [..., K, D]`` → ``image [..., 3, H, W]`` in [0, 1] and ``masks [..., K, H, W]`` (softmax over K)."""
        if slots.shape[-1] != self.slot_dim:
            raise SoldError(f"slots must end in slot_dim = {self.slot_dim}, got shape {tuple(slots.shape)}")
        lead, k = slots.shape[:-2], slots.shape[-2]
        rgb, logits = self.decoder(slots.reshape(-1, self.slot_dim))
        hw = rgb.shape[-2:]
        rgb = rgb.reshape(*lead, k, 3, *hw)
        masks = logits.reshape(*lead, k, *hw).softmax(dim=-3)
        image = (masks.unsqueeze(-3) * rgb.clamp(0, 1)).sum(-4)
        return (image, masks, rgb) if return_components else (image, masks)

    def forward(self, video, actions=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        slots = self.encode(video, actions)
        image, masks = self.decode(slots)
        return image, masks, slots

    def loss(self, video, actions=None) -> torch.Tensor:
        """Reconstruction MSE of every frame (the SAVi pre-training objective)."""
        x = as_video(video, self.image_size)
        image, _, _ = self(x, actions)
        return ((image - x) ** 2).mean()
