"""Experiments 1-5 of :mod:`sggm.reproduce`, all on the exact law of the sampler: ``steps`` (KL vs N),
``horizon`` (KL vs T), ``topology`` (KL vs n and the max degree), ``normalisation`` and ``coupling``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from icml25.claims import Claim
from icml25.experiment import Section

from sggm.config import Config
from sggm.gaussian import GaussianGraphModel
from sggm.graphs import degrees, make_graph
from sggm.reproduce.common import FAMILIES, PAPER_NOTE, _fig, _kl, _model, _slope
from sggm.sde import VE, VP


def steps(cfg: Config, seeds: list[int], out: Path) -> Section:
    """KL(sampler ‖ data) per entry vs N at fixed T, exact and ε-perturbed score, regular and power-law graphs."""
    sec = Section("steps")
    curves = {(f, e): [] for f in FAMILIES for e in ("exact", "eps")}
    for s in seeds:
        for f in FAMILIES:
            m = _model(cfg, f, cfg.n_sweep, s)
            curves[(f, "exact")].append([_kl(m, cfg, n_steps=N) for N in cfg.N_grid])
            curves[(f, "eps")].append([_kl(m, cfg, n_steps=N, score_error=cfg.score_error) for N in cfg.N_grid])
    floor = {f: [_model(cfg, f, cfg.n_sweep, s).early_stopping_kl(cfg.t_min) for s in seeds] for f in FAMILIES}

    def fit(v, fl):
        """Slope over the N whose KL is >= 30x the early-stopping floor KL(p_t_min ‖ p_0) (at least 2 points)."""
        keep = [i for i, y in enumerate(v) if y >= 30 * fl] or [0, 1]
        keep = keep if len(keep) >= 2 else [0, 1]
        return _slope([cfg.N_grid[i] for i in keep], [v[i] for i in keep])

    slope = {(f, e): [fit(c, fl) for c, fl in zip(v, floor[f])] for (f, e), v in curves.items()}
    # the ε curve flattens at large N: its slope over the last two points
    tail = {k: [_slope(cfg.N_grid[-2:], c[-2:]) for c in v] for k, v in curves.items()}
    exact_slopes = slope[("regular", "exact")] + slope[("powerlaw", "exact")]
    sec.add(Claim.threshold(
        claim="With the exact score the discretisation error vanishes at least at the bound's rate in h = T/N "
              "(log-log slope of KL vs N ≤ -1; regular and power-law graphs pooled)",
        metric="slope of log KL vs log N", ours=exact_slopes, threshold=-1.0, higher_is_better=False, kind="paper",
        paper=f"Thms 4.1-4.3: discretisation term shrinks with the step size ({PAPER_NOTE})"))
    sec.add(Claim.threshold(
        claim="Exact-score Euler–Maruyama on a Gaussian converges like h² in KL: |slope + 2| ≤ 0.25",
        metric="|slope + 2|", ours=[abs(x + 2) for x in exact_slopes], threshold=0.25, higher_is_better=False,
        kind="property", paper="derived: the O(h) covariance error gives KL ∝ 1/N² (not stated in the paper)",
        note="fitted where KL >= 30x the early-stopping floor KL(p_t_min ‖ p_0); below, a cross term flattens it"))
    last = {k: [c[-1] for c in v] for k, v in curves.items()}
    sec.add(Claim.compare(
        claim="A score error leaves a term that more steps do not remove: at the largest N the ε-perturbed score's KL "
              "is above the exact score's (regular graphs)",
        metric=f"KL per entry at N={cfg.N_grid[-1]}", ours=last[("regular", "eps")],
        baseline=last[("regular", "exact")], baseline_name="exact score", higher_is_better=True, paired=True,
        kind="property", paper=f"score-estimation term of the bound, independent of N ({PAPER_NOTE})",
        note=f"ε = {cfg.score_error} (Σ_t⁻¹ → Σ_t⁻¹ + εI); tail slope of the ε curve "
             f"{np.mean(tail[('regular', 'eps')]):.2f} vs exact {np.mean(tail[('regular', 'exact')]):.2f}; property: "
             "the perturbed score is a fixed wrong drift, so as N → ∞ its sampler converges to a different Gaussian "
             "than the data while the exact score's converges to the data law (up to the t_min floor): the gap at "
             "large N is there by construction of the perturbation"))
    rows = []
    for i, N in enumerate(cfg.N_grid):
        rows.append([N] + [float(np.mean([c[i] for c in curves[k]])) for k in curves])
    sec.table(f"KL per entry vs N (mean over seeds; n = {cfg.n_sweep}, T = {cfg.T:g})",
              ["N"] + [f"{f} {e}" for f, e in curves], rows)
    sec.table("log-log slope of KL vs N (mean over seeds)",
              ["curve", "slope (N with KL >= 30 x floor)", "slope (last 2 N)", "early-stopping floor KL(p_t_min ‖ p_0)"],
              [[f"{f} {e}", float(np.mean(slope[(f, e)])), float(np.mean(tail[(f, e)])), float(np.mean(floor[f]))]
               for f, e in curves])

    def draw(plt):
        fig, ax = plt.subplots(figsize=(4.5, 3.2))
        for (f, e), v in curves.items():
            ax.loglog(cfg.N_grid, np.mean(v, axis=0), "o-" if e == "exact" else "s--", label=f"{f}, {e} score")
        ax.set_xlabel("N (steps)")
        ax.set_ylabel("KL per entry")
        ax.legend(fontsize=7)
        return fig, ax

    sec.figures.append(_fig(out, "kl_vs_steps.png", draw))
    return sec


# ---------------------------------------------------------------------------------------------------------- 2. T
def horizon(cfg: Config, seeds: list[int], out: Path) -> Section:
    """KL vs T at fixed N (U shape), the score-error term vs T, the initialisation term vs T."""
    sec = Section("horizon")
    T_grid = list(cfg.T_grid)

    def curve(m, **kw):
        return [_kl(m, cfg, n_steps=cfg.T_sweep_steps, T=T, **kw) for T in T_grid]

    # T* chosen on a validation graph (not one of the test seeds)
    val = curve(_model(cfg, "regular", cfg.n_sweep, 10_000 + seeds[0]))
    i_star = int(np.argmin(val))
    T_star = T_grid[i_star]
    kl, eps_term, init_term = [], [], []
    for s in seeds:
        m = _model(cfg, "regular", cfg.n_sweep, s)
        kl.append(curve(m))
        ex = [_kl(m, cfg, n_steps=cfg.fine_steps, T=T, exact_prior=True) for T in T_grid]
        ep = [_kl(m, cfg, n_steps=cfg.fine_steps, T=T, exact_prior=True, score_error=cfg.score_error)
              for T in T_grid]
        eps_term.append([b - a for a, b in zip(ex, ep)])
        pr = [_kl(m, cfg, n_steps=cfg.fine_steps, T=T) for T in T_grid]
        init_term.append([b - a for a, b in zip(ex, pr)])
    kl, eps_term, init_term = np.array(kl), np.array(eps_term), np.array(init_term)
    edge = " (T* at the edge of the grid: no interior minimum)" if i_star in (0, len(T_grid) - 1) else ""
    sec.add(Claim.compare(
        claim=f"KL vs T is U-shaped: the T* chosen on a validation graph beats the shortest T = {T_grid[0]:g} "
              "(initialisation error)", metric=f"KL per entry at N = {cfg.T_sweep_steps}",
        ours=kl[:, i_star], baseline=kl[:, 0], baseline_name=f"T = {T_grid[0]:g}", higher_is_better=False,
        paired=True, kind="paper", paper=f"the bound guides the choice of T ({PAPER_NOTE})",
        note=f"T* = {T_star:g} chosen on a validation graph from {T_grid}{edge}"))
    sec.add(Claim.compare(
        claim=f"... and beats the longest T = {T_grid[-1]:g} at the same N (discretisation error grows with h = T/N)",
        metric=f"KL per entry at N = {cfg.T_sweep_steps}", ours=kl[:, i_star], baseline=kl[:, -1],
        baseline_name=f"T = {T_grid[-1]:g}", higher_is_better=False, paired=True, kind="paper",
        paper=f"the bound guides the choice of T ({PAPER_NOTE})", note=f"T* = {T_star:g}{edge}"))
    sec.add(Claim.compare(
        claim="The score-error term grows with T (exact p_T, very fine N isolate it)",
        metric="KL(ε score) - KL(exact score) per entry", ours=eps_term[:, -1], baseline=eps_term[:, 0],
        baseline_name=f"same at T = {T_grid[0]:g}", higher_is_better=True, paired=True, kind="paper",
        paper=f"score-estimation term ∝ ε² T ({PAPER_NOTE})",
        note=f"ours at T = {T_grid[-1]:g}, N = {cfg.fine_steps}, ε = {cfg.score_error}"))
    sec.add(Claim.compare(
        claim="The initialisation term (prior N(0, I) instead of the exact p_T) decays with T",
        metric="KL(prior start) - KL(exact p_T start) per entry", ours=init_term[:, -1], baseline=init_term[:, 0],
        baseline_name=f"same at T = {T_grid[0]:g}", higher_is_better=False, paired=True, kind="property",
        paper=f"initialisation term ∝ e^(-T) ({PAPER_NOTE})",
        note=f"ours at T = {T_grid[-1]:g}, N = {cfg.fine_steps}; property: the VP forward process contracts p_T "
             "onto N(0, I) exponentially in T (its mean and covariance are closed forms), so starting from the "
             "prior instead of p_T costs less the longer T, by construction of the forward SDE"))
    sec.table(f"KL per entry vs T (regular, n = {cfg.n_sweep}; mean over seeds)",
              ["T", f"KL (N = {cfg.T_sweep_steps})", f"score-error term (N = {cfg.fine_steps})",
               f"initialisation term (N = {cfg.fine_steps})"],
              [[T, float(kl[:, i].mean()), float(eps_term[:, i].mean()), float(init_term[:, i].mean())]
               for i, T in enumerate(T_grid)])

    def draw(plt):
        fig, ax = plt.subplots(figsize=(4.5, 3.2))
        ax.loglog(T_grid, kl.mean(0), "o-", label=f"KL, N = {cfg.T_sweep_steps}")
        ax.loglog(T_grid, np.abs(eps_term.mean(0)) + 1e-16, "s--", label="|score-error term|")
        ax.loglog(T_grid, np.abs(init_term.mean(0)) + 1e-16, "^:", label="|initialisation term|")
        ax.axvline(T_star, color="gray", lw=0.8)
        ax.set_xlabel("T")
        ax.set_ylabel("KL per entry")
        ax.legend(fontsize=7)
        return fig, ax

    sec.figures.append(_fig(out, "kl_vs_horizon.png", draw))
    return sec


# ---------------------------------------------------------------------------------------------------------- 3. n
def topology(cfg: Config, seeds: list[int], out: Path) -> Section:
    """KL per entry vs n, regular vs power-law at equal mean degree; tracking the max degree."""
    from scipy.stats import spearmanr

    sec = Section("topology")
    res = {f: np.zeros((len(seeds), len(cfg.n_grid))) for f in FAMILIES}
    dmax = {f: np.zeros((len(seeds), len(cfg.n_grid))) for f in FAMILIES}
    rhos = []  # per seed, from that seed's graphs alone
    for si, s in enumerate(seeds):
        for f in FAMILIES:
            for ni, n in enumerate(cfg.n_grid):
                m = _model(cfg, f, n, s)
                res[f][si, ni] = _kl(m, cfg)
                dmax[f][si, ni] = degrees(m.adjacency).max()
        rhos.append(float(spearmanr(np.concatenate([dmax[f][si] for f in FAMILIES]),
                                    np.concatenate([res[f][si] for f in FAMILIES])).statistic))
    sec.add(Claim.compare(
        claim=f"Power-law graphs have a larger error than regular graphs at equal n = {cfg.n_grid[-1]} and mean degree",
        metric="KL per entry", ours=res["powerlaw"][:, -1], baseline=res["regular"][:, -1],
        baseline_name=f"{cfg.mean_degree}-regular", higher_is_better=True, paired=True, kind="paper",
        paper=f"Fig. 1(c): error grows with n, power-law above regular ({PAPER_NOTE})"))
    sec.add(Claim.compare(
        claim="The power-law graphs' error per entry grows with n",
        metric="KL per entry", ours=res["powerlaw"][:, -1], baseline=res["powerlaw"][:, 0],
        baseline_name=f"power-law at n = {cfg.n_grid[0]}", higher_is_better=True, paired=True, kind="paper",
        paper=f"Fig. 1(c): error grows with graph size ({PAPER_NOTE})"))
    sec.add(spearman_claim(rhos, threshold=0.5, paper=f"the bound depends on graph topology ({PAPER_NOTE})"))
    rows = []
    for ni, n in enumerate(cfg.n_grid):
        rows.append([n] + [float(v) for f in FAMILIES for v in (res[f][:, ni].mean(), dmax[f][:, ni].mean())])
    sec.table(f"KL per entry vs n (N = {cfg.n_steps}, T = {cfg.T:g}, F = {cfg.n_features}; mean over seeds)",
              ["n", "regular KL", "regular d_max", "power-law KL", "power-law d_max"], rows)

    def draw(plt):
        fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
        for f in FAMILIES:
            axes[0].plot(cfg.n_grid, res[f].mean(0), "o-", label=f)
            axes[1].scatter(dmax[f].ravel(), res[f].ravel(), s=12, label=f)
        axes[0].set_xscale("log")
        axes[0].set_xlabel("n")
        axes[0].set_ylabel("KL per entry")
        axes[1].set_xlabel("max degree")
        axes[0].legend(fontsize=7)
        return fig, axes

    sec.figures.append(_fig(out, "kl_vs_size.png", draw))
    return sec


SPEARMAN_CLAIM = ("The error tracks the max degree (Spearman ρ between KL per entry and d_max over both families and "
                  "all n)")


def spearman_claim(rhos, *, threshold: float, paper: str) -> Claim:
    """The topology claim from the per-seed Spearman ρ's (each from that seed's graphs alone).

    Seeds that give the same ρ are not independent evidence: the ring lattices are the same graph in every seed and
    the rank order of (d_max, KL) over the n grid is the same in every seed, so ρ is often one number n times. Then
    it is one value, ``deterministic=True`` (its threshold comparison is exact, not a t-test over copies); when the
    seeds differ, the per-seed values are t-tested against the threshold."""
    rhos = [float(r) for r in rhos]
    if len(rhos) > 1 and len(set(rhos)) == 1:
        return Claim.threshold(
            claim=SPEARMAN_CLAIM, metric="Spearman ρ", ours=[rhos[0]], threshold=threshold, higher_is_better=True,
            kind="paper", deterministic=True, paper=paper,
            note=f"ρ computed per seed from that seed's graphs; all {len(rhos)} seeds gave the same ρ (the rank order "
                 "of d_max and KL over the n grid does not depend on the seed), so it is one value, not "
                 f"{len(rhos)} samples")
    return Claim.threshold(
        claim=SPEARMAN_CLAIM, metric="Spearman ρ per seed", ours=rhos, threshold=threshold, higher_is_better=True,
        kind="paper", paper=paper, note="ρ computed per seed from that seed's graphs; one-sample t-test over seeds")


# ---------------------------------------------------------------------------------------------------------- 4.
def normalisation(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Normalised vs combinatorial Laplacian (paradigm 1); standardised vs raw features (paradigm 2)."""
    sec = Section("normalisation")
    n = cfg.n_grid[-1]
    vals = {(f, lap): [] for f in FAMILIES for lap in ("combinatorial", "normalized")}
    lip = {k: [] for k in vals}
    struct = {"raw": [], "standardized": []}
    for s in seeds:
        for f, lap in vals:
            m = _model(cfg, f, n, s, laplacian=lap)
            vals[(f, lap)].append(_kl(m, cfg))
            lip[(f, lap)].append(1 + cfg.alpha * m.laplacian_eigenvalues.max())
        a = make_graph("powerlaw", cfg.joint_n * 2, mean_degree=cfg.mean_degree, seed=s)
        for key, std in (("raw", False), ("standardized", True)):
            m2 = GaussianGraphModel(paradigm="structure", graph=a, alpha=cfg.alpha, n_features=cfg.joint_features,
                                    standardize=std, seed=s, rho=1.0, noise_std=1.0)
            struct[key].append(m2.sampler_law(n_steps=cfg.n_steps, T=cfg.T, t_min=cfg.t_min).kl_per_entry)
    for f in FAMILIES:
        sec.add(Claim.compare(
            claim=f"Normalisation lowers the error: normalised Laplacian L_sym vs combinatorial L ({f}, n = {n})",
            metric="KL per entry", ours=vals[(f, "normalized")], baseline=vals[(f, "combinatorial")],
            baseline_name="combinatorial L", higher_is_better=False, paired=True, kind="property",
            paper=f"the analysis supports normalisation ({PAPER_NOTE})",
            note="the data law changes with the Laplacian: Σ_A = (I + αL)⁻¹ vs (I + αL_sym)⁻¹; property: the two "
                 "rows sample different target laws, and L_sym's spectrum lies in [0, 2] instead of [0, 2 d_max], "
                 "so the target with L_sym is better conditioned (1 + α μ_max in the table) by construction: the "
                 "row compares two problems, not two samplers of one"))
    sec.add(Claim.compare(
        claim="Feature standardisation lowers the structure-generation error (paradigm 2, A_ij ~ N(⟨x_i, x_j⟩, 1))",
        metric="KL per entry", ours=struct["standardized"], baseline=struct["raw"], baseline_name="raw features",
        higher_is_better=False, paired=True, kind="paper", paper=f"the analysis supports normalisation ({PAPER_NOTE})",
        note=f"n = {cfg.joint_n * 2} power-law graph, F = {cfg.joint_features}, X drawn from paradigm 1"))
    sec.table(f"Normalisation (n = {n}; mean over seeds)", ["graph", "Laplacian", "KL per entry", "1 + α μ_max"],
              [[f, lap, float(np.mean(vals[(f, lap)])), float(np.mean(lip[(f, lap)]))] for f, lap in vals])
    return sec


# ---------------------------------------------------------------------------------------------------------- 5.
def coupling(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Joint generation vs the two conditional paradigms as the coupling between X and A grows."""
    sec = Section("coupling")
    cs = list(cfg.couplings)
    joint, cond_x, cond_a = (np.zeros((len(seeds), len(cs))) for _ in range(3))
    for si, s in enumerate(seeds):
        a = make_graph("regular", cfg.joint_n, mean_degree=min(cfg.mean_degree, cfg.joint_n - 2),
                       seed=s)
        for ci, c in enumerate(cs):
            m = GaussianGraphModel(paradigm="joint", graph=a, alpha=cfg.alpha, n_features=cfg.joint_features,
                                   coupling=c, sde_x=VP(0.1, 20.0), sde_a=VE(0.2, 10.0))
            kw = dict(n_steps=cfg.joint_steps, T=1.0, t_min=cfg.t_min)
            joint[si, ci] = m.sampler_law(**kw).kl
            cond_x[si, ci] = m.sampler_law(generate="X", **kw).kl
            cond_a[si, ci] = m.sampler_law(generate="A", **kw).kl
    excess = joint - cond_x - cond_a
    sec.add(Claim.threshold(
        claim="Without coupling the joint system splits: joint KL = KL(X | A) + KL(A | X) exactly (c = 0)",
        metric="|joint - sum of conditionals|", ours=list(np.abs(excess[:, 0])), threshold=1e-9,
        higher_is_better=False, deterministic=True, kind="property",
        paper="by construction: independent blocks give independent reverse chains"))
    sec.add(Claim.compare(
        claim=f"The joint error grows with the coupling between X and A (c = {cs[-1]:g} vs c = 0)",
        metric="joint KL (total)", ours=joint[:, -1], baseline=joint[:, 0], baseline_name="c = 0",
        higher_is_better=True, paired=True, kind="paper",
        paper=f"Thm 4.3: cross terms through the Lipschitz constants of the partial scores ({PAPER_NOTE})"))
    for ci in range(1, len(cs)):
        sec.add(Claim.threshold(
            claim=f"The joint error exceeds the sum of the two conditional paradigms' errors at c = {cs[ci]:g}",
            metric="joint - (KL(X | A) + KL(A | X))", ours=list(excess[:, ci]), threshold=0.0,
            higher_is_better=True, kind="paper",
            paper=f"Thm 4.3 vs Thms 4.1-4.2: the joint bound adds cross terms ({PAPER_NOTE})"))
    sec.table(f"Joint vs conditional paradigms (n = {cfg.joint_n}, F = {cfg.joint_features}, N = {cfg.joint_steps}, "
              "T = 1; total KL, mean over seeds)", ["coupling c", "joint", "X given A", "A given X", "joint - sum"],
              [[c, float(joint[:, i].mean()), float(cond_x[:, i].mean()), float(cond_a[:, i].mean()),
                float(excess[:, i].mean())] for i, c in enumerate(cs)])

    def draw(plt):
        fig, ax = plt.subplots(figsize=(4.5, 3.2))
        ax.plot(cs, joint.mean(0), "o-", label="joint")
        ax.plot(cs, (cond_x + cond_a).mean(0), "s--", label="X|A + A|X")
        ax.set_xlabel("coupling c")
        ax.set_ylabel("KL (total)")
        ax.legend(fontsize=7)
        return fig, ax

    sec.figures.append(_fig(out, "kl_vs_coupling.png", draw))
    return sec
