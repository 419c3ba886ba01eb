"""Hyper-parameters of SUICA (a frozen dataclass, validated on construction).

Defaults are the CPU-scale setting (see README "Parameters"); the official values are given per field.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from suica.errors import SUICAInputError


@dataclass(frozen=True)
class SUICAConfig:
    k: int = 5
    """k of the spatial k-NN graph, self included (official 5)."""
    graph_norm: str = "sym"
    """Propagation matrix: 'sym' D^-1/2 (A∨Aᵀ) D^-1/2 (default, fix), 'row' D^-1 A, 'raw' binary A (official)."""
    graph_space: str = "spatial"
    """Neighbours in 'spatial' coordinates (paper, current release) or 'expression' space (earlier release)."""
    use_graph: bool = True
    """False gives the AE + INR baseline (no graph convolution)."""
    targets_graph: str = "train"
    """Graph for the INR's target embeddings: 'train' (train spots only, default) or 'full' (official: all spots,
    held-out expression leaks into neighbours' targets)."""
    gae_hidden: tuple[int, ...] = (256, 128, 64)
    """Widths of the graph layer and encoder (decoder mirrors them). Official (2048, 512, 64)."""
    latent_dim: int = 32
    """Embedding size D (official 32); must be < the number of genes."""
    gae_epochs: int = 300
    """Full-batch GAE epochs (official 200 mini-batch epochs of 512)."""
    gae_lr: float = 1e-3
    """GAE Adam learning rate (official 1e-5, too small for a few hundred full-batch steps)."""
    inr: str = "ffn"
    """INR family: 'ffn' (Fourier features, paper default) or 'siren'."""
    inr_width: int = 256
    """INR width (official 2048)."""
    inr_layers: int = 3
    """Hidden Linear(W, W) layers of the INR (official 3)."""
    ffn_mapping: int = 256
    """Number of Gaussian Fourier frequencies m (official 256)."""
    ffn_scale: float = 10.0
    """Std σ of the Fourier frequencies B ~ N(0, σ²) (official 10)."""
    ffn_hidden_activation: bool = True
    """ReLU between the INR's hidden layers (fix); False = official (no activation, layers collapse)."""
    siren_w0: float = 30.0
    """SIREN frequency ω0."""
    inr_epochs: int = 600
    """Phase-1 steps (INR fits the embeddings; official 1000 + 1)."""
    decoder_epochs: int = 300
    """Phase-2 steps (INR frozen, decoder fine-tuned; official 999)."""
    inr_lr: float = 1e-3
    """AdamW learning rate of phase 1 (official 1e-4)."""
    decoder_lr: float = 1e-4
    """AdamW learning rate of phase 2 (official 1e-4)."""
    decoder_loss: str = "rbc"
    """Phase-2 loss: 'rbc' regression-by-classification (SUICA) or 'mse' (ablation)."""
    dice_weight: float = 0.01
    """λ_Dice of the RbC loss (official 0.01)."""
    keep_ratio: bool = True
    """Normalise coordinates keeping the aspect ratio (official keep_ratio)."""
    seed: int = 0
    """Seed of the weights and the Fourier matrix B."""

    def __post_init__(self) -> None:
        choices = {"graph_norm": ("sym", "row", "raw"), "graph_space": ("spatial", "expression"),
                   "targets_graph": ("train", "full"), "inr": ("ffn", "siren"), "decoder_loss": ("rbc", "mse")}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise SUICAInputError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name in ("k", "latent_dim", "inr_width", "ffn_mapping"):
            if int(getattr(self, name)) < 1:
                raise SUICAInputError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("gae_epochs", "inr_epochs", "decoder_epochs", "inr_layers"):
            if int(getattr(self, name)) < 0:
                raise SUICAInputError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("gae_lr", "inr_lr", "decoder_lr", "ffn_scale", "siren_w0"):
            v = float(getattr(self, name))
            if not v > 0 or v != v or v == float("inf"):
                raise SUICAInputError(f"{name} must be a finite number > 0, got {v}")
        if not self.dice_weight >= 0:
            raise SUICAInputError(f"dice_weight must be >= 0, got {self.dice_weight}")
        if len(self.gae_hidden) < 1 or min(self.gae_hidden) < 1:
            raise SUICAInputError(f"gae_hidden must be a non-empty tuple of positive widths, got {self.gae_hidden}")
        object.__setattr__(self, "gae_hidden", tuple(int(h) for h in self.gae_hidden))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["gae_hidden"] = list(self.gae_hidden)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> SUICAConfig:
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise SUICAInputError(f"unknown SUICA config fields {sorted(unknown)}")
        d = dict(d)
        if "gae_hidden" in d:
            d["gae_hidden"] = tuple(d["gae_hidden"])
        return cls(**d)
