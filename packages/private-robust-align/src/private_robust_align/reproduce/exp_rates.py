"""Part of the reproduction: see ``private_robust_align.reproduce``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from icml25.claims import Claim
from icml25.experiment import Section

from private_robust_align.config import Config
from private_robust_align.estimator import (
    oracle_mle,
)
from private_robust_align.mechanism import privacy_constant
from private_robust_align.metrics import fit_slope, l2_error, sigma_norm_error
from private_robust_align.reproduce.common import (
    CAP,
    EST,
    NO_NUMBERS,
    PROP_NAIVE,
    RATE,
    _data,
    _err,
    _fmt,
    _interval,
    _kappa,
    _naive,
    _ours,
    _plt,
    _release,
    _selections,
    _unc,
)


# ---------------------------------------------------------------------------------------------------- 3. rates
def rates(cfg: Config, seeds: list[int], out: Path) -> Section:
    sec = Section("rates")
    eps = 1.0
    dims = (cfg.dim, 10) if cfg.dim != 10 else (10,)
    res = {dim: {k: {n: [] for n in cfg.n_grid} for k in ("ours", "naive", "oracle", "sigma")} for dim in dims}
    for dim in dims:
        for s in seeds:
            for n in cfg.n_grid:
                d = _data(cfg, n, s, dim)
                z = _release(d, order="CTL", eps=eps, alpha=0.0, seed=s)
                th = _ours(cfg, seeds, eps).fit(d.x, z).theta_
                res[dim]["ours"][n].append(_err(th, d.theta_star))
                res[dim]["sigma"][n].append(sigma_norm_error(th, d.theta_star, d.x, l2=_kappa(cfg, seeds, "ours") / n))
                res[dim]["naive"][n].append(_err(_naive(cfg, seeds, eps).fit(d.x, z).theta_, d.theta_star))
                res[dim]["oracle"][n].append(_err(oracle_mle(d.x, d.y), d.theta_star))
    rows = []
    for dim in dims:
        for n in cfg.n_grid:
            r = res[dim]
            rows.append([dim, str(n), _fmt(r["ours"][n]), _fmt(r["sigma"][n]), _fmt(r["naive"][n]), _fmt(r["oracle"][n]),
                         f"{np.mean(r['ours'][n]) / np.mean(r['oracle'][n]):.2f}"])
    sec.table(f"Error vs n at α = 0, ε = {eps:g} (c(ε) = {privacy_constant(eps):.2f}): ‖θ̂ − θ*‖₂ (mean ± sd)",
              ["d", "n", "ours", "ours, ‖·‖_{Σ+λI}", EST["naive"], "oracle: sklearn MLE on clean y",
               "ours / oracle"], rows)
    ns = np.array(cfg.n_grid, dtype=float)
    slope_rows = []
    for dim in dims:
        per_seed = {k: [fit_slope(ns, [res[dim][k][n][i] for n in cfg.n_grid]).slope for i in range(len(seeds))]
                    for k in ("ours", "sigma", "naive", "oracle")}
        for k, lab in (("ours", "ours ℓ2"), ("sigma", "ours Σ-norm"), ("naive", EST["naive"]),
                       ("oracle", "oracle")):
            pooled = fit_slope(np.repeat(ns, len(seeds)), [v for n in cfg.n_grid for v in res[dim][k][n]])
            slope_rows.append([dim, lab, _fmt(per_seed[k]), f"{pooled.slope:.3f} [{pooled.lo:.3f}, {pooled.hi:.3f}]"])
        sec.add(_interval(
            claim=f"Error slope in n lies in [−0.65, −0.35] at α = 0 (d = {dim}, ε = {eps:g})",
            metric="slope of log ‖θ̂ − θ*‖₂ vs log n, per seed", values=per_seed["ours"], lo=-0.65, hi=-0.35,
            paper=RATE, note="pooled fit and the Σ-norm slope in the slopes table"))
        if dim == cfg.dim:
            sec.add(Claim.threshold(
                claim=f"The naive MLE's error does not vanish with n (d = {dim}, ε = {eps:g})",
                metric="slope of log error vs log n, naive MLE on privatized labels", ours=per_seed["naive"],
                threshold=-0.15, higher_is_better=True, kind="property",
                paper="without debiasing the privatized-label MLE is inconsistent (attenuated by 1 − 2ρ); "
                      + NO_NUMBERS, note=PROP_NAIVE))
            nmax = cfg.n_grid[-1]
            sec.add(Claim.compare(
                claim=f"Debiasing beats the naive MLE at n = {nmax} (ε = {eps:g}, α = 0)", metric="‖θ̂ − θ*‖₂",
                ours=res[dim]["ours"][nmax], baseline=res[dim]["naive"][nmax], baseline_name=EST["naive"],
                paper="the unbiased (debiased) loss is what makes the estimator consistent; " + NO_NUMBERS,
                higher_is_better=False, paired=True, kind="property",
                note=_selections(cfg, seeds[0])[EST["ours"]].note() + "; "
                + _selections(cfg, seeds[0])[EST["naive"]].note() + "; " + PROP_NAIVE))
    sec.table("Log-log slopes in n (per seed mean ± sd; pooled least squares with 95% CI)",
              ["d", "estimator", "per-seed slope", "pooled slope [95% CI]"], slope_rows)
    # --- slope in ε (ε ≤ 0.5)
    e_res = {e: [] for e in cfg.eps_rate}
    for s in seeds:
        d = _data(cfg, cfg.n_eps, 70_000 + s)
        for e in cfg.eps_rate:
            z = _release(d, order="CTL", eps=e, alpha=0.0, seed=s)
            e_res[e].append(_err(_ours(cfg, seeds, e).fit(d.x, z).theta_, d.theta_star))
    es = np.array(cfg.eps_rate)
    eslopes = [fit_slope(es, [e_res[e][i] for e in cfg.eps_rate]).slope for i in range(len(seeds))]
    sec.table(f"Error vs ε at α = 0 (n = {cfg.n_eps})", ["ε", "c(ε)", "‖θ̂ − θ*‖₂"],
              [[e, f"{privacy_constant(e):.2f}", _fmt(e_res[e])] for e in cfg.eps_rate])
    sec.add(_interval(
        claim=f"Error slope in ε is ≈ −1 for ε ≤ 0.5: in [−1.25, −0.75] (n = {cfg.n_eps}, α = 0)",
        metric="slope of log ‖θ̂ − θ*‖₂ vs log ε, per seed", values=eslopes, lo=-1.25, hi=-0.75, paper=RATE,
        note=f"per-seed slopes {_fmt(eslopes)}; the slope of log c(ε) itself over this range is "
             f"{fit_slope(es, [privacy_constant(e) for e in es]).slope:.3f}"))
    # --- the norm constraint at small n and ε
    n0, e0 = cfg.n_grid[0], min(cfg.eps_rate)
    con, unc = [], []
    for s in seeds:
        d = _data(cfg, n0, 80_000 + s)
        z = _release(d, order="CTL", eps=e0, alpha=0.0, seed=s)
        con.append(_err(_ours(cfg, seeds, e0).fit(d.x, z).theta_, d.theta_star))
        unc.append(_err(_unc(cfg, seeds, e0).fit(d.x, z).theta_, d.theta_star))
    sec.add(Claim.compare(
        claim=f"The norm constraint is needed at small n and ε (n = {n0}, ε = {e0:g})", metric="‖θ̂ − θ*‖₂",
        ours=con, baseline=unc, baseline_name=EST["unc"], higher_is_better=False, paired=True,
        paper="the debiased loss is unbounded below without ‖θ‖ ≤ B (small n, small ε); " + NO_NUMBERS,
        note=f"errors of diverged fits reported as {CAP:g}; "
             + _selections(cfg, seeds[0])[EST["unc"]].note()))
    # --- α exponent (measured, not assumed)
    a_shift = {o: {al: [] for al in cfg.alpha_exp} for o in ("CTL", "LTC")}
    for s in seeds:
        d = _data(cfg, cfg.n_sep, 90_000 + s)
        th0 = _ours(cfg, seeds, eps).fit(d.x, _release(d, order="CTL", eps=eps, alpha=0.0, seed=s)).theta_
        for o in ("CTL", "LTC"):
            for al in cfg.alpha_exp:
                th = _ours(cfg, seeds, eps).fit(d.x, _release(d, order=o, eps=eps, alpha=al, seed=s)).theta_
                a_shift[o][al].append(l2_error(th, th0))
    al_arr = np.array(cfg.alpha_exp)
    arow = []
    for o in ("CTL", "LTC"):
        per = [fit_slope(al_arr, [a_shift[o][al][i] for al in cfg.alpha_exp]).slope for i in range(len(seeds))]
        pooled = fit_slope(np.repeat(al_arr, len(seeds)), [v for al in cfg.alpha_exp for v in a_shift[o][al]])
        arow.append([o, _fmt(per), f"{pooled.slope:.3f} [{pooled.lo:.3f}, {pooled.hi:.3f}]",
                     "α (exponent 1)" if abs(pooled.slope - 1) < abs(pooled.slope - 0.5) else "√α (exponent 1/2)"])
        sec.add(Claim.threshold(
            claim=f"The {o} bias is linear in α, not √α (directional, ε = {eps:g}): per-seed exponent above 0.75",
            metric="slope of log shift vs log α per seed", ours=per, threshold=0.75, higher_is_better=True,
            kind="paper", paper="bias ∝ α (uniform coverage) or √α (reconstructed; exponent to confirm); "
                                + NO_NUMBERS,
            note=f"0.75 is the midpoint of the two candidate exponents 1/2 and 1, fixed before the run: the claim "
                 f"fails if the exponent is nearer √α; pooled exponent {pooled.slope:.3f} "
                 f"[{pooled.lo:.3f}, {pooled.hi:.3f}]"))
    sec.table(f"Measured α-exponent of the corruption-induced shift (directional, ε = {eps:g}, n = {cfg.n_sep}, "
              f"α ∈ {list(cfg.alpha_exp)})", ["order", "per-seed exponent", "pooled [95% CI]", "closer to"], arow)
    # figure
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for k, lab in (("ours", "ours (debiased, ‖θ‖≤B)"), ("naive", "naive MLE on z"), ("oracle", "oracle on clean y")):
        m = [np.mean(res[cfg.dim][k][n]) for n in cfg.n_grid]
        ax.plot(ns, m, "o-", label=lab)
    ax.plot(ns, np.mean(res[cfg.dim]["ours"][cfg.n_grid[0]]) * (ns / ns[0]) ** -0.5, "k:", label="slope −1/2")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel("‖θ̂ − θ*‖₂")
    ax.set_title(f"α = 0, ε = {eps:g}, d = {cfg.dim}")
    ax.legend(fontsize=7)
    fig.savefig(out / "rates.png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    sec.figures.append("rates.png")
    return sec
