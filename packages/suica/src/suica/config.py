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
    embedding: str = "pca"
    """Stage-1 embedding the INR fits: 'pca' (default; the paper's PCA variant, official ``inr_pca``: PCA scores
    of the training spots, ``latent_dim`` components; the decoder is then ``ReLU(z Wᵀ + b)`` initialised at the PCA
    inverse transform and fine-tuned in phase 2 with the same RbC loss, so exact zeros stay possible) or 'gae'
    (the paper's main pipeline: graph-augmented autoencoder; ``use_graph=False`` = AE; ``SUICAConfig.paper()``).
    The default is what tuning the embedding on validation chose in 14 of 15 tissues of the previous full run
    (README "Defaults"): PCA + INR + RbC decoder."""
    targets_graph: str = "train"
    """Graph for the INR's target embeddings: 'train' (train spots only, default) or 'full' (official: all spots,
    held-out expression leaks into neighbours' targets)."""
    gae_hidden: tuple[int, ...] = (256, 128, 64)
    """Widths of the graph layer and encoder (decoder mirrors them). Official (2048, 512, 64)."""
    latent_dim: int = 32
    """Embedding size D (official 32); must be < the number of genes."""
    gae_epochs: int = 200
    """GAE epochs (official 200 mini-batch epochs of 512; here full batch up to batch_size spots)."""
    gae_lr: float = 1e-3
    """GAE Adam learning rate (official 1e-5, too small for a few hundred full-batch steps)."""
    inr: str = "ffn"
    """INR family: 'ffn' (Fourier features, paper default), 'siren' or 'ngp' (multiresolution hash grid, pure torch;
    8 levels x 2 features, 2^14 entries, resolutions 4..128, MLP width min(inr_width, 64))."""
    inr_width: int = 128
    """INR width (official 2048)."""
    inr_layers: int = 3
    """Hidden Linear(W, W) layers of the INR (official 3)."""
    ffn_mapping: int = 128
    """Number of Gaussian Fourier frequencies m (official 256)."""
    ffn_scale: float | None = None
    """Std σ of the Fourier frequencies B ~ N(0, σ²). None (default): chosen by ``fit`` on an internal validation
    split of the training spots among ``ffn_scale_factors / h`` (h = median nearest-neighbour spacing of the
    training spots in normalised coordinates); one factor (default) sets σ from the spacing, several are chosen on
    an internal validation split. A number fixes σ (official 10)."""
    ffn_scale_factors: tuple[float, ...] = (0.01,)
    """σ·h (cycles per spot spacing) when ffn_scale is None: one value sets σ = factor / h from the spot spacing
    (default 0.01, no extra cost); several values are candidates chosen on an internal validation split."""
    val_frac: float = 0.1
    """Fraction of the training spots held aside inside ``fit`` to choose σ among several ffn_scale_factors
    (INR-stage loss on their embeddings); the final INR is then fitted on all training spots."""
    batch_size: int = 4096
    """Spots per mini-batch. GAE: one Adam step per batch of spots (each with its k-NN neighbourhood subgraph);
    INR and decoder stages: gradients accumulated over the batches, one step per epoch (official). Data with at
    most this many spots train full batch."""
    ffn_hidden_activation: bool = True
    """ReLU between the INR's hidden layers (fix); False = official (no activation, layers collapse)."""
    siren_w0: float = 30.0
    """SIREN frequency ω0."""
    inr_epochs: int = 400
    """Phase-1 steps (INR fits the embeddings; official 1000 + 1)."""
    decoder_epochs: int = 200
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
                   "targets_graph": ("train", "full"), "embedding": ("gae", "pca"), "inr": ("ffn", "siren", "ngp"), "decoder_loss": ("rbc", "mse")}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise SUICAInputError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name in ("k", "latent_dim", "inr_width", "ffn_mapping"):
            if int(getattr(self, name)) < 1:
                raise SUICAInputError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("gae_epochs", "inr_epochs", "decoder_epochs", "inr_layers"):
            if int(getattr(self, name)) < 0:
                raise SUICAInputError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.ffn_scale is not None:
            v = float(self.ffn_scale)
            if not v > 0 or v == float("inf"):
                raise SUICAInputError(f"ffn_scale must be a finite number > 0 or None (chosen on validation), got {v}")
        if len(self.ffn_scale_factors) < 1 or not all(0 < float(f) < float("inf") for f in self.ffn_scale_factors):
            raise SUICAInputError(f"ffn_scale_factors must be a non-empty tuple of finite numbers > 0, "
                                  f"got {self.ffn_scale_factors}")
        object.__setattr__(self, "ffn_scale_factors", tuple(float(f) for f in self.ffn_scale_factors))
        if not 0.0 < float(self.val_frac) < 0.5:
            raise SUICAInputError(f"val_frac must be in (0, 0.5), got {self.val_frac}")
        if int(self.batch_size) < 2:
            raise SUICAInputError(f"batch_size must be >= 2, got {self.batch_size}")
        for name in ("gae_lr", "inr_lr", "decoder_lr", "siren_w0"):
            v = float(getattr(self, name))
            if not v > 0 or v != v or v == float("inf"):
                raise SUICAInputError(f"{name} must be a finite number > 0, got {v}")
        if not self.dice_weight >= 0:
            raise SUICAInputError(f"dice_weight must be >= 0, got {self.dice_weight}")
        if len(self.gae_hidden) < 1 or min(self.gae_hidden) < 1:
            raise SUICAInputError(f"gae_hidden must be a non-empty tuple of positive widths, got {self.gae_hidden}")
        object.__setattr__(self, "gae_hidden", tuple(int(h) for h in self.gae_hidden))

    @classmethod
    def paper(cls, **overrides) -> SUICAConfig:
        """The official setting (paper note, "GAE" (``configs/ST/embedder_gae.yaml``) and the INR/decoder stage
        (``configs/ST/inr_embd.yaml``)): GAE hidden (2048, 512, 64), latent 32, 200 epochs at Adam lr 1e-5 in batches of
        512; FFN INR of width 2048 with 3 hidden layers, 256 Fourier frequencies of σ = 10, 1001 fitting steps, then
        999 decoder steps, AdamW lr 1e-4 both; RbC loss with λ_Dice 0.01; k = 5.

        Not expressible: the INR stage's batch of 8192 (one ``batch_size`` here serves both stages: 512). Kept as
        fixed in this package (the note's findings): the symmetric normalised graph, train-only target graph and the
        ReLU between the INR's hidden layers (``graph_norm='raw'``, ``targets_graph='full'``,
        ``ffn_hidden_activation=False`` give the released code's)."""
        return cls(**({"gae_hidden": (2048, 512, 64), "latent_dim": 32, "gae_epochs": 200, "gae_lr": 1e-5,
                       "batch_size": 512, "inr_width": 2048, "inr_layers": 3, "ffn_mapping": 256, "ffn_scale": 10.0,
                       "inr_epochs": 1001, "decoder_epochs": 999, "inr_lr": 1e-4, "decoder_lr": 1e-4,
                       "dice_weight": 0.01, "k": 5, "embedding": "gae"} | overrides))

    @classmethod
    def cpu(cls, **overrides) -> SUICAConfig:
        """The CPU scale ``suica fit`` uses by default (the class defaults; README "Parameters")."""
        return cls(**overrides)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["gae_hidden"] = list(self.gae_hidden)
        d["ffn_scale_factors"] = list(self.ffn_scale_factors)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> SUICAConfig:
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise SUICAInputError(f"unknown SUICA config fields {sorted(unknown)}")
        d = dict(d)
        for key in ("gae_hidden", "ffn_scale_factors"):
            if key in d:
                d[key] = tuple(d[key])
        return cls(**d)


# ------------------------------------------------------------------------------------------------ reproduce
from icml25.experiment import Budgets  # noqa: E402

GENERALISATION_SETTINGS: dict[str, dict] = {
    "bands / random layout / 90% zeros": dict(domain_shape="bands", layout="random", zero_frac=0.90, n_domains=4),
    "stripes / hex layout / 80% zeros": dict(domain_shape="stripes", layout="hex", zero_frac=0.80, n_domains=5),
    "7 Voronoi domains / random layout / 94% zeros": dict(domain_shape="voronoi", layout="random", zero_frac=0.94,
                                                          n_domains=7),
}
"""Generator settings of the generalisation experiment; none is used by the package's tests (which use 3 Voronoi
domains on a hex layout with 88% zeros)."""


@dataclass(frozen=True)
class ReproduceConfig:
    """Budget of ``suica reproduce`` (one of :data:`BUDGETS`)."""

    seeds: int = 5
    """Seeds (tissues, splits, weights) per experiment."""
    n_spots: int = 500
    """Spots per synthetic tissue (2-D experiments)."""
    n_genes: int = 120
    """Genes per synthetic tissue."""
    n_spots_3d: int = 600
    """Spots of the 3-D tissue (6 hex sections)."""
    model: tuple[tuple[str, object], ...] = ()
    """Overrides of the SUICA defaults for every neural method (empty: the package defaults, as a user gets them)."""
    settings: tuple[str, ...] = tuple(GENERALISATION_SETTINGS)
    """Generator settings of the generalisation experiment."""
    ablations: bool = False
    """Run the SUICA ablations (λ_Dice, official graph / targets) on the first seed."""
    scale_spots: int = 100_000
    """``--task scale``: spots of the sparse benchmark tissue."""
    scale_genes: int = 20_000
    """``--task scale``: genes of the sparse benchmark tissue."""
    scale_density: float = 0.02
    """``--task scale``: fraction of non-zero entries."""
    scale_inr_epochs: int = 150
    """``--task scale``: INR epochs (one AdamW step each; default fit: 400)."""
    scale_decoder_epochs: int = 1
    """``--task scale``: decoder epochs (≈ 70 s each at 10⁵ x 2·10⁴ on 2 cores; default fit: 200)."""
    scale_eval_spots: int = 20_000
    """``--task scale``: spots predicted and scored chunk by chunk after the fit."""
    scale_batch: int = 2048
    """``--task scale``: spots per mini-batch."""

    def model_kw(self) -> dict:
        return dict(self.model)


_SMOKE_MODEL = (("gae_hidden", (32, 16)), ("latent_dim", 8), ("inr_width", 32), ("ffn_mapping", 16),
                ("gae_epochs", 10), ("inr_epochs", 10), ("decoder_epochs", 5))
_QUICK_MODEL = (("gae_epochs", 40), ("inr_epochs", 70), ("decoder_epochs", 35))

BUDGETS = Budgets(
    smoke=ReproduceConfig(seeds=1, n_spots=150, n_genes=40, n_spots_3d=240, model=_SMOKE_MODEL,
                          settings=tuple(GENERALISATION_SETTINGS)[:1], ablations=False, scale_spots=3000,
                          scale_genes=500, scale_batch=512, scale_inr_epochs=10, scale_eval_spots=1000),
    quick=ReproduceConfig(seeds=3, n_spots=250, n_genes=80, n_spots_3d=360, model=_QUICK_MODEL, ablations=False,
                          scale_spots=20_000, scale_genes=5_000, scale_inr_epochs=50, scale_eval_spots=5000),
    full=ReproduceConfig(),
)
