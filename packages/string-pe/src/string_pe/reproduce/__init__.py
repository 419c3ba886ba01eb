"""Side-by-side reproduction of the paper's claims at CPU scale: a list of experiments (``string-pe reproduce``).

Every model of a comparison gets the same data, seeds, epochs and the same learning-rate grid, chosen on a validation
split (:func:`icml25.tuning.tune_alike`, mean over the first ``cfg.tune_seeds`` seeds); the chosen lr is then
trained on every seed and scored on the test split. Comparisons are paired by seed (same init seed and batch order for every model). Trainings run in
``cfg.workers`` forked processes with one torch thread each.

1. :func:`point_sets` — 2D point sets (geometry only): learned / Fourier APE, RoPE-Axial, RoPE-Mixed, Cayley,
   Circulant; paper claims STRING vs the best APE and the best RoPE; properties: rotary logits unchanged under global
   translations (float64), learned APE loses accuracy out of its box.
   Also the initialisation study (Cayley from S = 0 vs random small S; Circulant from RoPE-Mixed's spectrum vs
   random) and the same encodings trained with Performer-style linear attention (paper claims STRING vs RoPE-Mixed
   there).
2. :func:`images` — generated RGB-D scenes (:mod:`string_pe.images`: two textured objects at two depths with
   distractors, ``cfg.img_task`` decides the label), per seed, written as an ImageFolder and read back with the
   CLI's loader. A ViT-tiny with every encoding on RGB (paper claims STRING vs best APE / best RoPE); the RGB-D
   variant (Cayley-STRING with 3D patch coordinates vs the same with depth as a fourth input channel). Every model
   has a competence gate (validation plateau + a stated accuracy above chance) that the paper claims depend on.
3. :func:`linear_attention` — Performer-style (ReLU random-feature) linear attention: the relative-position property
   holds when the encoding is applied to the features and fails when applied before the feature map (properties).
4. :func:`folding` — folding Cayley's P into W_q, W_k leaves the layer unchanged (property).
5. :func:`cost` — encoding forward and fwd+bwd time per encoding vs RoPE-Axial at d ∈ ``cfg.time_dims`` (targe

The experiments live one per module (``points``: :func:`point_sets`, ``scenes``: :func:`images`,
``properties``: :func:`linear_attention` and :func:`folding`, ``cost``: :func:`cost`), the shared helpers in
``common``; their names are re-exported here.
"""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Report
from icml25.experiment import run_experiments

from string_pe.config import BUDGETS, Config
from string_pe.reproduce.common import (
    _DATA,
    ABSOLUTE,
    DATA_SEED,
    EXTEND,
    EXTENT,
    GATE_WINDOW,
    IMG_PES,
    INIT_NAMES,
    LABEL,
    LIN_PES,
    LR_GRID,
    PAPER_3D,
    PAPER_VIT,
    PTS_PES,
    RANDOM_SHIFT,
    ROPES,
    ROTARY,
    SHIFT,
    STRINGS,
    _best,
    _fmt,
    _img_job,
    _other_inits,
    _pair_note,
    _pts_job,
    _run_jobs,
    _Tuner,
    add_gate,
    build_vit,
    curve_table,
    data_seed,
    final_runs,
    gate_name,
    image_inputs,
    lin_name,
)
from string_pe.reproduce.cost import cost
from string_pe.reproduce.points import point_sets
from string_pe.reproduce.properties import folding, linear_attention
from string_pe.reproduce.scenes import RGBD, RGBD_PES, images, write_scenes

EXPERIMENTS = [point_sets, images, linear_attention, folding, cost]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    from icml25.device import set_threads

    set_threads(1)  # tiny models: one thread per process (workers run in parallel)
    out = Path(out)
    report = run_experiments("string-pe", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed,
                             title="Learning the RoPEs: Better 2D and 3D Position Encodings with STRING")
    cfg = BUDGETS.pick(quick=quick, smoke=smoke)
    report.notes += [
        f"Tuning: every model gets the lr grid {list(cfg.lr_grid)} (point sets) / {list(cfg.img_lr_grid)} (images), "
        f"extended by up to {EXTEND} steps if the choice is at an edge, trained on the training split of the first "
        f"{cfg.tune_seeds} seed(s) and scored by the mean validation accuracy over them; the chosen lr is then trained "
        "on every seed (the tuning runs reused) and scored on the test split. Same epochs "
        f"({cfg.pts_epochs} point sets, {cfg.img_epochs} images; the warm-up + cosine schedule spans all of them), "
        "batch size and weight decay for every model of a comparison.",
        "Verdicts: one-sided paired t-test over seeds (same data and init seed for every model), α = 0.05; "
        "'best APE' / 'best RoPE' is the stronger of the two by test mean (conservative for STRING).",
    ]
    return report
