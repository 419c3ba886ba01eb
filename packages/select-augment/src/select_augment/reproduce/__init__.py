"""Side-by-side reproduction of the paper"s claims at CPU scale: a list of experiments.

Data: the tiny-CLIP test bed"s shapes (8 classes, 32x32), clean and with 30% label noise (plus ambiguous-overlay and
near-duplicate regimes for the score checks), and sklearn"s digits (native 8x8), clean and with 30% label noise.
Scorer: the shared tiny CLIP, pretrained on other seeds of the shapes generator; on the digits it has never seen a
digit (class prototypes of its image features stand in for the text features), the scorer that did not see the
evaluation generator. Learner: a small CNN, the same schedule and seeds for every method.

Competence before comparison: every method gets a gate (its validation accuracy plateaued over the second half of
training and its test accuracy beats chance; full data must also reach a stated accuracy), and every paper claim
waits on the gates of both sides. Every pruning baseline gets ours" noise gate (``"X +gate"``, :class:`GatedSelector`)
so that the claims compare selection + augmentation, not "label filter vs none". Every pruning method is matched to
the same *measured* cost (``target_cost`` of ``T N`` sample-steps): the fixed-budget methods by their ratio, InfoBatch
by its prune ratio calibrated on a validation run; InfoBatch also runs at its own default ratio 0.5 (higher cost).
Every method (ours, baselines, ablations) then picks its learning rate from the same grid on the validation split.
"""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Report
from icml25.experiment import run_experiments

from select_augment.config import BUDGETS
from select_augment.reproduce.common import _CACHE, GATED, INFOBATCH_DEFAULT, gate_name, run_method
from select_augment.reproduce.matched_cost import (
    clean_matched_cost,
    digits_matched_cost,
    digits_noisy_matched_cost,
    noisy_matched_cost,
)
from select_augment.reproduce.scorer import score_detection

EXPERIMENTS = [score_detection, clean_matched_cost, noisy_matched_cost, digits_matched_cost,
               digits_noisy_matched_cost]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    _CACHE.clear()
    report = run_experiments("select-augment", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)
    if "clip_seconds" in _CACHE:
        report.notes.append(f"loading the cached tiny CLIP: {_CACHE['clip_seconds']:.1f} s (not in any time ratio)")
    return report


__all__ = [
    "EXPERIMENTS",
    "GATED",
    "INFOBATCH_DEFAULT",
    "_CACHE",
    "clean_matched_cost",
    "digits_matched_cost",
    "digits_noisy_matched_cost",
    "gate_name",
    "noisy_matched_cost",
    "reproduce",
    "run_method",
    "score_detection",
]
