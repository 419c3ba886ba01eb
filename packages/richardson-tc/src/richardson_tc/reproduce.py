"""Side-by-side reproduction of Ghadiri et al. (ICML 2025) at CPU scale: a list of experiments.

1. ``block_fixed_point`` — one ALS block: lifted Richardson converges to the direct masked solve; how far the
   released loss-decrease stop rule and our block-convergence rule stop from it (the audit in the README).
2. ``rate_vs_p`` — the contraction ρ of the error map against 1 − p, and inner updates against 1/p, on two block
   sizes (J = Khatri–Rao rows per factor row); the updates are also predicted from ρ(M).
3. ``speed_accuracy`` — CP completion of a random rank-R tensor at every p: direct (vectorised), the official-style
   per-entry loop, EM-ALS (ours and tensorly's ``parafac(mask=)``), lifted ± acceleration, leverage-sampled lifted,
   and the released stop rule; same tensor, Ω and N(0, 0.1²) start per seed. The lifted ε is chosen on a separate
   validation instance (its own tensor, Ω and start) as the fastest ε of the grid whose held-out RRE is within
   ``accuracy_margin`` of the direct solver's; direct, the loop and EM-ALS have no knob.
4. ``every_eps`` — lifted at every ε of the paper's grid, ± acceleration, under both stop rules (one p).
5. ``more_tensors`` — random Tucker (4,4,4), a Gaussian tensor, digits 8×8×1797 and a blob video: direct, EM-ALS
   (both), lifted + acceleration with ε chosen on validation.
6. ``kronecker_black_box`` — the same driver with a Tucker-core (Kronecker) and a tensor-train core regression as
   the black box reaches the masked least-squares solution of the explicit design.
"""

from __future__ import annotations

import time
import tracemalloc
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from icml25.claims import Claim, Report
from icml25.experiment import Section, run_experiments
from icml25.tuning import Selection, select, selections_table

from richardson_tc.bench import timed_run
from richardson_tc.config import BUDGETS, Config
from richardson_tc.cp import init_factors, unfold
from richardson_tc.data import ObservedEntries, make_tensor, sample_mask, split_mask
from richardson_tc.richardson import lifted_richardson
from richardson_tc.solvers import CPModeSolver, KroneckerSolver, TTCoreSolver, cp_block_radius, masked_lstsq

LOGS = ("official repo's stored logs (rank 16, 10 sweeps, ε = 0.01, per ALS step, lifted+accel vs the per-entry "
        "loop): 5× at p = 0.1, 22× at 0.5, 35–37× at 0.9–1.0; abstract: 'can be 100x faster than direct methods'")
VAL_SEED = 10_000
"""Seed of the validation instance (tensor, Ω, start), never a test seed."""


def _block(cfg: Config, seed: int, p: float):
    """A single mode-0 ALS block: noisy rank-R tensor, Ω at rate p, factors from a N(0, 1) start."""
    shape, r = cfg.block_shape, cfg.block_rank
    x = make_tensor("cp", shape=shape, rank=r, seed=seed)
    x = x + 0.1 * np.std(x) * np.random.default_rng(seed + 1).standard_normal(shape)
    mask = sample_mask(shape, p, seed=seed + 2)
    f = init_factors(shape, r, seed=seed + 3, scale=1.0)
    direct = masked_lstsq(ObservedEntries.from_mask(x, mask), f, 0)
    obs = (unfold(mask, 0), unfold(np.where(mask, x, 0.0), 0))
    return f, obs, direct


def _dist(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


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


def _problem(cfg: Config, seed: int, p: float):
    x = make_tensor("cp", shape=cfg.shape, rank=cfg.rank, seed=seed)
    return x, sample_mask(cfg.shape, p, seed=seed + 100)


def _validation_view(x: np.ndarray, mask: np.ndarray, frac: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(tensor, fit mask)`` for tuning: Ω split into a fitting part and a validation part (``frac`` of Ω); every
    entry outside Ω is NaN, so a run's held-out RRE is over the validation entries only, never the test entries."""
    fit, _ = split_mask(mask, frac, seed=seed + 555)
    return np.where(mask, x, np.nan), fit


def _eps_up(v: float) -> float | None:
    return min(3 * v, 0.9) if v < 0.9 else None


def _eps_down(v: float) -> float | None:
    return v / 10 if v > 1e-8 else None


def _lam_up(v: float) -> float | None:
    return 10 * v if 0 < v < 1e6 else None


def select_extending(evaluate, key: str, grid, *, up, down, name: str, extend: int = 2,
                     higher_is_better: bool = False) -> Selection:
    """:func:`icml25.tuning.select` over one knob; while the choice sits at an edge of the grid, the grid gets one
    more value beyond that edge (``up(max)`` / ``down(min)``, ``None`` where the knob has a boundary), at most
    ``extend`` times. Evaluations are cached, so extending costs one run per new value. ``at_edge`` of the result
    names a choice still at an edge (a boundary such as λ = 0, or the extension budget spent)."""
    cache: dict[float, float] = {}

    def ev(params: dict[str, Any]) -> float:
        v = params[key]
        if v not in cache:
            cache[v] = float(evaluate(params))
        return cache[v]

    g, added = sorted(grid), []
    while True:
        sel = select(ev, {key: g}, name=name, higher_is_better=higher_is_better)
        c = sel.params[key]
        nxt = up(max(g)) if c == max(g) else down(min(g)) if c == min(g) else None
        if nxt is None or len(added) >= extend or nxt in g:
            break
        g = sorted(g + [nxt])
        added.append(nxt)
    if added:
        sel.name = f"{name} (grid extended by {', '.join(f'{a:.3g}' for a in added)})"
    return sel


def _select_eps(cfg: Config, p: float, problem=None, rank: int | None = None, name: str = "",
                seed: int = VAL_SEED) -> tuple[Any, float]:
    """Fastest ε (accelerated lifted) whose validation RRE is within the margin of the direct solver's.

    ``problem(seed, p) -> (tensor, mask)`` builds the instance (default: the random CP problem); ε is chosen by
    fitting on 1 − ``val_frac`` of its Ω and scoring on the rest of Ω (:func:`_validation_view`)."""
    x, mask = (problem or (lambda sd, q: _problem(cfg, sd, q)))(seed, p)
    xv, fit = _validation_view(x, mask, cfg.val_frac, seed)
    kw = dict(rank=rank or cfg.rank, n_sweeps=cfg.n_sweeps, seed=seed, max_inner=cfg.max_inner)
    direct = timed_run(xv, fit, "direct", **kw)["test_rre"]

    def evaluate(params: dict[str, Any]) -> float:
        r = timed_run(xv, fit, "lifted-accel", tol=params["eps"], **kw)
        ok = r["test_rre"] <= (1 + cfg.accuracy_margin) * direct
        return r["total"] if ok else 1e3 + r["test_rre"]  # too inaccurate: ranked after every accurate ε

    sel = select_extending(evaluate, "eps", cfg.eps_grid, up=_eps_up, down=_eps_down, extend=cfg.grid_extend,
                           name=f"lifted+accel ε{name} at p = {p}")
    return sel, direct


def matched_error_gate(cfg: Config, what: str, p: float, lifted: list[float], direct: list[float]) -> Claim:
    """Gate of every speed claim: lifted's held-out RRE is at most (1 + margin)× the direct solver's, per seed."""
    return Claim.gate(
        claim=f"{what}, p = {p}: lifted + acceleration matches the direct solver's held-out error "
              f"(≤ {1 + cfg.accuracy_margin:.2f}×)",
        metric="held-out RRE", ours=lifted, higher_is_better=False, paired=True,
        controls={f"direct solver's held-out RRE × {1 + cfg.accuracy_margin:.2f}":
                  [(1 + cfg.accuracy_margin) * d for d in direct]},
        paper="speed is compared at matched accuracy: a speed-up at a worse error is not a speed-up")


def mean_predictor_rre(x: np.ndarray, mask: np.ndarray) -> float:
    """Held-out RRE of the trivial control that predicts the mean of the observed entries everywhere."""
    from richardson_tc.cp import relative_error

    test = ~mask & np.isfinite(x)
    return relative_error(x, np.full(x.shape, float(np.mean(x[mask]))), test) if test.any() else float("nan")


VARIANTS = ("direct", "direct-loop", "em", "em-tensorly", "lifted", "lifted-accel", "lifted-sampled", "released rule")
LABELS = {"direct": "direct (vectorised)", "direct-loop": "direct (official per-entry loop)", "em": "EM-ALS",
          "em-tensorly": "EM-ALS, tensorly parafac(mask=)",
          "lifted": "lifted", "lifted-accel": "lifted + accel", "lifted-sampled": "lifted, leverage-sampled",
          "released rule": "lifted + accel, released stop rule ε = 0.01"}


def speed_accuracy(cfg: Config, seeds: list[int], out: Path) -> Section:
    sec = Section("speed_accuracy")
    sels, eps_of = {}, {}
    for p in cfg.ps:
        sel, _ = _select_eps(cfg, p)
        sels[f"p = {p}"] = sel
        eps_of[p] = sel.params["eps"]
    res: dict[tuple[float, str], list[dict[str, Any]]] = {}
    for s in seeds:
        for p in cfg.ps:
            x, mask = _problem(cfg, s, p)
            kw = dict(rank=cfg.rank, n_sweeps=cfg.n_sweeps, seed=s, max_inner=cfg.max_inner)
            for v in VARIANTS:
                if v == "released rule":
                    r = timed_run(x, mask, "lifted-accel", tol=0.01, stop_rule="official", **kw)
                else:
                    r = timed_run(x, mask, v, tol=eps_of[p], loop_sweeps=cfg.loop_sweeps, **kw)
                r.pop("history")
                res.setdefault((p, v), []).append(r)
            res[(p, "direct-loop")][-1]["test_rre"] = res[(p, "direct")][-1]["test_rre"]  # identical iterates

    def vals(p, v, key):
        return [r[key] for r in res[(p, v)]]

    ps = list(cfg.ps)
    p_lo = min([q for q in ps if q >= 0.1] or ps)
    for p in [q for q in (0.1, 0.5, 0.9) if q in ps] or [p_lo]:
        gate = matched_error_gate(cfg, f"random CP {cfg.shape}", p, vals(p, "lifted-accel", "test_rre"),
                                  vals(p, "direct", "test_rre"))
        sec.add(gate)
        sec.add(Claim.compare(
            claim=f"Lifted + acceleration is faster than a vectorised direct masked solver at matched held-out error "
                  f"(p = {p})",
            metric="total solve time (s)", ours=vals(p, "lifted-accel", "total"), baseline=vals(p, "direct", "total"),
            baseline_name=LABELS["direct"], higher_is_better=False, paired=True, gates=[gate.claim],
            paper="abstract: 'can be 100x faster than direct methods'; note: against a grouped BLAS direct solver "
                  "the gain is ≈ pR/k and can be < 1 at small p", note=sels[f"p = {p}"].note()))
        sec.add(Claim.compare(
            claim=f"Lifted + acceleration is faster than the official-style direct loop at matched held-out error "
                  f"(p = {p})",
            metric="total solve time (s)", ours=vals(p, "lifted-accel", "total"),
            baseline=vals(p, "direct-loop", "total"), baseline_name=LABELS["direct-loop"], higher_is_better=False,
            paired=True, paper=LOGS, gates=[gate.claim], note=f"{sels[f'p = {p}'].note()}; loop total extrapolated "
            f"from {cfg.loop_sweeps} measured sweep(s); the released code's solver, kept for comparison with its logs "
            "(the speed-up that matters is against the vectorised solver)"))
        margin = cfg.accuracy_margin * float(np.mean(vals(p, "direct", "test_rre")))
        sec.add(Claim.compare(
            claim=f"Lifted + acceleration reaches the direct solver's held-out error (within "
                  f"{cfg.accuracy_margin:.0%}, p = {p})", metric="held-out RRE", ours=vals(p, "lifted-accel", "test_rre"),
            baseline=vals(p, "direct", "test_rre"), baseline_name=LABELS["direct"], higher_is_better=False,
            margin=-margin, paired=True, note=sels[f"p = {p}"].note() + "; the per-entry loop has the same iterates",
            paper="official logs, random CP-16 100³, p = 0.1: RRE² 0.0023 (direct) vs 0.0050 (lifted+accel, "
                  "ε = 0.01)"))
    for p in sorted({p_lo, max(ps)}):
        em_step, tl_step = vals(p, "em", "step_median"), vals(p, "em-tensorly", "step_median")
        sec.add(Claim.compare(
            claim=f"EM-ALS costs no more per ALS step than the released EM-ALS baseline (tensorly parafac(mask=), "
                  f"p = {p})", metric="seconds per ALS step (median)", ours=em_step, baseline=tl_step,
            baseline_name=LABELS["em-tensorly"], higher_is_better=False, paired=True, kind="target",
            margin=-0.05 * float(np.mean(tl_step)),
            paper="issue 67: our EM-ALS was 0.41–0.47× the released one per step (per-call passes over the full "
                  "array); target: at least as fast (within 5 %)",
            note="Ω prepared once per run (no per-call rebuild or finiteness pass), the loss computed only when a "
                 "stop rule reads it; ours re-imputes before every mode update, tensorly once per sweep"))
    sec.add(Claim.compare(
        claim=f"EM-ALS (one inner step) is less accurate than lifting at low p (p = {p_lo})", metric="held-out RRE",
        ours=vals(p_lo, "lifted-accel", "test_rre"), baseline=vals(p_lo, "em", "test_rre"),
        baseline_name=LABELS["em"], higher_is_better=False, paired=True,
        paper="official logs, p = 0.1: √RRE 0.158 (lifted+accel) vs 0.338 (EM) hyperspectral; 0.375 vs 0.547 MRI"))
    sec.add(Claim.compare(
        claim=f"EM-ALS as tensorly runs it (parafac(mask=)) is less accurate than lifting at low p (p = {p_lo})",
        metric="held-out RRE", ours=vals(p_lo, "lifted-accel", "test_rre"), baseline=vals(p_lo, "em-tensorly", "test_rre"),
        baseline_name=LABELS["em-tensorly"], higher_is_better=False, paired=True,
        paper="the repo's EM-ALS baseline (parafac_als, one inner step); tensorly #198: masking 'greatly slows "
              "convergence' beyond ~10 % missing",
        note="same N(0, 0.1²) start; tensorly imputes once per sweep, ours before every mode update"))
    sec.add(Claim.compare(
        claim=f"Acceleration cuts the inner updates at the same ε (p = {p_lo})", metric="inner updates per ALS step",
        ours=vals(p_lo, "lifted-accel", "updates"), baseline=vals(p_lo, "lifted", "updates"),
        baseline_name="lifted without acceleration", higher_is_better=False, paired=True,
        paper="note: acceleration cuts inner steps about 2× (audit: 2–4× on single blocks)"))
    p_hi = max(ps)
    if p_hi > p_lo:
        lift_ratio = [a / b for a, b in zip(vals(p_hi, "lifted-accel", "total"), vals(p_lo, "lifted-accel", "total"))]
        dir_ratio = [a / b for a, b in zip(vals(p_hi, "direct", "total"), vals(p_lo, "direct", "total"))]
        sec.add(Claim.compare(
            claim=f"Direct time grows with p while lifted time does not (time at p = {p_hi} / time at p = {p_lo})",
            metric="time ratio", ours=lift_ratio, baseline=dir_ratio, baseline_name=LABELS["direct"],
            higher_is_better=False, paired=True,
            paper="official logs: direct time linear in p; lifted time roughly flat in p"))
    sec.add(Claim.compare(
        claim=f"A leverage-sampled inner update is cheaper than an exact lifted update (p = {p_lo})",
        metric="seconds per inner update",
        ours=[r["total"] / (r["updates"] * cfg.n_sweeps * len(cfg.shape)) for r in res[(p_lo, "lifted-sampled")]],
        baseline=[r["total"] / (r["updates"] * cfg.n_sweeps * len(cfg.shape)) for r in res[(p_lo, "lifted")]],
        baseline_name="exact lifted update", higher_is_better=False, paired=True, kind="target",
        paper="paper: leverage-score sampled inner solves make each step sublinear in ∏ I_k (no CP numbers; the "
              "released CP runs are all exact)",
        note=f"{cfg.shape}: sampling draws 64·R of the {int(np.prod(cfg.shape[1:]))} Khatri–Rao rows per step"))

    rows = []
    for p in ps:
        d, lp = np.mean(vals(p, "direct", "total")), np.mean(vals(p, "direct-loop", "total"))
        lp_step = np.median(vals(p, "direct-loop", "step_median"))
        for v in VARIANTS:
            t = np.mean(vals(p, v, "total"))
            k = float(np.mean(vals(p, v, "updates")))
            step = float(np.median(vals(p, v, "step_median")))
            lifted = v in ("lifted", "lifted-accel", "lifted-sampled")
            rows.append([p, LABELS[v], eps_of[p] if lifted else "", float(t), 1e3 * step, k,
                         float(np.mean(vals(p, v, "test_rre"))), float(d / t), float(lp / t), float(lp_step / step),
                         p * cfg.rank / k if lifted or v == "released rule" else ""])
    sec.table(f"CP completion, random rank-{cfg.rank} {cfg.shape}, {cfg.n_sweeps} sweeps (mean over seeds; per-step "
              f"figures are medians)",
              ["p", "solver", "ε", "total s", "ms / ALS step", "inner updates / step", "held-out RRE",
               "speed-up vs direct", "speed-up vs loop", "per-step speed-up vs loop", "pR/k (predicted vs direct)"],
              rows)
    cols, srows = selections_table(sels)
    sec.table("Lifted ε chosen on a validation split of the validation instance's Ω (fastest ε whose validation RRE "
              "is within the accuracy margin of direct's)",
              cols, srows)
    sec.notes += [s.note() for s in sels.values()]
    sec.tables.update(_memory_table(cfg, seeds[0], eps_of))
    sec.figures += _figures(cfg, res, out)
    return sec


def large_tensor(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Speed at matched held-out error on a 10⁶-entry random CP tensor (``large_shape``) (the paper's 100³), against the vectorised
    direct solver; ε chosen on a validation split of a validation instance's Ω at this size, as in
    :func:`speed_accuracy`."""
    sec = Section("large_tensor")
    if not cfg.large_shape:
        return sec
    big = replace(cfg, shape=tuple(cfg.large_shape))
    seeds = seeds[:cfg.large_seeds]
    rows = []
    for p in cfg.large_ps:
        sel, _ = _select_eps(big, p, name=f" at {tuple(cfg.large_shape)}")
        eps = sel.params["eps"]
        res: dict[str, list[dict[str, Any]]] = {}
        for s in seeds:
            x, mask = _problem(big, s, p)
            kw = dict(rank=cfg.rank, n_sweeps=cfg.n_sweeps, seed=s, max_inner=cfg.max_inner)
            for v in ("direct", "lifted-accel", "em"):
                r = timed_run(x, mask, v, tol=eps, **kw)
                r.pop("history")
                res.setdefault(v, []).append(r)
        what = f"random CP {tuple(cfg.large_shape)} ({int(np.prod(cfg.large_shape)):,} entries)"
        gate = matched_error_gate(cfg, what, p, [r["test_rre"] for r in res["lifted-accel"]],
                                  [r["test_rre"] for r in res["direct"]])
        sec.add(gate)
        sec.add(Claim.compare(
            claim=f"{what}: lifted + acceleration is faster than a vectorised direct masked solver at matched "
                  f"held-out error (p = {p})", metric="total solve time (s)",
            ours=[r["total"] for r in res["lifted-accel"]], baseline=[r["total"] for r in res["direct"]],
            baseline_name=LABELS["direct"], higher_is_better=False, paired=True, gates=[gate.claim],
            paper="abstract: 'can be 100x faster than direct methods' (random CP 100³ among the paper's tensors)",
            note=sel.note()))
        for v in ("direct", "lifted-accel", "em"):
            rs = res[v]
            rows.append([p, LABELS[v], eps if v == "lifted-accel" else "", float(np.mean([r["total"] for r in rs])),
                         float(np.mean([r["updates"] for r in rs])), float(np.mean([r["test_rre"] for r in rs])),
                         float(np.mean([d["total"] / r["total"] for d, r in zip(res["direct"], rs)]))])
        sec.notes.append(sel.note())
    sec.table(f"Random rank-{cfg.rank} CP {tuple(cfg.large_shape)}, {cfg.n_sweeps} sweeps, {len(seeds)} seeds (mean)",
              ["p", "solver", "ε", "total s", "inner updates / step", "held-out RRE", "speed-up vs direct"], rows)
    return sec


EPS_ROWS = (("step", False), ("step", True), ("official", False), ("official", True))


def every_eps(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Lifted at every ε of the paper's grid, ± acceleration, under our stop rule and the released one (CP, p fixed)."""
    sec = Section("every_eps")
    p = cfg.eps_p
    use = seeds[:cfg.eps_seeds]
    res: dict[tuple[str, bool, float], list[dict[str, Any]]] = {}
    direct = []
    for s in use:
        x, mask = _problem(cfg, s, p)
        kw = dict(rank=cfg.rank, n_sweeps=cfg.n_sweeps, seed=s, max_inner=cfg.max_inner)
        direct.append(timed_run(x, mask, "direct", **kw))
        for rule, acc in EPS_ROWS:
            for eps in cfg.eps_grid:
                r = timed_run(x, mask, "lifted-accel" if acc else "lifted", tol=eps, stop_rule=rule, **kw)
                r.pop("history")
                res.setdefault((rule, acc, eps), []).append(r)
    d_t = float(np.mean([r["total"] for r in direct]))
    d_e = float(np.mean([r["test_rre"] for r in direct]))
    rows = [["direct (vectorised)", "", "", d_t, 1.0, d_e, 1.0]]
    for (rule, acc, eps), v in res.items():
        t = float(np.mean([r["total"] for r in v]))
        e = float(np.mean([r["test_rre"] for r in v]))
        rows.append([("ours (block step rule)" if rule == "step" else "released (loss decrease)")
                     + (" + accel" if acc else ""), eps, float(np.mean([r["updates"] for r in v])), t, d_t / t, e,
                     e / d_e])
    sec.table(f"Lifted at every ε ± acceleration, both stop rules (random CP-{cfg.rank} {cfg.shape}, p = {p}, "
              f"{cfg.n_sweeps} sweeps, mean over {len(use)} seeds)",
              ["solver / stop rule", "ε", "inner updates / step", "total s", "speed-up vs direct", "held-out RRE",
               "RRE / direct's"], rows)
    return sec


def _data_problem(cfg: Config, kind: str, seed: int, p: float) -> tuple[np.ndarray, np.ndarray]:
    shape = cfg.video_shape if kind == "video" else cfg.data_shape
    x = make_tensor(kind, shape=shape, rank=4, seed=seed)  # tucker: core (4, 4, 4) as the paper; digits ignores it
    return x, sample_mask(x.shape, p, seed=seed + 100)


DATA_VARIANTS = ("direct", "em", "em-tensorly", "lifted-accel")


def _edge_summary(sels: list[Selection], key: str) -> tuple[str, str, str]:
    """(chosen values per seed, extension summary, edge summary) of per-seed selections."""
    chosen = ", ".join(f"{sl.params[key]:.3g}" for sl in sels)
    grids = sorted({v for sl in sels for v in sl.grid[key]})
    edges = [sl.at_edge[0] for sl in sels if sl.at_edge]
    return chosen, ", ".join(f"{v:.3g}" for v in grids), (f"{len(edges)} of {len(sels)}: " + "; ".join(edges)
                                                         if edges else "none")


def more_tensors(cfg: Config, seeds: list[int], out: Path) -> Section:
    """The issue's other tensors: random Tucker (4,4,4), a Gaussian tensor, digits 8×8×1797, a blob video.

    ε is chosen per seed on a validation split of that seed's own Ω (the digits tensor is one fixed tensor, so a
    separate validation instance would score on other seeds' test entries); an ε at an edge of the paper's grid
    extends the grid (×3 up to 0.9, ÷10 down) up to ``grid_extend`` times."""
    sec = Section("more_tensors")
    sels: dict[tuple[str, float], list[Selection]] = {}
    res: dict[tuple[str, float, str], list[dict[str, Any]]] = {}
    seeds = seeds[:cfg.data_seeds]
    for kind in cfg.data_kinds:
        rank = cfg.digits_rank if kind == "digits" else cfg.rank
        for p in cfg.data_ps:
            for s in seeds:
                problem = (lambda sd, q, k=kind: _data_problem(cfg, k, sd, q))
                sel, _ = _select_eps(cfg, p, problem=problem, rank=rank, name=f" ({kind}, seed {s})", seed=s)
                sels.setdefault((kind, p), []).append(sel)
                x, mask = problem(s, p)
                res.setdefault((kind, p, "mean"), []).append({"test_rre": mean_predictor_rre(x, mask)})
                for v in DATA_VARIANTS:
                    r = timed_run(x, mask, v, rank=rank, n_sweeps=cfg.n_sweeps, seed=s, tol=sel.params["eps"],
                                  max_inner=cfg.max_inner)
                    r.pop("history")
                    res.setdefault((kind, p, v), []).append(r)

    def vals(kind, p, v, key):
        return [r[key] for r in res[(kind, p, v)]]

    def note(kind, p):
        chosen, grid, edges = _edge_summary(sels[(kind, p)], "eps")
        return f"ε per seed (validation split of its Ω): {chosen}; grid {grid}; at an edge: {edges}"

    p_lo = min(cfg.data_ps)
    for kind in cfg.data_kinds:
        d = vals(kind, p_lo, "direct", "test_rre")
        gates = []
        for v in ("direct", "lifted-accel"):
            g = Claim.gate(
                claim=f"{kind}, p = {p_lo}: {LABELS[v]} has learned the tensor (held-out RRE below the mean predictor)",
                metric="held-out RRE", ours=vals(kind, p_lo, v, "test_rre"), higher_is_better=False, paired=True,
                controls={"predict the mean of the observed entries": vals(kind, p_lo, "mean", "test_rre")})
            sec.add(g)
            gates.append(g.claim)
        sec.add(Claim.compare(
            claim=f"{kind}: lifted + acceleration reaches the direct solver's held-out error (within "
                  f"{cfg.accuracy_margin:.0%}, p = {p_lo})", metric="held-out RRE",
            ours=vals(kind, p_lo, "lifted-accel", "test_rre"), baseline=d, baseline_name=LABELS["direct"],
            higher_is_better=False, margin=-cfg.accuracy_margin * float(np.mean(d)), paired=True,
            paper="official logs: lifted reaches the direct accuracy (random Tucker 100³, p = 0.1: RRE² ≈ 0 for both)",
            note=note(kind, p_lo), gates=gates))
        sec.add(Claim.compare(
            claim=f"{kind}: EM-ALS (one inner step) is less accurate than lifting at low p (p = {p_lo}, no ridge)",
            metric="held-out RRE", ours=vals(kind, p_lo, "lifted-accel", "test_rre"),
            baseline=vals(kind, p_lo, "em", "test_rre"), baseline_name=LABELS["em"], higher_is_better=False,
            paired=True, paper="official logs, random Tucker 100³, p = 0.1: RRE² ≈0 (lifted) vs 0.0256 (EM-ALS)",
            note=note(kind, p_lo) + ("; with a ridge tuned alike: see the ridge experiment"
                                     if kind in cfg.ridge_kinds else ""), gates=gates[1:]))
    rows = []
    for (kind, p, v), rs in res.items():
        if v == "mean":
            rows.append([kind, p, "control: predict the observed mean", "", "", "",
                         float(np.mean([r["test_rre"] for r in rs])), ""])
            continue
        d = float(np.mean(vals(kind, p, "direct", "total")))
        t = float(np.mean([r["total"] for r in rs]))
        rows.append([kind, p, LABELS[v], float(np.exp(np.mean(np.log([sl.params["eps"] for sl in sels[(kind, p)]]))))
                     if v == "lifted-accel" else "", t, float(np.mean([r["updates"] for r in rs])),
                     float(np.mean([r["test_rre"] for r in rs])), d / t])
    shapes = {k: (cfg.video_shape if k == "video" else (8, 8, 1797) if k == "digits" else cfg.data_shape)
              for k in cfg.data_kinds}
    sec.table(f"Further tensors, {cfg.n_sweeps} sweeps, rank {cfg.rank} (digits {cfg.digits_rank}), mean over seeds "
              f"(ε: geometric mean of the per-seed choices): " + "; ".join(f"{k} {v}" for k, v in shapes.items()),
              ["tensor", "p", "solver", "ε", "total s", "inner updates / step", "held-out RRE", "speed-up vs direct"],
              rows)
    srows = []
    for (kind, p), sl in sels.items():
        chosen, grid, edges = _edge_summary(sl, "eps")
        srows.append([kind, p, chosen, grid, edges])
    sec.table(f"Lifted ε chosen per seed on a validation split ({cfg.val_frac:.0%}) of that seed's Ω: the fastest ε "
              f"whose validation RRE is within {cfg.accuracy_margin:.0%} of direct's (paper grid "
              f"{list(cfg.eps_grid)}, extended at an edge)",
              ["tensor", "p", "ε per seed", "grid evaluated (union over seeds)", "still at an edge"], srows)
    for kind, p in sels:
        sec.notes.append(f"ε ({kind}, p = {p}): " + note(kind, p))
    return sec


RIDGE_VARIANTS = ("direct", "em", "em-tensorly", "lifted-accel")


def ridge(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Ridge λ on the over-fitting tensors, tuned alike for every solver: the same λ grid (extended ×10 at its top
    edge), chosen per seed and solver on a validation split of that seed's Ω (lowest validation RRE); then each
    solver is refit on all of Ω with λ = 0 and with its chosen λ and scored on the held-out entries."""
    sec = Section("ridge")
    p = min(cfg.data_ps)
    use = seeds[:cfg.ridge_seeds]
    res: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    lams: dict[tuple[str, str], list[Selection]] = {}
    for kind in cfg.ridge_kinds:
        rank = cfg.digits_rank if kind == "digits" else cfg.rank
        for s in use:
            x, mask = _data_problem(cfg, kind, s, p)
            xv, fit = _validation_view(x, mask, cfg.val_frac, s)
            kw = dict(rank=rank, n_sweeps=cfg.n_sweeps, seed=s, tol=cfg.ridge_eps, max_inner=cfg.max_inner)
            for v in RIDGE_VARIANTS:
                sel = select_extending(lambda prm, v=v, xv=xv, fit=fit, kw=kw:
                                       timed_run(xv, fit, v, ridge=prm["ridge"], **kw)["test_rre"],
                                       "ridge", cfg.ridge_grid, up=_lam_up, down=lambda _: None,
                                       extend=cfg.grid_extend, name=f"{kind} {v} λ (seed {s})")
                lams.setdefault((kind, v), []).append(sel)
                r0 = timed_run(x, mask, v, ridge=0.0, **kw)
                r = r0 if sel.params["ridge"] == 0 else timed_run(x, mask, v, ridge=sel.params["ridge"], **kw)
                res.setdefault((kind, v, "λ = 0"), []).append(r0)
                res.setdefault((kind, v, "tuned"), []).append(r)

    def vals(kind, v, which, key="test_rre"):
        return [r[key] for r in res[(kind, v, which)]]

    def note(kind, v):
        chosen, grid, edges = _edge_summary(lams[(kind, v)], "ridge")
        return f"{LABELS[v]}: λ per seed {chosen} (grid {grid}; at an edge: {edges})"

    for kind in cfg.ridge_kinds:
        for v in ("direct", "lifted-accel"):
            sec.add(Claim.compare(
                claim=f"{kind}: a ridge λ tuned on a validation split of Ω lowers the held-out RRE of "
                      f"{LABELS[v]} (p = {p})", metric="held-out RRE", ours=vals(kind, v, "tuned"),
                baseline=vals(kind, v, "λ = 0"), baseline_name=f"{LABELS[v]}, λ = 0", higher_is_better=False,
                paired=True, kind="target",
                paper="not in the paper (official L2_REGULARIZATION_STRENGTH = 0); the issue: 'optional ridge'",
                note=note(kind, v)))
        sec.add(Claim.compare(
            claim=f"{kind}: EM-ALS is less accurate than lifting at low p with a ridge tuned alike (p = {p})",
            metric="held-out RRE", ours=vals(kind, "lifted-accel", "tuned"), baseline=vals(kind, "em", "tuned"),
            baseline_name=f"{LABELS['em']}, tuned λ", higher_is_better=False, paired=True,
            paper="official logs, p = 0.1: EM-ALS less accurate than lifting (hyperspectral, MRI, random CP/Tucker)",
            note=note(kind, "lifted-accel") + "; " + note(kind, "em")))
    rows = []
    for kind in cfg.ridge_kinds:
        for v in RIDGE_VARIANTS:
            chosen, _, edges = _edge_summary(lams[(kind, v)], "ridge")
            rows.append([kind, LABELS[v], float(np.mean(vals(kind, v, "λ = 0"))),
                         float(np.mean(vals(kind, v, "tuned"))), chosen, edges,
                         float(np.mean(vals(kind, v, "tuned", "total")))])
    sec.table(f"Ridge λ tuned alike (grid {list(cfg.ridge_grid)}, ×10 at the top edge; per seed on a "
              f"{cfg.val_frac:.0%} validation split of Ω), p = {p}, {len(use)} seeds, {cfg.n_sweeps} sweeps; "
              f"lifted + accel at ε = {cfg.ridge_eps}; an all-zero model has held-out RRE 1",
              ["tensor", "solver", "held-out RRE, λ = 0", "held-out RRE, tuned λ", "λ per seed", "λ at an edge",
               "total s (tuned)"], rows)
    return sec


def sampling(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Accuracy of the leverage-sampled lifted solver against the rows s = c·R drawn per inner update."""
    sec = Section("sampling")
    p, r_ = cfg.sampling_p, cfg.rank
    j = int(np.prod(cfg.shape[1:]))
    res: dict[Any, list[dict[str, Any]]] = {}
    for s in seeds:
        x, mask = _problem(cfg, s, p)
        kw = dict(rank=r_, n_sweeps=cfg.n_sweeps, seed=s, tol=1e-3, max_inner=cfg.max_inner)
        for v in ("direct", "lifted"):
            res.setdefault(v, []).append(timed_run(x, mask, v, **kw))
        for c in cfg.sample_factors:
            res.setdefault(c, []).append(timed_run(x, mask, "lifted-sampled", n_samples=c * r_, **kw))

    def vals(k, key="test_rre"):
        return [r[key] for r in res[k]]

    def per_update(k):
        return [r["total"] / (r["updates"] * cfg.n_sweeps * len(cfg.shape)) for r in res[k]]

    lo, hi = min(cfg.sample_factors), max(cfg.sample_factors)
    default = 64 if 64 in cfg.sample_factors else hi
    sec.add(Claim.compare(
        claim=f"More leverage-sampled rows per update give a lower held-out RRE (s = {hi}·R vs {lo}·R, p = {p})",
        metric="held-out RRE", ours=vals(hi), baseline=vals(lo), baseline_name=f"s = {lo}·R", higher_is_better=False,
        paired=True, kind="target",
        paper="paper: approximate inner solves by leverage-score sampling (theorem and constants not confirmed here)"))
    margin = cfg.accuracy_margin * float(np.mean(vals("lifted")))
    sec.add(Claim.compare(
        claim=f"Lifted with leverage-sampled inner solves (s = {default}·R rows{', our default' if default == 64 else ''})"
              f" reaches the exact lifted "
              f"solver's held-out RRE (within {cfg.accuracy_margin:.0%}, p = {p})", metric="held-out RRE",
        ours=vals(default), baseline=vals("lifted"), baseline_name="exact lifted (ε = 1e-3)",
        higher_is_better=False, margin=-margin, paired=True,
        paper="paper: approximate Richardson converges like the exact one given accurate enough inner solves",
        note=f"{cfg.shape}, R = {r_}: {default * r_} of J = {j} Khatri–Rao rows per update; fresh samples each "
             f"update; the official Kronecker code's 200·d² rows (d = R columns here) would be {200 * r_ * r_} ≥ J"))
    rows = [["direct (vectorised)", "", "", float(np.mean(vals("direct", "total"))), "", 1.0,
             float(np.mean(vals("direct")))],
            ["lifted, exact (ε = 1e-3)", j, 1.0, float(np.mean(vals("lifted", "total"))),
             1e3 * float(np.mean(per_update("lifted"))), float(np.mean(vals("lifted", "updates"))),
             float(np.mean(vals("lifted")))]]
    for c in cfg.sample_factors:
        rows.append([f"lifted, sampled s = {c}·R", c * r_, min(c * r_ / j, 1.0), float(np.mean(vals(c, "total"))),
                     1e3 * float(np.mean(per_update(c))), float(np.mean(vals(c, "updates"))), float(np.mean(vals(c)))])
    sec.table(f"Leverage-sampled lifted vs rows per update (random CP-{r_} {cfg.shape}, p = {p}, {cfg.n_sweeps} "
              f"sweeps, mean over {len(seeds)} seeds; s ≥ J falls back to the exact solve)",
              ["solver", "rows s", "s / J", "total s", "ms / update", "updates / step", "held-out RRE"], rows)
    return sec


def _memory_table(cfg: Config, seed: int, eps_of: dict[float, float]) -> dict[str, Any]:
    p = max(cfg.ps)
    x, mask = _problem(cfg, seed, p)
    rows = []
    for v in ("direct", "em", "lifted-accel"):
        tracemalloc.start()
        timed_run(x, mask, v, rank=cfg.rank, n_sweeps=1, seed=seed, tol=eps_of[p])
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rows.append([LABELS[v], p, peak / 2**20, x.nbytes / 2**20])
    return {f"Peak memory of one sweep (tracemalloc, seed {seed})": (
        ["solver", "p", "peak MiB", "tensor MiB"], rows)}


def _figures(cfg: Config, res: dict, out: Path) -> list[str]:
    from icml25.plots import _plt, save_figure

    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for v in VARIANTS:
        t = [np.mean([r["total"] for r in res[(p, v)]]) for p in cfg.ps]
        e = [np.mean([r["test_rre"] for r in res[(p, v)]]) for p in cfg.ps]
        axes[0].plot(cfg.ps, t, marker="o", label=LABELS[v])
        if v != "direct-loop":
            axes[1].plot(cfg.ps, e, marker="o", label=LABELS[v])
    axes[0].set(xlabel="sample ratio p", ylabel="total time (s)", yscale="log", title="time (10 sweeps)")
    axes[1].set(xlabel="sample ratio p", ylabel="held-out RRE", yscale="log", title="accuracy")
    axes[0].legend(fontsize=6)
    save_figure(fig, out / "speed_accuracy.png", dpi=90)
    return ["speed_accuracy.png"]


def kronecker_black_box(cfg: Config, seeds: list[int], out: Path) -> Section:
    sec = Section("kronecker_black_box")
    dists, t_lift, t_dir = [], [], []
    tt_dists, t_tt_lift, t_tt_dir = [], [], []
    for s in seeds:
        rng = np.random.default_rng(s)
        shape, r = cfg.tucker_shape, 4
        x = make_tensor("tucker", shape=shape, rank=r, seed=s)
        x = x + 0.05 * np.std(x) * rng.standard_normal(shape)
        us = [rng.standard_normal((n, r)) for n in shape]
        mask = sample_mask(shape, 0.1, seed=s + 1)
        t0 = time.perf_counter()
        rows_kron = np.ones((int(mask.sum()), r ** len(shape)))
        idx = np.argwhere(mask)
        for k, u in enumerate(us):  # observed rows of ⊗_k U_k only (never the full design)
            rows_kron = (rows_kron.reshape(len(idx), *([r] * len(shape))) *
                         u[idx[:, k]].reshape(len(idx), *([1] * k), r, *([1] * (len(shape) - k - 1)))).reshape(
                len(idx), -1)
        ref = np.linalg.lstsq(rows_kron, x[mask], rcond=None)[0].reshape([r] * len(shape))
        t_dir.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        lif = lifted_richardson(KroneckerSolver(us), np.zeros([r] * len(shape)), (mask, x), tol=1e-10,
                                max_inner=5000, accelerate=True)
        t_lift.append(time.perf_counter() - t0)
        dists.append(_dist(lif.x, ref))
        tt_d, tt_l, tt_t = _tt_block(shape, s)
        tt_dists.append(tt_d)
        t_tt_lift.append(tt_l)
        t_tt_dir.append(tt_t)
    sec.add(Claim.threshold(
        claim="With a tensor-train core regression as the black box, lifting reaches the masked solution",
        metric="relative distance to lstsq on the observed rows of L ⊗ I ⊗ Rᵀ", ours=tt_dists, threshold=1e-6,
        higher_is_better=False, kind="property",
        paper="paper: the lifted solver takes any structured TD regression solver as a black box (CP, Tucker, TT)",
        note=f"{cfg.tucker_shape}, TT ranks (1, 3, 3, 1), middle core, p = 0.1, ε = 1e-10 with acceleration"))
    sec.add(Claim.threshold(
        claim="With a Tucker-core (Kronecker) regression as the black box, lifting reaches the masked solution",
        metric="relative distance to lstsq on the observed Kronecker rows", ours=dists, threshold=1e-6,
        higher_is_better=False, kind="property",
        paper="paper: the lifted solver takes any structured TD regression solver as a black box (CP, Tucker, TT)",
        note=f"{cfg.tucker_shape}, core 4×4×4, p = 0.1, ε = 1e-10 with acceleration"))
    sec.table("Kronecker (Tucker core) and TT core regressions at p = 0.1 (mean over seeds)",
              ["black box", "solver", "seconds"],
              [["Tucker core", "direct lstsq on the observed rows", float(np.mean(t_dir))],
               ["Tucker core", "lifted + accel (ε = 1e-10)", float(np.mean(t_lift))],
               ["TT core", "direct lstsq on the observed rows", float(np.mean(t_tt_dir))],
               ["TT core", "lifted + accel (ε = 1e-10)", float(np.mean(t_tt_lift))]])
    return sec


def _tt_block(shape: tuple[int, ...], seed: int, ranks: tuple[int, ...] = (1, 3, 3, 1), p: float = 0.1):
    """One TT-ALS core block (middle core) at sample ratio p: lifted with :class:`TTCoreSolver` vs lstsq on the
    observed rows of the explicit design ``L ⊗ I ⊗ Rᵀ``; returns (relative distance, lifted s, direct s)."""
    import tensorly as tl

    rng = np.random.default_rng(seed + 31)
    n = len(shape)
    ranks = (1, *([ranks[1]] * (n - 1)), 1)
    truth = [rng.standard_normal((ranks[j], shape[j], ranks[j + 1])) for j in range(n)]
    x = tl.tt_to_tensor(truth)
    x = x + 0.05 * np.std(x) * rng.standard_normal(shape)
    cores = [rng.standard_normal(c.shape) for c in truth]
    k = n // 2
    mask = sample_mask(shape, p, seed=seed + 32)
    block = TTCoreSolver(cores, k)
    t0 = time.perf_counter()
    obs = np.argwhere(mask)
    left_i = np.ravel_multi_index(tuple(obs[:, :k].T), shape[:k]) if k else np.zeros(len(obs), int)
    right_i = (np.ravel_multi_index(tuple(obs[:, k + 1:].T), shape[k + 1:]) if k + 1 < n
               else np.zeros(len(obs), int))
    a, b = block.left.shape[1], block.right.shape[0]
    rows = np.zeros((len(obs), a, shape[k], b))  # observed rows of L ⊗ I ⊗ Rᵀ  [|Ω|, r_{k−1}, I_k, r_k]
    rows[np.arange(len(obs)), :, obs[:, k], :] = block.left[left_i][:, :, None] * block.right[:, right_i].T[:, None, :]
    ref = np.linalg.lstsq(rows.reshape(len(obs), -1), x[mask], rcond=None)[0].reshape(a, shape[k], b)
    t_dir = time.perf_counter() - t0
    t0 = time.perf_counter()
    lif = lifted_richardson(block, cores[k], (mask, x), tol=1e-10, max_inner=5000, accelerate=True)
    return _dist(lif.x, ref), time.perf_counter() - t0, t_dir


def tt_completion(cfg: Config, seeds: list[int], out: Path) -> Section:
    """TT completion (:func:`richardson_tc.tt.tt_complete`) of a noisy TT-rank-3 tensor: direct masked core solves
    vs lifted Richardson (+ acceleration, ε = 1e-3) vs EM (one update per core step), same start and Ω per seed."""
    from richardson_tc.tt import tt_complete, tt_init, tt_reconstruct

    sec = Section("tt_completion")
    shape, r, p = cfg.tucker_shape, 3, 0.2
    res: dict[str, list[dict[str, Any]]] = {}
    for s in seeds:
        x = tt_reconstruct(tt_init(shape, (1, *([r] * (len(shape) - 1)), 1), seed=s + 41))
        x = x + 0.01 * np.std(x) * np.random.default_rng(s + 42).standard_normal(shape)
        mask = sample_mask(shape, p, seed=s + 43)
        for v in ("direct", "lifted", "em"):
            _, h = tt_complete(x, mask, rank=r, solver=v, tol=1e-3, accelerate=True, n_sweeps=cfg.n_sweeps, seed=s)
            res.setdefault(v, []).append({"test_rre": h["sweeps"][-1]["test_rre"], "total": h["seconds"],
                                          "updates": float(np.mean([st["updates"] for st in h["steps"]]))})

    def vals(v, key="test_rre"):
        return [r_[key] for r_ in res[v]]

    d = vals("direct")
    sec.add(Claim.compare(
        claim=f"TT completion: lifted + acceleration over the TT cores reaches the direct masked core solves' held-out "
              f"error (within {cfg.accuracy_margin:.0%}, p = {p})", metric="held-out RRE", ours=vals("lifted"),
        baseline=d, baseline_name="TT-ALS with direct masked core solves", higher_is_better=False,
        margin=-cfg.accuracy_margin * float(np.mean(d)), paired=True,
        paper="paper: the lifted solver takes any structured TD regression solver as a black box (CP, Tucker, TT)",
        note=f"{shape}, TT rank {r}, 1 % noise, {cfg.n_sweeps} sweeps, ε = 1e-3 (not tuned)"))
    sec.add(Claim.compare(
        claim=f"TT completion: EM (one lifted update per core step) is less accurate than lifting (p = {p})",
        metric="held-out RRE", ours=vals("lifted"), baseline=vals("em"), baseline_name="TT EM-ALS",
        higher_is_better=False, paired=True, paper="as for CP: one inner step = EM-ALS, inaccurate at low p"))
    sec.table(f"TT completion, {shape}, TT rank {r}, p = {p}, {cfg.n_sweeps} sweeps (mean over seeds)",
              ["core solver", "total s", "inner updates / core step", "held-out RRE"],
              [[{"direct": "direct masked core solves (per slice)", "lifted": "lifted + accel, ε = 1e-3",
                 "em": "EM (one update)"}[v], float(np.mean(vals(v, "total"))), float(np.mean(vals(v, "updates"))),
                float(np.mean(vals(v)))] for v in res])
    return sec


EXPERIMENTS = [block_fixed_point, rate_vs_p, speed_accuracy, large_tensor, every_eps, more_tensors, ridge, sampling,
               kronecker_black_box, tt_completion]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    return run_experiments("richardson-tc", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)
