"""Side-by-side reproduction of the paper's claims for earl-bo: a list of experiments.

REPLACE the example experiment with the paper's; keep the shape: each experiment is ``(cfg, seeds, out) ->
Section`` and compares the method with its baselines on the same data and seeds (tuned alike with
``icml25.tuning``), with verdicts from the per-seed numbers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from icml25.claims import Claim, Report
from icml25.experiment import Section, run_experiments

from earl_bo.config import BUDGETS, Config
from earl_bo.data import make_data
from earl_bo.method import fit, predict


def recovery(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Test error of the method against the mean predictor on fresh inputs, one dataset per seed."""
    sec = Section("recovery")
    ours, base = [], []
    for s in seeds:
        x, y, w_true = make_data(cfg.n, cfg.dim, noise=cfg.noise, seed=s)
        x_test = np.random.default_rng(10_000 + s).standard_normal((cfg.n, cfg.dim))
        y_test = x_test @ w_true
        w = fit(x, y, ridge=cfg.ridge)
        ours.append(float(np.mean((predict(w, x_test) - y_test) ** 2)))
        base.append(float(np.mean((y.mean() - y_test) ** 2)))
    sec.add(Claim.compare(
        claim="Example: the fitted model predicts better than the mean of the targets",
        metric="test MSE", ours=ours, baseline=base, baseline_name="mean predictor", higher_is_better=False,
        paired=True, kind="property", paper="scaffold example: replace with the paper's claim and its table"))
    sec.table("Example: test MSE per seed", ["seed", "ours", "mean predictor"],
              [[s, o, b] for s, o, b in zip(seeds, ours, base)])
    return sec


EXPERIMENTS = [recovery]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    return run_experiments("earl-bo", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)
