"""Small transformers using the encodings: a ViT (2D patch coordinates, or 3D from a depth map) and a point-set
classifier (continuous 2D/3D coordinates).

Position-encoding choices for both (``pe=``): ``"none"`` (no position information), ``"ape"`` (learned absolute PE:
a learned table for ViT patches, a learned linear map of the coordinates for point sets), ``"ape-fourier"``
(absolute Fourier-feature PE, :class:`FourierAPE`: fixed sin/cos of every coordinate at geometric frequencies, then a
learned linear map, as ViTs' sin-cos embeddings), or a rotary encoding of
:data:`string_pe.attention.ENCODINGS` (``"rope-axial"``, ``"rope-mixed"``, ``"cayley"``, ``"circulant"``), one
encoding module per layer (so learnable frequencies / S / circulant coefficients are per layer and head, as in the
paper and rope-vit).

3D ViT (the paper's RGB-D setup, Sec. 4.2): the per-patch depth (mean-pooled depth map) goes through a learnable
linear layer to a height ``z``; the coordinate of patch ``(row, col)`` is ``(col, row, z)``. A rotary encoding then
sees 3D positions without any change to the backbone.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from string_pe.attention import ENCODINGS, Attention
from string_pe.base import check_int, check_real_float
from string_pe.errors import PositionEncodingError

PE_CHOICES = ("none", "ape", "ape-fourier", *ENCODINGS)


def _check_pe(pe: str) -> str:
    if pe not in PE_CHOICES:
        raise PositionEncodingError(f"pe must be one of {list(PE_CHOICES)}, got {pe!r}")
    return pe


class FourierAPE(nn.Module):
    """Absolute Fourier-feature position embedding: ``Linear([sin(ω_j r_k), cos(ω_j r_k)]_{j,k})``.

    Fixed frequencies ``ω_j = base^{−j/m}``, ``j = 0..m−1`` (``m = num_freqs``), on every coordinate axis ``k``
    (the frequencies of RoPE-Axial with the same ``base``); a learned linear map to the model width.
    ``forward(positions (B, N, d_c)) → (B, N, dim)``. Not translation invariant (it sees absolute coordinates).
    """

    def __init__(self, *, coord_dim: int, dim: int, num_freqs: int = 8, base: float = 100.0) -> None:
        super().__init__()
        m = check_int("num_freqs", num_freqs)
        self.coord_dim = check_int("coord_dim", coord_dim)
        self.register_buffer("freqs", base ** (-torch.arange(m, dtype=torch.float32) / m), persistent=False)
        self.proj = nn.Linear(2 * m * coord_dim, check_int("dim", dim))

    def forward(self, positions: Tensor) -> Tensor:
        dtype = self.proj.weight.dtype  # e.g. a ViT's float32 grid positions into a float64 model
        ang = positions.to(dtype).unsqueeze(-1) * self.freqs.to(dtype)  # (B, N, d_c, m)
        feats = torch.cat([ang.sin(), ang.cos()], dim=-1).flatten(-2)  # (B, N, d_c, 2m) -> (B, N, 2 m d_c)
        return self.proj(feats)


class Block(nn.Module):
    """Pre-norm transformer block: ``x ← x + Attn(LN(x), r)``, ``x ← x + MLP(LN(x))``; ``(B, N, D) → (B, N, D)``."""

    def __init__(self, *, dim: int, num_heads: int, mlp_ratio: float, encoding: str | None, coord_dim: int,
                 encoding_kwargs: dict[str, Any] | None = None, attn: str = "softmax") -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim=dim, num_heads=num_heads, encoding=encoding, coord_dim=coord_dim,
                              encoding_kwargs=encoding_kwargs, attn=attn)
        self.norm2 = nn.LayerNorm(dim)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x: Tensor, positions: Tensor | None, num_unrotated: int = 0) -> Tensor:
        x = x + self.attn(self.norm1(x), positions, num_unrotated=num_unrotated)
        return x + self.mlp(self.norm2(x))


class Encoder(nn.Module):
    """A stack of :class:`Block`; ``forward(x (B, N, D), positions (B, N − num_unrotated, d_c))``; ``attn``:
    ``"softmax"`` or ``"linear"`` (Performer-style, see :class:`string_pe.attention.Attention`)."""

    def __init__(self, *, dim: int, depth: int, num_heads: int, mlp_ratio: float = 2.0, pe: str = "cayley",
                 coord_dim: int = 2, encoding_kwargs: dict[str, Any] | None = None, attn: str = "softmax") -> None:
        super().__init__()
        check_int("depth", depth)
        encoding = pe if pe in ENCODINGS else None
        self.blocks = nn.ModuleList(
            Block(dim=dim, num_heads=num_heads, mlp_ratio=mlp_ratio, encoding=encoding, coord_dim=coord_dim,
                  encoding_kwargs=encoding_kwargs, attn=attn) for _ in range(depth)
        )
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: Tensor, positions: Tensor | None, num_unrotated: int = 0) -> Tensor:
        for blk in self.blocks:
            x = blk(x, positions, num_unrotated)
        return self.norm(x)

    def fold_(self) -> Encoder:
        """Fold every layer's Cayley/Circulant matrix into its projections (inference; see ``Attention.fold_``)."""
        for blk in self.blocks:
            blk.attn.fold_()
        return self


class ViT(nn.Module):
    """A small Vision Transformer with pluggable position encoding and 2D or 3D patch coordinates.

    Args (keyword-only):
        image_size: ``(H, W)`` of the input images.
        patch_size: square patch side ``p`` (divides H and W); tokens ``N = (H/p)(W/p)`` plus one CLS token.
        in_chans: image channels ``C``.
        num_classes: classifier outputs.
        dim, depth, num_heads, mlp_ratio: transformer width ``D``, layers, heads (head dim ``D/heads``), MLP ratio.
        pe: one of :data:`PE_CHOICES`.
        coord_dim: 2 (patch ``(col, row)``) or 3 (``(col, row, height)`` with height from a depth map).
        pool: ``"cls"`` (a CLS token, never rotated, as in the paper's ViTs) or ``"mean"`` (no CLS token, mean over
            patch tokens; with a rotary ``pe`` the logits are then exactly invariant to a global translation of the
            coordinates, e.g. a constant depth offset in 3D).
        encoding_kwargs: extra keyword arguments for the rotary encodings.

    ``forward(images (B, C, H, W), depth (B, 1, H, W) | (B, H, W) | None) → logits (B, num_classes)``.
    """

    def __init__(self, *, image_size: tuple[int, int] = (8, 8), patch_size: int = 2, in_chans: int = 1,
                 num_classes: int = 10, dim: int = 64, depth: int = 4, num_heads: int = 4, mlp_ratio: float = 2.0,
                 pe: str = "cayley", coord_dim: int = 2, pool: str = "cls",
                 encoding_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.pe = _check_pe(pe)
        h, w = int(image_size[0]), int(image_size[1])
        p = check_int("patch_size", patch_size)
        if h % p or w % p:
            raise PositionEncodingError(f"patch_size={p} must divide image_size={image_size}")
        if coord_dim not in (2, 3):
            raise PositionEncodingError(f"coord_dim must be 2 (patch grid) or 3 (grid + depth), got {coord_dim}")
        if pool not in ("cls", "mean"):
            raise PositionEncodingError(f"pool must be 'cls' or 'mean', got {pool!r}")
        check_int("dim", dim)
        self.image_size, self.patch_size, self.in_chans = (h, w), p, check_int("in_chans", in_chans)
        self.grid = (h // p, w // p)
        self.coord_dim, self.pool = coord_dim, pool
        self.patch = nn.Conv2d(in_chans, dim, kernel_size=p, stride=p)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim)) if pool == "cls" else None
        n = self.grid[0] * self.grid[1]
        rows, cols = torch.meshgrid(torch.arange(self.grid[0]), torch.arange(self.grid[1]), indexing="ij")
        grid_pos = torch.stack([cols.flatten(), rows.flatten()], dim=-1).float()  # (N, 2): x = idx % W, y = idx // W
        self.register_buffer("grid_positions", grid_pos, persistent=False)
        self.height = nn.Linear(1, 1) if coord_dim == 3 else None  # per-patch depth -> learnable height
        if pe == "ape":
            self.ape = nn.Parameter(torch.randn(1, n, dim) * 0.02)
            self.ape_height = nn.Linear(1, dim) if coord_dim == 3 else None
        self.ape_fourier = FourierAPE(coord_dim=coord_dim, dim=dim) if pe == "ape-fourier" else None
        self.encoder = Encoder(dim=dim, depth=depth, num_heads=num_heads, mlp_ratio=mlp_ratio, pe=pe,
                               coord_dim=coord_dim, encoding_kwargs=encoding_kwargs)
        self.head = nn.Linear(dim, check_int("num_classes", num_classes))

    def positions(self, batch: int, depth: Tensor | None = None) -> Tensor:
        """Patch coordinates ``(B, N, coord_dim)``: ``(col, row)`` or ``(col, row, height(mean patch depth))``."""
        pos = self.grid_positions.unsqueeze(0).expand(batch, -1, -1)  # (B, N, 2)
        if self.coord_dim == 2:
            return pos
        if depth is None:
            raise PositionEncodingError("depth is required for a ViT with coord_dim=3 (a depth map (B, 1, H, W))")
        check_real_float("depth", depth)
        if depth.dim() == 3:
            depth = depth.unsqueeze(1)  # (B, H, W) -> (B, 1, H, W)
        if depth.shape != (batch, 1, *self.image_size):
            raise PositionEncodingError(f"depth must have shape ({batch}, 1, {self.image_size[0]}, {self.image_size[1]}), "
                                        f"got {tuple(depth.shape)}")
        if not bool(torch.isfinite(depth).all()):
            raise PositionEncodingError("depth must be finite")
        pd = F.avg_pool2d(depth, self.patch_size).flatten(1).unsqueeze(-1)  # (B, 1, h, w) -> (B, N, 1)
        z = self.height(pd)  # (B, N, 1)
        return torch.cat([pos.to(z.dtype), z], dim=-1)  # (B, N, 3)

    def forward(self, images: Tensor, depth: Tensor | None = None) -> Tensor:
        check_real_float("images", images)
        if images.dim() != 4 or images.shape[1:] != (self.in_chans, *self.image_size):
            raise PositionEncodingError(f"images must have shape (B, {self.in_chans}, {self.image_size[0]}, "
                                        f"{self.image_size[1]}), got {tuple(images.shape)}")
        b = images.shape[0]
        x = self.patch(images).flatten(2).transpose(1, 2)  # (B, D, h, w) -> (B, N, D)
        pos = self.positions(b, depth)  # (B, N, d_c)
        if self.pe == "ape":
            x = x + self.ape
            if self.ape_height is not None:
                x = x + self.ape_height(pos[..., 2:])
        if self.ape_fourier is not None:
            x = x + self.ape_fourier(pos)
        if self.pool == "mean":  # no CLS token: every token is rotated, logits depend on r_j - r_i only
            x = self.encoder(x, pos if self.pe in ENCODINGS else None)
            return self.head(x.mean(dim=1))
        x = torch.cat([self.cls.expand(b, -1, -1), x], dim=1)  # (B, 1 + N, D)
        x = self.encoder(x, pos if self.pe in ENCODINGS else None, num_unrotated=1)
        return self.head(x[:, 0])


class PointSetClassifier(nn.Module):
    """Transformer classifier over a set of points with continuous coordinates (mean pooling, no CLS).

    Args (keyword-only): ``feature_dim`` (per-point features ``F``), ``coord_dim``, ``num_classes``, ``dim``,
    ``depth``, ``num_heads``, ``mlp_ratio``, ``pe`` (one of :data:`PE_CHOICES`), ``encoding_kwargs``, ``attn``
    (``"softmax"`` or ``"linear"``: Performer-style ReLU random-feature attention, the encoding on the features).

    ``forward(features (B, N, F), positions (B, N, d_c)) → logits (B, num_classes)``. With a rotary ``pe`` and mean
    pooling the logits are exactly invariant to a global translation of ``positions`` (every attention logit
    depends on ``r_j − r_i`` only). ``"ape"`` adds ``Linear(d_c → D)(positions)`` to the token embeddings,
    ``"ape-fourier"`` adds :class:`FourierAPE` of the positions.
    """

    def __init__(self, *, feature_dim: int, coord_dim: int, num_classes: int, dim: int = 32, depth: int = 2,
                 num_heads: int = 4, mlp_ratio: float = 2.0, pe: str = "cayley",
                 encoding_kwargs: dict[str, Any] | None = None, attn: str = "softmax") -> None:
        super().__init__()
        self.pe = _check_pe(pe)
        self.coord_dim = check_int("coord_dim", coord_dim)
        self.embed = nn.Linear(check_int("feature_dim", feature_dim), dim)
        self.ape = nn.Linear(coord_dim, dim) if pe == "ape" else None
        self.ape_fourier = FourierAPE(coord_dim=coord_dim, dim=dim) if pe == "ape-fourier" else None
        self.encoder = Encoder(dim=dim, depth=depth, num_heads=num_heads, mlp_ratio=mlp_ratio, pe=pe,
                               coord_dim=coord_dim, encoding_kwargs=encoding_kwargs, attn=attn)
        self.head = nn.Linear(dim, check_int("num_classes", num_classes))

    def forward(self, features: Tensor, positions: Tensor) -> Tensor:
        check_real_float("features", features)
        check_real_float("positions", positions)
        if positions.dim() != 3 or positions.shape[-1] != self.coord_dim:
            raise PositionEncodingError(
                f"positions must have shape (B, N, coord_dim={self.coord_dim}), got {tuple(positions.shape)}"
            )
        x = self.embed(features)  # (B, N, D)
        if self.ape is not None:
            x = x + self.ape(positions)
        if self.ape_fourier is not None:
            x = x + self.ape_fourier(positions)
        x = self.encoder(x, positions if self.pe in ENCODINGS else None)
        return self.head(x.mean(dim=1))
