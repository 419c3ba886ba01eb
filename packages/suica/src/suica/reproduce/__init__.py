"""Side-by-side reproduction of SUICA's claims on synthetic tissues with ground truth: a list of experiments.

Budgets: :data:`suica.config.BUDGETS` (``smoke`` / ``quick`` / ``full``). Every neural method runs with the package
defaults (``SUICA()``: σ of the Fourier features set from the spot spacing, ``σ = 0.01 / h``), the same widths,
learning rates and step budget; the interpolators (IDW, Gaussian smoothing) are **tuned** on a validation split of
the training spots (3 grid points each, masked Pearson on the validation spots); griddata has no knob. Test spots
never enter a choice.

Experiments:

1. :func:`generalisation` — default ``SUICA()`` vs tuned IDW and Gaussian smoothing on held-out spots (20 %) of
   three generator settings the tests do not use (domain shapes, spot layouts, sparsity).
2. :func:`paper_comparison` — the paper's comparisons on a Visium-like noisy tissue whose training spots also have
   30 % of the genes masked in 50 % of the spots: spatial imputation (held-out spots), gene imputation (masked
   entries), denoising (correlation with the true rate) and clustering (ARI of KMeans, K = #domains), SUICA vs
   SUICA-MSE, AE + INR, INR-raw, PCA + INR, SUICA with the NGP hash-grid INR, griddata, IDW and Gaussian
   smoothing.
3. :func:`three_d` — the generator's 3-D mode (6 hex sections): one interior section held out, predicted from the
   others.
4. ``--task scale`` (:func:`scale`) — a sparse 10⁵ spots x 2·10⁴ genes fit with mini-batches: time and peak memory.

The experiments live one per module (``unseen_settings``: 1, ``paper_tasks``: 2, ``sections_3d``: 3,
``scale_benchmark``: 4) on the shared ``common`` (labels, methods, scores, claims), ``tuning`` (validation split,
grids, zero-map τ) and ``held_out`` (scoring and claims of 1 and 3); their names are re-exported here.

Verdicts: paired one-sided t-tests over seeds (same tissue and split per seed on both sides), alpha 0.05.
"""

from __future__ import annotations

from pathlib import Path

from icml25.experiment import run_experiments

from suica.config import BUDGETS
from suica.reproduce.common import (
    ARI_MARGIN,
    AVERAGING,
    CURVE_EVERY,
    DEFAULT_EMBEDDING,
    EMBEDDINGS,
    EXACT_AT_TRAINING,
    EXTEND,
    FIXED,
    GATE_CONTROL,
    GRIDS,
    INTERP,
    LABELS,
    NEURAL,
    NOTE_EXACT,
    NOTE_ZERO,
    PAPER,
    PAPER_GEN,
    SUICA_GRID,
    TAU_GRID,
    TUNE_METRIC,
    WORKERS,
    _chosen_rows,
    _compare,
    _make,
    _prepare,
    _scores,
    _sel_note,
    construction_kind,
    gate_claim,
    pmap,
)
from suica.reproduce.held_out import (
    GEN_EXTRA,
    GEN_METHODS,
    GEN_METRICS,
    GEN_TABLE_METRICS,
    TUNED,
    _fit_score_all,
    _gen_claims,
    _gen_rows,
    _neural_cache,
    _taus_curves,
)
from suica.reproduce.paper_tasks import (
    ABLATIONS,
    PAPER_BASELINES,
    PAPER_OURS,
    _ablations,
    _monitor,
    _paper_one,
    paper_comparison,
)
from suica.reproduce.scale_benchmark import PLATEAU_LOSS_FRAC, _loss_curve, _rss_now_mb, scale
from suica.reproduce.sections_3d import _three_d_one, three_d
from suica.reproduce.tuning import _pkey, _tune_interpolators, choose_tau, validation_split
from suica.reproduce.unseen_settings import _generalisation_one, generalisation

__all__ = [
    "ABLATIONS", "ARI_MARGIN", "AVERAGING", "CURVE_EVERY", "DEFAULT_EMBEDDING", "EMBEDDINGS", "EXACT_AT_TRAINING",
    "EXPERIMENTS", "EXTEND", "FIXED", "GATE_CONTROL", "GEN_EXTRA", "GEN_METHODS", "GEN_METRICS", "GEN_TABLE_METRICS",
    "GRIDS", "INTERP", "LABELS", "NEURAL", "NOTE_EXACT", "NOTE_ZERO", "PAPER", "PAPER_BASELINES", "PAPER_GEN",
    "PAPER_OURS", "PLATEAU_LOSS_FRAC", "SUBRUNS", "SUICA_GRID", "TAU_GRID", "TUNED", "TUNE_METRIC", "WORKERS",
    "_ablations", "_chosen_rows", "_compare", "_fit_score_all", "_gen_claims", "_gen_rows", "_generalisation_one",
    "_loss_curve", "_make", "_monitor", "_neural_cache", "_paper_one", "_pkey", "_prepare", "_rss_now_mb", "_scores",
    "_sel_note", "_taus_curves", "_three_d_one", "_tune_interpolators", "choose_tau", "construction_kind", "gate_claim",
    "generalisation", "paper_comparison", "pmap", "reproduce", "reproduce_scale", "scale", "three_d",
    "validation_split",
]


EXPERIMENTS = [generalisation, paper_comparison, three_d]

SUBRUNS = ("scale",)
"""Sub-runs committed *inside* the main run directory (``results/full/scale`` = ``reproduce --task scale``). The
main run is staged and replaces the old directory whole (``icml25`` ``RunDir``); the CLI passes these names as
``keep`` so that ``--overwrite`` of the main run carries them over (they are rerun only with ``--task scale``)."""


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    """The main reproduce run into ``out`` (the sub-runs :data:`SUBRUNS` of the run it replaces are kept by the CLI)."""
    from icml25.seeding import seed_everything

    seed_everything(seed)
    report = run_experiments("suica", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)
    report.notes.append("verdicts: paired one-sided t-test of the per-seed differences (same tissue and split per "
                        "seed), alpha 0.05; ≈ = the difference is inside the seed-to-seed noise")
    report.notes.append("zero-map IoU uses exact zeros (released metric); masked cosine / Pearson are per-spot means "
                        "on the truth's support; rate_corr = per-spot Pearson of log1p(prediction) with log(true rate)")
    if smoke:
        report.notes.append("smoke run: tiny sizes, the numbers mean nothing")
    return report


def reproduce_scale(*, quick: bool, smoke: bool, out: Path, seed: int):
    return run_experiments("suica", [scale], BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)
