"""Side-by-side reproduction of K²IE's claims: a list of experiments ``(cfg, seeds, out) -> Section``.

Every trial simulates one data set (seeded), then K²IE, Flaxman's RKHS estimator (FIE) and the edge-corrected KIE
are each selected by p-thinning hold-out on the same splits with grids of the same size (K²IE and FIE on the
official scripts' (a, b) log grid over [0.1, 100] × [0.1, 100]/L scaled down to ``grid_size`` per axis; KIE, which
has one knob, on ``grid_size²`` bandwidths over the same b range), refit on all points, and scored against the
truth by quadrature (ISE, IAE, and the ISE in the edge band), beside the constant-intensity control ``N/|T|``.
Competence gates (each method beats the control) come before the paper's comparisons; speed is compared at the
final fit (median of repeats, FIE to convergence) and at selection plus final fit.

Modules: :mod:`~k2ie.reproduce.common` (grids, one trial, workers), :mod:`~k2ie.reproduce.accuracy` (gates and
accuracy claims, 1-D and 2-D), :mod:`~k2ie.reproduce.speed` (every speed comparison side by side),
:mod:`~k2ie.reproduce.properties` (random-feature error, unit dual coefficients).
"""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Report
from icml25.experiment import run_experiments

from k2ie.blas import blas_threads
from k2ie.config import BUDGETS
from k2ie.reproduce.accuracy import accuracy_1d, accuracy_2d
from k2ie.reproduce.common import STORE
from k2ie.reproduce.properties import rff_approximation, unit_coefficients
from k2ie.reproduce.speed import speed

EXPERIMENTS = [accuracy_1d, accuracy_2d, speed, rff_approximation, unit_coefficients]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    STORE.clear()
    threads = BUDGETS.pick(quick=quick, smoke=smoke).blas_threads
    with blas_threads(threads or None):  # the same BLAS setting for every method (see k2ie.blas)
        return run_experiments("k2ie", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)
