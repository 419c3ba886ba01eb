"""Part of the reproduction: see ``richardson_tc.reproduce``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
from icml25.claims import Claim
from icml25.experiment import Section

from richardson_tc.config import Config
from richardson_tc.reproduce.common import _block, _dist
from richardson_tc.richardson import lifted_richardson
from richardson_tc.solvers import CPModeSolver, cp_block_radius


def block_fixed_point(cfg: Config, seeds: list[int], out: Path) -> Section:
    sec = Section("block_fixed_point")
    p = 0.1
    fixed, rows, by_rule = [], [], {}
    for s in seeds:
        f, obs, direct = _block(cfg, s, p)
        res = lifted_richardson(CPModeSolver(f, 0), f[0], obs, tol=1e-13, max_inner=20_000)
        fixed.append(_dist(res.x, direct))
        for rule in ("official", "step"):
            for eps in cfg.eps_grid:
                r = lifted_richardson(CPModeSolver(f, 0), f[0], obs, tol=eps, stop_rule=rule)
                by_rule.setdefault((rule, eps), []).append((_dist(r.x, direct), r.updates))
    sec.add(Claim.threshold(
        claim="Lifted Richardson's fixed point is the direct masked least-squares solve of the ALS block",
        metric="relative distance to the direct solve", ours=fixed, threshold=1e-8, higher_is_better=False,
        kind="property", paper="paper §3: preconditioned Richardson on the TC normal equations converges to the "
        "masked solution (ρ < 1)", note=f"{cfg.block_shape}, R = {cfg.block_rank}, p = {p}, plain iteration"))
    eps_cmp = 0.01 if 0.01 in cfg.eps_grid else cfg.eps_grid[0]
    sec.add(Claim.compare(
        claim=f"Our block-convergence stop rule stops closer to the block solution than the released "
              f"loss-decrease rule (ε = {eps_cmp})",
        metric="relative distance to the direct solve", ours=[d for d, _ in by_rule[("step", eps_cmp)]],
        baseline=[d for d, _ in by_rule[("official", eps_cmp)]], baseline_name="released stop rule",
        higher_is_better=False, paired=True, kind="property",
        paper="released code: stop when 1 − L_t/L_{t−1} < ε (the paper's ε grid); audit: 35–39 % away at ε = 0.1"))
    for (rule, eps), v in by_rule.items():
        rows.append([rule, eps, float(np.mean([d for d, _ in v])), float(np.mean([u for _, u in v]))])
    sec.table(f"Stop rules on one ALS block (p = {p}): distance to the direct solve and inner updates "
              f"(mean over seeds)", ["stop rule", "ε", "relative distance", "inner updates"], rows)
    return sec


def _updates_to_solution(cfg: Config, shape: tuple[int, ...], seed: int, p: float, tol: float = 1e-8):
    """Plain lifted updates on one block until the relative distance to the direct solve is below ``tol``.

    Returns ``(updates, measured asymptotic ratio, ρ(M), mean per-row λ_min/p, predicted updates)``; the prediction
    is ``log(e_0/tol)/(−log ρ(M))`` (e_0 the starting distance): the count the error map's spectral radius implies.
    """
    from scipy.linalg import eigh

    from richardson_tc.cp import khatri_rao_except

    f, obs, direct = _block(replace(cfg, block_shape=shape), seed, p)
    solver, x, errs = CPModeSolver(f, 0), f[0], []
    e0 = _dist(x, direct)
    for _ in range(20_000):
        x = lifted_richardson(solver, x, obs, tol=0.5, max_inner=1).x  # exactly one update per call
        errs.append(_dist(x, direct))
        if errs[-1] < tol:
            break
    ratios = [b / a for a, b in zip(errs, errs[1:]) if a > 1e-12]
    rho = float(np.median(ratios[-10:])) if ratios else 0.0
    rho_m = cp_block_radius(f, 0, obs[0])
    k = khatri_rao_except(f, 0)
    g = k.T @ k
    lam = float(np.mean([eigh(k[row].T @ k[row], g, eigvals_only=True).min() for row in obs[0]]))
    pred = float(np.log(e0 / tol) / -np.log(rho_m)) if 0 < rho_m < 1 else float("nan")
    return len(errs), rho, rho_m, lam / p, pred


def rate_vs_p(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Inner updates to the block solution against p, explained by ρ(M) (the max over the rows of A^{(n)})."""
    sec = Section("rate_vs_p")
    ps = list(cfg.block_ps)
    shapes = {"small": tuple(cfg.block_shape), "large": tuple(cfg.block_shape_large)}
    slopes = {k: [] for k in shapes}
    rel_gap, pred_gap, rows = [], [], {}
    for s in seeds:
        for key, shape in shapes.items():
            counts = []
            for p in ps:
                n, rho, rho_m, lam_p, pred = _updates_to_solution(cfg, shape, s, p)
                if key == "small" and rho_m > 0.2:  # ratios of tiny errors are meaningless when few updates suffice
                    rel_gap.append(abs(rho - rho_m) / rho_m)
                if key == "small":
                    pred_gap.append(abs(n / pred - 1))
                counts.append(n)
                rows.setdefault((key, p), []).append((rho, rho_m, lam_p, n, pred))
            slopes[key].append(float(np.polyfit(np.log(ps), np.log(counts), 1)[0]))
    ideal = float(np.polyfit(np.log(ps), -np.log(-np.log1p(-np.asarray(ps))), 1)[0])
    j = {k: int(np.prod(v[1:])) for k, v in shapes.items()}
    sec.add(Claim.threshold(
        claim="The measured contraction of lifted Richardson equals the spectral radius ρ(M) of its error map "
              "(within 5 %)", metric="|measured ratio − ρ(M)| / ρ(M)", ours=rel_gap, threshold=0.05,
        higher_is_better=False, kind="property",
        paper="paper §3: e_{t+1} = M e_t, M = (AᵀA)⁻¹A_Ω̄ᵀA_Ω̄, ρ = 1 − λ_min(…) < 1",
        note="ρ(M) from the per-row generalised eigenvalues; one value per (seed, p) with ρ(M) > 0.2"))
    sec.add(Claim.threshold(
        claim="The inner updates to reach the block solution are the count ρ(M) implies, log(e₀/10⁻⁸)/(−log ρ(M)) "
              "(within 25 %)", metric="|updates / predicted − 1|", ours=pred_gap, threshold=0.25,
        higher_is_better=False, kind="property",
        paper="geometric convergence at rate ρ(M) (paper §3); checks that the updates are counted right",
        note=f"one value per (seed, p), {shapes['small']}; the prediction assumes the whole starting error sits in the "
             "slowest row, so it slightly over-counts"))
    small = [(1 - r[0]) / p for (key, p), v in rows.items() if key == "small" for r in v]
    sec.add(Claim.threshold(
        claim=f"The measured contraction is ρ ≈ 1 − p: (1 − ρ̂)/p within 0.25 of 1 ({shapes['small']}, J = {j['small']})",
        metric="|(1 − measured ρ)/p − 1|", ours=[abs(v - 1) for v in small], threshold=0.25, higher_is_better=False,
        kind="paper", paper="note / paper's analysis: ρ ≈ 1 − p for uniform sampling and an incoherent design",
        note="one value per (seed, p); see the table for the larger block, where (1 − ρ)/p is closer to 1"))
    for key in shapes:
        sec.add(Claim.threshold(
            claim=f"Inner updates to reach the block solution scale like 1/p (log-log slope within 0.3 of −1; "
                  f"{shapes[key]}, J = {j[key]} Khatri–Rao rows)",
            metric="|slope + 1| of log(updates to 1e-8) vs log p", ours=[abs(v + 1) for v in slopes[key]],
            threshold=0.3, higher_is_better=False, kind="paper",
            paper="note / paper's analysis: ρ ≈ 1 − p for uniform Ω and incoherent A ⇒ about log(1/ε)/p inner "
                  "steps (the paper's exact theorem could not be confirmed here)",
            note="slopes per seed: " + ", ".join(f"{v:.2f}" for v in slopes[key]) + f"; with ρ = 1 − p exactly the "
                 f"slope over p ∈ {ps} would be {ideal:.2f} (−log(1 − p) > p at large p). ρ(M) is the max over the "
                 f"rows of A^(n) of 1 − λ_min(G_Ω,i, G); each row sees only ≈ p·J observations of its R-dim "
                 f"regression, so 1 − ρ(M) falls short of p at small p (finite-sample λ_min); the shortfall "
                 f"shrinks as J grows"))
    sec.table("Contraction of the error map vs 1 − p (one ALS block, mean over seeds)",
              ["block", "p", "measured ρ (asymptotic error ratio)", "ρ(M) (eigenvalues)", "1 − p", "(1 − ρ(M)) / p",
               "mean per-row λ_min / p", "updates to 1e-8", "predicted from ρ(M)", "updates × p"],
              [[f"{shapes[key]} (J = {j[key]})", p, *[float(np.mean([r[i] for r in v])) for i in range(2)], 1 - p,
                float(np.mean([(1 - r[1]) / p for r in v])), float(np.mean([r[2] for r in v])),
                float(np.mean([r[3] for r in v])), float(np.mean([r[4] for r in v])),
                float(np.mean([r[3] for r in v])) * p] for (key, p), v in rows.items()])
    sec.table("Log-log slope of inner updates vs p (mean ± sd over seeds; 1/p scaling is −1)",
              ["block", "slope", "sd", f"slope if ρ = 1 − p exactly (p ∈ {ps})"],
              [[f"{shapes[k]} (J = {j[k]})", float(np.mean(v)), float(np.std(v)), ideal] for k, v in slopes.items()])
    return sec
