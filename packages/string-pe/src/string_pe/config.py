"""Presets of ``string-pe train`` (:func:`paper`, :func:`cpu`) and the budgets of ``string-pe reproduce``: one
frozen :class:`Config`, three presets (smoke / quick / full).

Every budget field is a size of the CPU-scale protocol; the method's own knobs (encodings, inits) live in the
modules.
"""

from __future__ import annotations

from dataclasses import dataclass

from icml25.experiment import Budgets


@dataclass(frozen=True)
class TrainPreset:
    """The settings of ``string-pe train`` a preset fixes (each is the flag of the same name)."""

    pe: str = "cayley"
    """Position encoding."""
    epochs: int = 15
    """Training epochs."""
    lr: float = 2e-3
    """AdamW learning rate."""
    dim: int = 64
    """Model width."""
    depth: int = 2
    """Transformer layers."""
    heads: int = 4
    """Attention heads."""
    image_size: int = 32
    """With --data: image side."""
    patch_size: int = 8
    """With --data: ViT patch side."""


def paper() -> TrainPreset:
    """A ViT-B/16 with Cayley-STRING on 224 x 224 images (paper note, "Paper's experiments": ImageNet2012 / Places365
    with ViT, Table 2; SigLIP B/16 in Table 6): width 768, 12 layers, 12 heads (head dim 64), patch 16. For the
    paper's images give ``--data`` an ImageNet-style ImageFolder.

    Not in the note, so not set: the ImageNet training recipe (epochs, lr, batch size, augmentation; the CPU values
    stay); not expressible: the batch size (fixed at 64 in ``string_pe.train.TrainSettings``), the WebLI-3D /
    OWL-ViT / ALOHA experiments."""
    return TrainPreset(dim=768, depth=12, heads=12, image_size=224, patch_size=16)


def cpu() -> TrainPreset:
    """The CPU scale ``string-pe train`` uses by default: a 2-layer width-64 model (4 heads), 15 epochs at lr 2e-3,
    32 x 32 images in 8 x 8 patches (paper note, "Reproduction at CPU scale")."""
    return TrainPreset()


@dataclass(frozen=True)
class Config:
    """Sizes of the reproduction (defaults = the full run)."""

    seeds: int = 5
    """Seeds: model init and batch order (and the point sets' data); verdicts are paired over them."""
    workers: int = 2
    """Training processes in parallel (one torch thread each)."""
    lr_grid: tuple[float, ...] = (1e-3, 3e-3, 1e-2, 3e-2)
    """Point sets: the learning-rate grid every model is tuned on (extended by up to two steps when the choice is at
    an edge)."""
    img_lr_grid: tuple[float, ...] = (1e-3, 3e-3, 1e-2)
    """Images: the learning-rate grid every ViT is tuned on (extended by up to two steps at an edge)."""
    tune_seeds: int = 2
    """Tuning: the first ``tune_seeds`` seeds; a grid point's score is its mean validation accuracy over them."""
    pts_gate_margin: float = 0.1
    """Gates (point sets): the stated accuracy every model must beat is chance (0.25) + this margin."""
    img_gate_margin: float = 0.2
    """Gates (images): the stated accuracy every ViT must beat is chance (1 / classes) + this margin."""
    pts_train: int = 500
    """2D point sets: training sets per seed."""
    pts_val: int = 300
    """2D point sets: validation sets (tuning seed only)."""
    pts_test: int = 500
    """2D point sets: test sets per seed."""
    pts_epochs: int = 16
    """2D point sets: epochs (the warm-up + cosine schedule spans all of them; 8 left three gates still rising)."""
    pts_dim: int = 32
    """Point-set transformer width."""
    pts_depth: int = 2
    """Point-set transformer layers."""
    pts_heads: int = 2
    """Point-set transformer heads."""
    img_size: int = 32
    """Generated RGB-D scenes: side in pixels."""
    img_patch: int = 8
    """ViT patch side (32 px / 8 = a 4×4 patch grid + CLS)."""
    img_task: str = "shape"
    """Generated task (``string_pe.images.TASKS``): relation (where the nearer object lies seen from the farther
    one) or shape (shape of the nearer object)."""
    img_rotate: bool = False
    """Draw the objects at random rotations (harder); the default draws them upright."""
    img_distractors: int = 0
    """Small distractor blobs per scene."""
    img_object_scale: float = 1.3
    """Multiplies the two objects' radii (``render_scenes(object_scale=)``)."""
    img_train: int = 5000
    """Generated training images per seed (written as an ImageFolder and read back)."""
    img_val: int = 400
    """Generated validation images per seed (tuning on the first ``tune_seeds`` seeds; gate curves on all)."""
    img_test: int = 1000
    """Generated test images per seed."""
    img_epochs: int = 16
    """ViT epochs (the warm-up + cosine schedule spans all of them; 9 left the RGB-D gates still rising)."""
    img_batch: int = 128
    """ViT batch size."""
    img_warmup: int = 1
    """ViT linear warm-up epochs (then cosine decay)."""
    vit_dim: int = 32
    """ViT width."""
    vit_depth: int = 2
    """ViT layers."""
    vit_heads: int = 2
    """ViT heads (head dim = vit_dim / vit_heads)."""
    s_init_std: float = 0.1
    """Initialisation study: std of the random small S of Cayley-STRING."""
    circ_init_std: float = 0.1
    """Initialisation study: std of the random (normal) circulant coefficients."""
    time_dims: tuple[int, ...] = (32, 64, 128, 256)
    """Head dims of the timing sweep."""
    time_tokens: int = 256
    """Timing: tokens per sequence."""
    time_batch: int = 8
    """Timing: batch."""
    time_repeats: int = 10
    """Timing: interleaved repeats per head dim."""


BUDGETS = Budgets(
    smoke=Config(seeds=1, workers=1, pts_train=64, pts_val=32, pts_test=64, pts_epochs=1, pts_dim=16, pts_depth=1,
                 img_train=64, img_val=32, img_test=32, img_epochs=1, img_batch=32, vit_dim=16, vit_depth=1,
                 time_dims=(16, 32), time_tokens=16, time_batch=2, time_repeats=2),
    quick=Config(seeds=3, lr_grid=(1e-3, 3e-3, 1e-2), pts_train=160, pts_val=100, pts_test=160, pts_epochs=4,
                 img_lr_grid=(3e-3, 1e-2), img_train=400, img_val=200, img_test=200, img_epochs=3, img_batch=64,
                 vit_dim=16, vit_depth=1,
                 time_dims=(32, 64), time_tokens=64, time_repeats=5),
    full=Config(),
)
