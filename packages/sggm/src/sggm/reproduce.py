"""Side-by-side reproduction of the paper's qualitative claims at CPU scale (``sggm reproduce [--quick|--smoke]``).

The paper has figures, no numbers. Everything but the learned-score check is exact: the output law of the
Euler–Maruyama reverse system is propagated in closed form on Gaussian graph models (:mod:`sggm.gaussian`), so the
seeds only change the random graphs. Experiments:

1. ``steps``: KL vs N (log-log slope) with the exact and the ε-perturbed score, regular vs power-law graphs.
2. ``horizon``: KL vs T at fixed N (U shape); the score-error term isolated with the exact p_T and a very fine N;
   the initialisation term (prior N(0, I) vs the exact p_T). T* is chosen on a validation graph.
3. ``topology``: KL per entry vs n, regular vs power-law at equal n and mean degree; correlation with the max degree.
4. ``normalisation``: normalised vs combinatorial Laplacian (paradigm 1) and feature standardisation (paradigm 2).
5. ``coupling``: the joint model's KL vs the coupling, against the sum of the two conditional paradigms.
6. ``exactness``: exact law vs Monte-Carlo runs of the same sampler; eigenbasis vs dense recursion (speed-up).
7. ``learned``: a learned GDSS-style score vs the exact score (paradigm 1, Monte-Carlo KL).
8. ``standard_sets``: a trained joint-paradigm model (X and A) on community-small, grid and ego-like graphs, scored by
   GDSS's degree / clustering / orbit MMDs, against a structure-only score model (tuned alike) and an Erdős–Rényi
   control (the competence gates).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from icml25.claims import Claim, Report
from icml25.experiment import Section, run_experiments

from sggm.config import BUDGETS, Config
from sggm.gaussian import GaussianGraphModel, features_law_from_spectrum
from sggm.graphs import degrees, make_graph, ring_lattice_spectrum
from sggm.sde import VE, VP

FAMILIES = ("regular", "powerlaw")
PAPER_NOTE = "paper has figures only, no numbers"


def _model(cfg: Config, family: str, n: int, seed: int, **kw) -> GaussianGraphModel:
    a = make_graph(family, n, mean_degree=cfg.mean_degree, seed=seed)
    return GaussianGraphModel(paradigm="features", graph=a, alpha=cfg.alpha, n_features=cfg.n_features,
                              sde_x=VP(cfg.beta, cfg.beta), **kw)


def _kl(model: GaussianGraphModel, cfg: Config, **kw) -> float:
    kw = {"n_steps": cfg.n_steps, "T": cfg.T, "t_min": cfg.t_min, **kw}
    return model.sampler_law(**kw).kl_per_entry


def _slope(xs, ys) -> float:
    return float(np.polyfit(np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float)), 1)[0])


def _fig(out: Path, name: str, draw) -> str:
    from icml25.plots import _plt, save_figure

    plt = _plt()
    fig, axes = draw(plt)
    save_figure(fig, out / name, dpi=80)
    return name


# ---------------------------------------------------------------------------------------------------------- 1. N
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


# ---------------------------------------------------------------------------------------------------------- 6.
def _columns(X: np.ndarray) -> np.ndarray:
    """``X [chains, n, F]`` -> ``[chains·F, n]``: the i.i.d. feature columns of paradigm 1."""
    return np.swapaxes(X, 1, 2).reshape(-1, X.shape[1])


def _run_mc(m: GaussianGraphModel, cfg: Config, chains: int, seed: int) -> tuple[np.ndarray, float]:
    """``chains`` Monte-Carlo runs of the exact-score sampler from N(0, I): ``(X [chains, n, F], seconds)``."""
    from sggm.sampler import sample

    XT = np.random.default_rng(seed).standard_normal((chains, m.n, m.n_features))
    t0 = time.perf_counter()
    X, _ = sample(m.score_x, None, XT, m.adjacency, n_steps=cfg.n_steps, T=cfg.T, t_min=cfg.t_min, sde_x=m.sde_x,
                  seed=seed)
    return X, time.perf_counter() - t0


def _mc_kl_rel_err(m: GaussianGraphModel, law, X: np.ndarray) -> float:
    """Signed relative error of the plug-in Monte-Carlo KL per entry of the chains ``X`` against the exact law's."""
    from sggm.kl import monte_carlo_kl

    kl_mc = monte_carlo_kl(_columns(X), np.zeros(m.n), m.sigma_graph) * m.n_features / law.entries
    return (kl_mc - law.kl_per_entry) / law.kl_per_entry


def exactness(cfg: Config, seeds: list[int], out: Path) -> Section:
    """The exact law against Monte-Carlo runs of the same sampler (and Monte Carlo's cost at equal accuracy);
    eigenbasis vs dense recursion."""
    from sggm.kl import chains_for_tolerance

    sec = Section("exactness")
    rel_err, kl_gap, speed_dense, eq_dense, speed_mc, mc_kl_err = [], [], [], [], [], []
    t_large, kl_large = [], []
    ladder = list(cfg.mc_ladder)
    ladder_rms, m_star, m_timed, err_timed, t_ex, t_mc, m_exact_acc, exact_rel = [], [], [], [], [], [], [], []
    for s in seeds:
        m = _model(cfg, "powerlaw", cfg.mc_n, s)
        law = m.sampler_law(n_steps=cfg.n_steps, T=cfg.T, t_min=cfg.t_min)
        t0 = time.perf_counter()
        for _ in range(5):
            law = m.sampler_law(n_steps=cfg.n_steps, T=cfg.T, t_min=cfg.t_min)
        t_exact = (time.perf_counter() - t0) / 5

        def run_mc(chains: int, seed: int, m=m) -> tuple[np.ndarray, float]:
            return _run_mc(m, cfg, chains, seed)

        def kl_rel_err(X, m=m, law=law) -> float:
            return _mc_kl_rel_err(m, law, X)

        X, _ = run_mc(cfg.mc_chains, s)
        emp = np.cov(_columns(X), rowvar=False)
        rel_err.append(float(np.linalg.norm(emp - law.cov) / np.linalg.norm(law.cov)))
        mc_kl_err.append(abs(kl_rel_err(X)))
        # Monte Carlo at equal accuracy: the RMS relative error of its KL on disjoint batches of M chains of the pool,
        # the M at which it reaches cfg.mc_tolerance (fit rms² = b²/M² + c²/M), and a run of that many chains timed
        rms = [float(np.sqrt(np.mean([kl_rel_err(X[b * M:(b + 1) * M]) ** 2 for b in range(cfg.mc_chains // M)])))
               for M in ladder]
        ladder_rms.append(rms)
        M_star = int(np.ceil(chains_for_tolerance(ladder, rms, cfg.mc_tolerance)))
        M_run = min(M_star, cfg.mc_timing_cap)
        X2, t_run = run_mc(M_run, s + 7919)  # fresh chains, not the pool
        t_tol = t_run * M_star / M_run  # linear in the chains beyond the cap (the cap is named in the note)
        m_star.append(M_star)
        m_timed.append(M_run)
        err_timed.append(abs(kl_rel_err(X2)))
        t_ex.append(t_exact)
        t_mc.append(t_tol)
        speed_mc.append(t_tol / t_exact)
        # the exact law's own accuracy: eigenbasis vs dense recursion (float64 rounding), and the chains Monte Carlo
        # would need for it (extrapolated with the same fit)
        dense = m.sampler_law(n_steps=cfg.n_steps, T=cfg.T, t_min=cfg.t_min, method="dense")
        eps = max(abs(dense.kl - law.kl) / law.kl, np.finfo(float).eps)
        exact_rel.append(eps)
        m_exact_acc.append(chains_for_tolerance(ladder, rms, eps))
        big = _model(cfg, "powerlaw", cfg.perf_n, s)
        t0 = time.perf_counter()
        le = big.sampler_law(n_steps=cfg.n_steps, T=cfg.T, t_min=cfg.t_min, method="eigen")
        te = time.perf_counter() - t0
        t0 = time.perf_counter()
        ld = big.sampler_law(n_steps=cfg.n_steps, T=cfg.T, t_min=cfg.t_min, method="dense")
        td = time.perf_counter() - t0
        speed_dense.append(td / te)
        eq_dense.append(float(np.abs(le.cov - ld.cov).max()))
        kl_gap.append(abs(le.kl - ld.kl))
        # n = 10⁴: the spectrum-only law (O(n) per step, closed-form ring-lattice spectrum; no eigendecomposition)
        t0 = time.perf_counter()
        spec = ring_lattice_spectrum(cfg.large_n, cfg.mean_degree)
        large = features_law_from_spectrum(spec, alpha=cfg.alpha, n_features=cfg.n_features,
                                           sde=VP(cfg.beta, cfg.beta), n_steps=cfg.n_steps, T=cfg.T, t_min=cfg.t_min)
        t_large.append(time.perf_counter() - t0)
        kl_large.append(large.kl_per_entry)
    tol = f"{100 * cfg.mc_tolerance:g} %"
    capped = sum(a > b for a, b in zip(m_star, m_timed))
    sec.add(Claim.threshold(
        claim="The covariance recursion equals the empirical covariance of simulated chains (relative Frobenius error)",
        metric="‖Σ_MC - Σ_exact‖_F / ‖Σ_exact‖_F", ours=rel_err, threshold=0.05, higher_is_better=False,
        kind="property", paper="by construction: the sampler is linear-Gaussian",
        note=f"{cfg.mc_chains} chains × F = {cfg.n_features} columns, n = {cfg.mc_n}"))
    sec.add(Claim.threshold(
        claim="Eigenbasis recursion = dense covariance propagation (max |Σ_eig - Σ_dense|)",
        metric="max abs difference", ours=eq_dense, threshold=1e-10, higher_is_better=False, kind="property",
        paper="by construction: every matrix is a function of L", deterministic=True))
    sec.add(Claim.threshold(
        claim=f"Eigenbasis recursion is faster than dense propagation at n = {cfg.perf_n} (speed-up > 10×)",
        metric="time ratio dense / eigen", ours=speed_dense, threshold=10.0, higher_is_better=True, kind="target",
        paper="issue target (engineering), measured under the CPU lock"))
    sec.add(Claim.threshold(
        claim=f"Exact propagation is faster than Monte Carlo of the same sampler at equal accuracy (the number of "
              f"chains whose KL estimate has a {tol} RMS relative error; speed-up > 10×)",
        metric="time ratio Monte Carlo / exact", ours=speed_mc, threshold=10.0, higher_is_better=True, kind="target",
        paper="issue target (engineering), measured under the CPU lock",
        note=f"n = {cfg.mc_n}, F = {cfg.n_features}, N = {cfg.n_steps}; tolerance {tol} fixed before any run; "
             f"chains for it {min(m_star)}-{max(m_star)} (fit of the RMS error on {ladder} chains), timed directly"
             + (f" ({capped} seed(s) above the {cfg.mc_timing_cap}-chain cap scaled linearly)" if capped else "")
             + f"; the exact law's own accuracy (relative {np.mean(exact_rel):.1g}) would need about "
               f"{np.mean(m_exact_acc):.1g} chains (extrapolated)"))
    sec.add(Claim.threshold(
        claim=f"Paradigm 1 runs at n = {cfg.large_n} in the eigenbasis (exact law of the {cfg.n_steps}-step sampler, "
              f"{cfg.mean_degree}-regular ring lattice, F = {cfg.n_features}) in under 1 s",
        metric="seconds", ours=t_large, threshold=1.0, higher_is_better=False, kind="target",
        paper="issue target (engineering): O(n) per step, n up to 10⁴",
        note=f"closed-form circulant spectrum (no O(n³) eigendecomposition); KL per entry {np.mean(kl_large):.3g}"))
    sec.table("Exact law vs Monte Carlo and dense propagation (mean over seeds)",
              ["quantity", "value"],
              [["relative covariance error of Monte Carlo", float(np.mean(rel_err))],
               [f"relative KL error of {cfg.mc_chains}-chain Monte Carlo", float(np.mean(mc_kl_err))],
               [f"chains for a {tol} RMS relative KL error", float(np.mean(m_star))],
               ["relative KL error of the timed run (that many chains, at most the cap)", float(np.mean(err_timed))],
               ["seconds, exact law", float(np.mean(t_ex))],
               [f"seconds, Monte Carlo at {tol}", float(np.mean(t_mc))],
               [f"speed-up exact vs Monte Carlo at {tol}", float(np.mean(speed_mc))],
               ["relative accuracy of the exact law (|KL_eigen - KL_dense| / KL)", float(np.mean(exact_rel))],
               ["chains Monte Carlo would need for it (extrapolated)", float(np.mean(m_exact_acc))],
               [f"speed-up eigen vs dense (n = {cfg.perf_n})", float(np.mean(speed_dense))],
               ["|KL_eigen - KL_dense|", float(np.max(kl_gap))],
               [f"seconds for the exact law at n = {cfg.large_n} (spectrum only)", float(np.mean(t_large))],
               [f"KL per entry at n = {cfg.large_n} (ring lattice)", float(np.mean(kl_large))]])
    sec.table(f"RMS relative error of the Monte-Carlo KL vs chains (n = {cfg.mc_n}, disjoint batches of a "
              f"{cfg.mc_chains}-chain pool; mean over seeds)", ["chains M", "batches", "RMS relative KL error"],
              [[M, cfg.mc_chains // M, float(np.mean([r[i] for r in ladder_rms]))] for i, M in enumerate(ladder)])
    return sec


# ---------------------------------------------------------------------------------------------------------- 7.
def _exact_feature_score(model: GaussianGraphModel):
    """The exact paradigm-1 score as a torch module with the ScoreNetwork interface (``t [B]`` may differ per row):
    ``s_X = -U diag(1 / (a_t² λ + v_t)) Uᵀ X`` for ``X [B, n, F]``, so that :func:`validation_loss` scores it."""
    import torch

    class Exact(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.sde_x, self.sde_a = model.sde_x, model.sde_a
            self.U = torch.as_tensor(model.eigenvectors)  # [n, n]
            self.lam = torch.as_tensor(model.lam)  # [n]

        def forward(self, X, A, t, *, heads="x"):
            tt = t.double().numpy()
            a = torch.as_tensor(model.sde_x.mean_coef(tt))[:, None]  # [B, 1]
            v = torch.as_tensor(model.sde_x.var(tt))[:, None]
            prec = 1.0 / (a**2 * self.lam[None, :] + v)  # [B, n]
            y = prec[:, :, None] * (self.U.T @ X.double())  # [B, n, F] in the eigenbasis
            return (-(self.U @ y)).to(X.dtype), None

    return Exact()


def learned(cfg: Config, seeds: list[int], out: Path) -> Section:
    """A learned GDSS-style score against the exact score; degree / spectrum MMD of a learned structure model.

    Runs with one torch thread: the tensors are tiny, and a second thread made a DSM step slower (20 vs 17 ms on the
    shared 2-core machine)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _learned(cfg, seeds, out)
    finally:
        torch.set_num_threads(threads)


def _learned(cfg: Config, seeds: list[int], out: Path) -> Section:
    import torch
    from icml25.tuning import selections_table, tune_alike

    from sggm.kl import monte_carlo_kl
    from sggm.sampler import sample
    from sggm.score_net import ScoreNetwork, train_score, validation_loss

    sec = Section("learned")
    seeds = seeds[:cfg.learned_seeds]
    n, F = cfg.learned_n, cfg.learned_features
    n_lo, n_hi = cfg.learned_N
    kl = {(f, k): [] for f in FAMILIES for k in ("learned", "exact", "learned coarse")}

    def cols(X):
        return np.swapaxes(X, 1, 2).reshape(-1, n)  # [chains·F, n]

    def feature_model(f: str, s: int) -> GaussianGraphModel:
        return GaussianGraphModel(paradigm="features", graph=make_graph(f, n, mean_degree=cfg.mean_degree, seed=s),
                                  alpha=cfg.alpha, n_features=F, sde_x=VP(cfg.beta, cfg.beta))

    def fit_features(m: GaussianGraphModel, X0, A0, lr: float, s: int) -> ScoreNetwork:
        torch.manual_seed(s)
        net = ScoreNetwork(n_features=F, sde_x=m.sde_x, sde_a=m.sde_a, hidden=32, depth=2)
        train_score(net, X0, A0, generate="X", steps=cfg.learned_steps, batch_size=64, lr=lr, T=cfg.T,
                    t_min=cfg.t_min, seed=s)
        return net

    # The learning rate of every network, chosen alike (same grid, same budget) on a validation split: held-out draws
    # of a validation graph, validation seed 10000 + first seed.
    vs = 10_000 + seeds[0]

    def eval_features(f: str):
        def evaluate(p):
            m = feature_model(f, vs)
            X0, A0 = m.sample_data(cfg.learned_train + cfg.learned_val, seed=vs)
            k = cfg.learned_train
            net = fit_features(m, X0[:k], A0[:k], p["lr"], vs)
            return validation_loss(net, X0[k:], A0[k:], generate="X", T=cfg.T, t_min=cfg.t_min, seed=vs)
        return evaluate

    grid = {"lr": list(cfg.learned_lr_grid)}
    sel = tune_alike({f"features net, {f}": (eval_features(f), grid) for f in FAMILIES}, higher_is_better=False,
                     extend=cfg.learned_lr_extend)
    lr_x = {f: sel[f"features net, {f}"].params["lr"] for f in FAMILIES}
    floor = {}  # the exact score's held-out DSM loss: the lowest validation loss a features net can reach
    for f in FAMILIES:
        m = feature_model(f, vs)
        X0, A0 = m.sample_data(cfg.learned_train + cfg.learned_val, seed=vs)
        floor[f] = validation_loss(_exact_feature_score(m), X0[cfg.learned_train:], A0[cfg.learned_train:],
                                   generate="X", T=cfg.T, t_min=cfg.t_min, seed=vs)

    def tuned(kind: str) -> str:
        return "; ".join(sel[f"{kind} net, {f}"].note() for f in FAMILIES)

    for s in seeds:
        for f in FAMILIES:
            # (a) paradigm 1 with a learned score vs the exact score, same initial noise and Brownian increments
            m = feature_model(f, s)
            X0, A0 = m.sample_data(cfg.learned_train, seed=s)
            net = fit_features(m, X0, A0, lr_x[f], s)
            sx, _ = net.numpy_scores(heads="x")
            XT = np.random.default_rng(s + 1).standard_normal((cfg.learned_chains, n, F))
            kw = dict(T=cfg.T, t_min=cfg.t_min, sde_x=m.sde_x, seed=s + 2)
            for key, score, N in (("learned", sx, n_hi), ("exact", m.score_x, n_hi), ("learned coarse", sx, n_lo)):
                X, _ = sample(score, None, XT, m.adjacency, n_steps=N, **kw)
                kl[(f, key)].append(monte_carlo_kl(cols(X), np.zeros(n), m.sigma_graph) / n)
    note = f"{len(seeds)} seeds; reported as measured"
    note_x = f"{note}; {tuned('features')}"
    for f in FAMILIES:
        sec.add(Claim.compare(
            claim=f"A learned score adds a score-estimation error: learned vs exact score ({f}, paradigm 1)",
            metric="Monte-Carlo KL per entry", ours=kl[(f, "learned")], baseline=kl[(f, "exact")],
            baseline_name="exact score", higher_is_better=True, paired=True, kind="property",
            paper=f"score-estimation term of the bound ({PAPER_NOTE})",
            note=note_x + "; the exact score has no knob; property: the exact score is the population minimiser of "
                          "the DSM loss the network is trained on, run with the same initial noise and Brownian "
                          "increments, so the learned score can only approach it: the row measures training, not "
                          "the bound"))
    sec.add(Claim.compare(
        claim="With the learned score, power-law graphs still have the larger error than regular graphs",
        metric="Monte-Carlo KL per entry", ours=kl[("powerlaw", "learned")], baseline=kl[("regular", "learned")],
        baseline_name="regular (learned)", higher_is_better=True, paired=True, kind="paper",
        paper=f"Fig. 1: power-law above regular ({PAPER_NOTE})", note=note_x))
    for f in FAMILIES:
        sec.add(Claim.compare(
            claim=f"More sampling steps lower the learned feature score's error ({f}, paradigm 1, N = {n_hi} vs "
                  f"{n_lo})", metric="Monte-Carlo KL per entry", ours=kl[(f, "learned")],
            baseline=kl[(f, "learned coarse")], baseline_name=f"N = {n_lo}", higher_is_better=False, paired=True,
            kind="paper", paper=f"the bound guides the choice of N ({PAPER_NOTE})",
            note=note_x + "; same network, initial noise and Brownian increments at both N"))
    sec.table(f"Learning rates of the learned score networks, chosen alike on a validation split (DSM loss on "
              f"held-out draws; lower is better; {cfg.learned_steps} DSM steps)", *selections_table(sel))
    sec.table("Every learning rate tried (validation DSM loss; the features nets' floor is the exact score's loss "
              "on the same held-out draws)", ["network", *(f"lr={lr:.3g}" for lr in sorted(
                  {t["params"]["lr"] for v in sel.values() for t in v.trials})), "exact-score floor"],
              [[k, *({t["params"]["lr"]: t["score"] for t in v.trials}.get(lr, "-") for lr in sorted(
                  {t["params"]["lr"] for v in sel.values() for t in v.trials})),
                floor[k.rsplit(", ", 1)[1]] if k.startswith("features") else "-"] for k, v in sel.items()])
    sec.table(f"Learned score (n = {n}; mean over {len(seeds)} seeds)",
              ["graph", "KL learned", "KL exact", f"KL learned, N = {n_lo}"],
              [[f, *(float(np.mean(kl[(f, k)])) for k in ("learned", "exact", "learned coarse"))] for f in FAMILIES])
    return sec


# ---------------------------------------------------------------------------------------------------------- 8.
STD_METRICS = ("degree", "cluster", "orbit")
STD_MODELS = {"joint": "both", "structure-only": "A"}  # model -> what its score network generates


def standard_sets(cfg: Config, seeds: list[int], out: Path) -> Section:
    """A trained joint-paradigm GDSS-style model on the standard synthetic sets (community-small, grid, ego-like),
    scored by GDSS's degree / clustering / orbit MMDs, against a structure-only score model (GDSS without X: the
    EDP-GNN-style baseline, tuned alike) and an Erdős–Rényi model fitted to the same density (the trivial control of
    the competence gates). One torch thread, as ``learned``."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _standard_sets(cfg, seeds, out)
    finally:
        torch.set_num_threads(threads)


def _standard_sets(cfg: Config, seeds: list[int], out: Path) -> Section:
    import torch
    from icml25.tuning import selections_table, tune_alike

    from sggm.datasets import erdos_renyi_like, standard_set, to_tensors
    from sggm.graph_eval import graph_mmds
    from sggm.metrics import quantize, to_signed
    from sggm.sampler import sample
    from sggm.score_net import ScoreNetwork, train_with_validation

    sec = Section("standard_sets")
    seeds = seeds[:cfg.std_seeds]
    sde = VP(0.1, 10.0)  # X and A, T = 1 (the structure model's SDE of sggm 0.2)
    F = cfg.std_max_degree + 1
    n_lo, n_hi = cfg.learned_N
    n_max = {"community_small": 20, "grid_small": 16, "ego_small": 18}

    def split(name: str, s: int):
        gs = standard_set(name, cfg.std_train + cfg.std_val + cfg.std_test, seed=1000 * s + 17)
        a, b = cfg.std_train, cfg.std_train + cfg.std_val
        return gs[:a], gs[a:b], gs[b:]

    def tensors(model: str, gs: list, name: str):
        X, A = to_tensors(gs, n_max=n_max[name], max_degree=cfg.std_max_degree)
        if model == "structure-only":
            X = np.ones((len(gs), n_max[name], 1))
        return X, to_signed(A)

    def fit(model: str, name: str, s: int, lr: float):
        tr, va, te = split(name, s)
        torch.manual_seed(s)
        net = ScoreNetwork(n_features=F if model == "joint" else 1, sde_x=sde, sde_a=sde, hidden=32, depth=2,
                           adj_powers=cfg.std_adj_powers)
        curve = train_with_validation(net, *tensors(model, tr, name), *tensors(model, va, name),
                                      generate=STD_MODELS[model], steps=cfg.std_steps, eval_every=cfg.std_eval_every,
                                      batch_size=32, lr=lr, T=1.0, t_min=cfg.t_min, seed=s)
        return net, curve, tr, te

    def generate(net, model: str, name: str, N: int, s: int) -> list:
        rng = np.random.default_rng(s + 5)
        B, n = cfg.std_samples, n_max[name]
        z = np.triu(rng.standard_normal((B, n, n)), 1)
        AT = z + np.swapaxes(z, 1, 2)
        kw = dict(n_steps=N, T=1.0, t_min=cfg.t_min, sde_x=sde, sde_a=sde, seed=s + 6)
        if model == "joint":
            sx, sa = net.numpy_scores()
            _, A = sample(sx, sa, rng.standard_normal((B, n, F)), AT, **kw)
        else:
            _, sa = net.numpy_scores(heads="a")
            _, A = sample(None, sa, np.ones((B, n, 1)), AT, **kw)
        return list(quantize(A, threshold=0.0))

    # Learning rate chosen alike for both models (same grid, same budget) by the final held-out DSM loss on the
    # validation split of a validation seed, on the first set (community-small); carried to the other sets.
    vs = 10_000 + seeds[0]
    tune_set = cfg.std_sets[0]

    def evaluate(model: str):
        return lambda p: fit(model, tune_set, vs, p["lr"])[1].values[-1]

    sel = tune_alike({m: (evaluate(m), {"lr": list(cfg.learned_lr_grid)}) for m in STD_MODELS},
                     higher_is_better=False, extend=cfg.learned_lr_extend)
    lr = {m: sel[m].params["lr"] for m in STD_MODELS}
    mmd = {}  # (set, model or control, N) -> {metric: [per seed]}
    curves = {(d, m): [] for d in cfg.std_sets for m in STD_MODELS}
    for s in seeds:
        for d in cfg.std_sets:
            for m in STD_MODELS:
                net, curve, tr, te = fit(m, d, s, lr[m])
                curves[(d, m)].append(curve)
                net.eval()
                for N in ((n_hi, n_lo) if m == "joint" else (n_hi,)):
                    r = graph_mmds(te, generate(net, m, d, N, s), methods=STD_METRICS)
                    for k, v in r.items():
                        mmd.setdefault((d, m, N), {}).setdefault(k, []).append(v)
            for ctrl, gs in (("Erdős–Rényi", erdos_renyi_like(tr, cfg.std_samples, seed=s + 7)), ("training set", tr)):
                r = graph_mmds(te, gs, methods=STD_METRICS, remove_isolates=False)
                for k, v in r.items():
                    mmd.setdefault((d, ctrl, 0), {}).setdefault(k, []).append(v)
    note = (f"{len(seeds)} seeds (a fresh data set per seed: {cfg.std_train} training / {cfg.std_val} validation / "
            f"{cfg.std_test} test graphs); {cfg.std_samples} generated graphs at N = {n_hi} vs the test graphs; "
            f"lr tuned on {tune_set}: " + "; ".join(sel[m].note() for m in STD_MODELS))
    gate_names = {}
    for d in cfg.std_sets:
        for m in STD_MODELS:
            for k in STD_METRICS:
                name = f"The {m} score model has learned {d} ({k} MMD below an Erdős–Rényi model of the same density)"
                gate_names[(d, m, k)] = name
                sec.add(Claim.gate(
                    claim=name, metric=f"{k} MMD² (GDSS kernel)", ours=mmd[(d, m, n_hi)][k],
                    controls={"Erdős–Rényi fitted to the training density": mmd[(d, "Erdős–Rényi", 0)][k]},
                    curves=curves[(d, m)], higher_is_better=False, paired=True, note=note))
    for d in cfg.std_sets:
        hi = np.mean([mmd[(d, "joint", n_hi)][k] for k in STD_METRICS], axis=0)
        lo = np.mean([mmd[(d, "joint", n_lo)][k] for k in STD_METRICS], axis=0)
        sec.add(Claim.compare(
            claim=f"More sampling steps lower the trained joint model's MMD on {d} (N = {n_hi} vs {n_lo})",
            metric="mean of degree, clustering and orbit MMD²", ours=hi, baseline=lo, baseline_name=f"N = {n_lo}",
            higher_is_better=False, paired=True, kind="paper", paper=f"the bound guides the choice of N ({PAPER_NOTE})",
            gates=[gate_names[(d, "joint", k)] for k in STD_METRICS],
            note=note + "; same network, initial noise and Brownian increments at both N"))
    sec.table(f"Learning rates of the standard-set score models, chosen alike on {tune_set} (final held-out DSM "
              f"loss; {cfg.std_steps} steps)", *selections_table(sel))
    rows = []
    for d in cfg.std_sets:
        for key, label in (((d, "joint", n_hi), f"joint, N = {n_hi}"), ((d, "joint", n_lo), f"joint, N = {n_lo}"),
                           ((d, "structure-only", n_hi), f"structure-only, N = {n_hi}"),
                           ((d, "Erdős–Rényi", 0), "Erdős–Rényi (same density)"),
                           ((d, "training set", 0), "training graphs (floor)")):
            rows.append([d, label, *(f"{np.mean(mmd[key][k]):.4f} ± {np.std(mmd[key][k], ddof=1) if len(seeds) > 1 else 0:.4f}"
                                     for k in STD_METRICS)])
    sec.table(f"Standard sets: MMD² to {cfg.std_test} test graphs (GDSS kernels; mean ± sd over {len(seeds)} seeds)",
              ["set", "generator", *(f"{k} MMD²" for k in STD_METRICS)], rows)
    sec.table("Validation DSM loss at the end of training (mean over seeds; curves in results.json gates)",
              ["set", "model", "first eval", "last eval"],
              [[d, m, float(np.mean([c.values[0] for c in curves[(d, m)]])),
                float(np.mean([c.values[-1] for c in curves[(d, m)]]))] for d in cfg.std_sets for m in STD_MODELS])
    return sec


EXPERIMENTS = [steps, horizon, topology, normalisation, coupling, exactness, learned, standard_sets]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    return run_experiments("sggm", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)
