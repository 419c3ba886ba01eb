"""Properties of the method (true by construction or checks of the mathematics): the random-feature kernel error
rate and QMC's advantage, and K²IE's unit dual coefficients / zero gradient of its loss."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from icml25.claims import Claim
from icml25.experiment import Section

from k2ie.config import Config
from k2ie.data import intensity_1d, simulate
from k2ie.estimators import K2IE
from k2ie.features import RandomFourierFeatures, base_kernel


def rff_approximation(cfg: Config, seeds: list[int], out: Path) -> Section:
    """``φ(x)ᵀφ(y) → k(x, y)``: RMS error over random pairs versus M, i.i.d. and scrambled-Halton frequencies."""
    from icml25.plots import _plt, save_figure

    sec = Section("rff_approximation")
    errs = {True: [], False: []}
    for s in seeds:
        rng = np.random.default_rng(50_000 + s)
        x, y = rng.uniform(0, 3, (300, 2)), rng.uniform(0, 3, (300, 2))
        exact = np.diag(base_kernel("gaussian", x, y, np.ones(2)))
        for qmc in (True, False):
            row = []
            for m in cfg.rff_ms:
                phi = RandomFourierFeatures(kernel="gaussian", b=1.0, d=2, n_features=2 * m, qmc=qmc, seed=s)
                approx = np.sum(phi(x) * phi(y), axis=1)
                row.append(float(np.sqrt(np.mean((approx - exact) ** 2))))
            errs[qmc].append(row)
    ms = np.log(np.asarray(cfg.rff_ms, dtype=float))
    slopes = [float(np.polyfit(ms, np.log(r), 1)[0]) for r in errs[False]]
    sec.add(Claim.threshold(
        claim="i.i.d. random-feature error decays like M^(-1/2): log-log slope ≤ -0.35", metric="slope",
        ours=slopes, threshold=-0.35, higher_is_better=False, kind="property",
        paper="Monte Carlo rate of random Fourier features (Rahimi & Recht 2007)"))
    sec.add(Claim.compare(
        claim=f"QMC (scrambled Halton) features approximate the kernel better than i.i.d. at M = {2 * cfg.rff_ms[-1]}",
        metric="RMS kernel error", ours=[r[-1] for r in errs[True]], baseline=[r[-1] for r in errs[False]],
        baseline_name="i.i.d. frequencies", higher_is_better=False, paired=True, kind="property",
        paper="the official code's default qmc=True"))
    sec.table("RMS error of φ(x)ᵀφ(y) against the gaussian kernel (mean over seeds)",
              ["M (features)", "QMC", "i.i.d."],
              [[int(2 * m), float(np.mean([r[i] for r in errs[True]])), float(np.mean([r[i] for r in errs[False]]))]
               for i, m in enumerate(cfg.rff_ms)])
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    m2 = 2 * np.asarray(cfg.rff_ms)
    ax.loglog(m2, np.mean(errs[True], axis=0), "o-", label="QMC")
    ax.loglog(m2, np.mean(errs[False], axis=0), "s-", label="i.i.d.")
    ax.set_xlabel("M")
    ax.set_ylabel("RMS kernel error")
    ax.legend(fontsize=8)
    save_figure(fig, out / "rff_error.png", dpi=80)
    sec.figures.append("rff_error.png")
    return sec


def unit_coefficients(cfg: Config, seeds: list[int], out: Path) -> Section:
    """K²IE is a KIE with kernel h: ``λ̂(x) = Σ_n h(x, x_n)`` and its weights zero the gradient of the loss."""
    sec = Section("unit_coefficients")
    truth = intensity_1d(1)
    x = simulate(truth, truth.window, seed=seeds[0])
    m = K2IE(a=10.0, b=0.1, n_features=cfg.n_features).fit(x, truth.window)
    g = np.linspace(0, 50, 200)[:, None]
    direct = m.equivalent_kernel(g, x).sum(axis=1)
    gap = float(np.max(np.abs(direct - m.predict(g))) / np.max(np.abs(direct)))
    grad = m.gram_ @ m.w_ - m.features_(x).sum(axis=0) + m.w_ / m.a
    sec.add(Claim.threshold(
        claim="unit dual coefficients: λ̂(x) equals Σ_n h(x, x_n) summed explicitly (relative gap)",
        metric="max relative gap", ours=gap, threshold=1e-10, higher_is_better=False, kind="property",
        deterministic=True, paper="paper: λ̂(x) = Σ_n h(x, x_n), all dual coefficients equal 1"))
    sec.add(Claim.threshold(
        claim="the K²IE weights zero the gradient of the random-feature loss (max |∇|)", metric="max |gradient|",
        ours=float(np.max(np.abs(grad))), threshold=1e-8, higher_is_better=False, kind="property",
        deterministic=True, paper="paper: the minimiser of the least-squares loss, no optimisation"))
    return sec


