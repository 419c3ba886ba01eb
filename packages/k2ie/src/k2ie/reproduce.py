"""Side-by-side reproduction of K²IE's claims: a list of experiments ``(cfg, seeds, out) -> Section``.

Every trial simulates one data set (seeded), then K²IE, Flaxman's RKHS estimator (FIE) and the edge-corrected KIE
are each selected by p-thinning hold-out on the same splits with grids of the same size (K²IE and FIE on the
official scripts' (a, b) log grid over [0.1, 100] × [0.1, 100]/L scaled down to ``grid_size`` per axis; KIE, which
has one knob, on ``grid_size²`` bandwidths over the same b range), refit on all points, and scored against the
truth by quadrature (ISE, IAE, and the ISE in the edge band). Wall and CPU time cover selection plus the final
fit, each from a cold Φ_T cache.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from icml25.claims import Claim, Report, mean_sd
from icml25.experiment import Section, run_experiments
from scipy import linalg

from k2ie.blas import blas_threads
from k2ie.config import BUDGETS, Config
from k2ie.data import Intensity, fragmented_window, intensity_1d, intensity_2d, simulate
from k2ie.estimators import K2IE, KIE, FlaxmanRKHS
from k2ie.features import RandomFourierFeatures, base_kernel, cached_gram, clear_cache
from k2ie.metrics import edge_mask
from k2ie.quadrature import window_nodes
from k2ie.selection import select
from k2ie.window import Window

METHODS = ("K²IE", "FIE", "KIE")
PAPER_ACC = ("paper: K²IE's accuracy is comparable to FIE's (Tables 1-2; the tables' numbers are not available "
             "to us); 'comparable' fixed before the run as mean ISE within 20% of FIE's")
PAPER_KIE = ("paper: K²IE is a KIE with an automatically edge-corrected kernel, as accurate as the classical "
             "edge-corrected KIE (Tables 1-2; numbers not available); 'comparable' = mean ISE within 20%")
PAPER_EDGE = "paper: the equivalent kernel adapts to the window, which helps near its boundary (no number given)"
PAPER_TIME = ("paper: much lower CPU time than FIE (the kernel-method state of the art) at comparable accuracy "
              "(Tables 1-2; numbers not available)")


def _grids(cfg: Config, scale: float) -> tuple[dict, dict]:
    g = np.geomspace(0.1, 100.0, cfg.grid_size)
    ab = {"a": [float(v) for v in g], "b": [float(v / scale) for v in g]}
    kie = {"b": [float(v / scale) for v in np.geomspace(0.1, 100.0, cfg.grid_size ** 2)]}
    return ab, kie


def _trial(truth: Intensity, window: Window, scale: float, seed: int, cfg: Config, *, quad_per_unit: float,
           kie_per_unit: float, edge_width: float, release_fie: bool = False) -> dict:
    """Simulate, select and score every method on one data set (errors by Gauss–Legendre quadrature)."""
    x = simulate(truth, window, seed=seed)
    ab, kgrid = _grids(cfg, scale)
    common = dict(n_features=cfg.n_features, qmc=True, seed=seed)
    templates = {"K²IE": (K2IE(**common), ab), "FIE": (FlaxmanRKHS(**common), ab),
                 "KIE": (KIE(per_unit=kie_per_unit), kgrid)}
    nodes, wts = window_nodes(window, per_unit=quad_per_unit, order=6)
    lam_true = truth(nodes)
    edge = edge_mask(window, edge_width)(nodes)

    def score(pred: np.ndarray) -> dict:
        diff = pred - lam_true
        return {"ise": float(wts @ diff ** 2), "iae": float(wts @ np.abs(diff)),
                "edge_ise": float(wts[edge] @ diff[edge] ** 2)}

    out: dict = {"n": len(x)}
    for name, (tmpl, grid) in templates.items():
        clear_cache()
        res = select(tmpl, x, window, grid=grid, p=cfg.p, n_splits=cfg.n_splits, seed=seed, extend=cfg.grid_extend)
        est = res.estimator
        out[name] = {**score(est.predict(nodes)), "wall": res.seconds, "cpu": res.cpu_seconds,
                     "params": res.params, "at_edge": res.selection.at_edge, "iters": getattr(est, "n_iter_", None),
                     "estimator": est}
        if name == "FIE" and release_fie:
            rel = FlaxmanRKHS(**common, **res.params, optimizer="adam", lr=1e-3, max_steps=999)
            rel.fit(x, window)
            out["FIE-release"] = {"ise": score(rel.predict(nodes))["ise"], "iters": rel.n_iter_,
                                  "fit": rel.fit_seconds_, "converged": rel.converged_,
                                  "lbfgs_fit": est.fit_seconds_,
                                  "k2ie_fit": out["K²IE"]["estimator"].fit_seconds_}
        if name == "K²IE":  # best ISE on the grid (an oracle: what the hold-out selection gives up)
            by_b: dict[float, list[float]] = {}
            for tr in res.selection.trials:
                by_b.setdefault(tr["params"]["b"], []).append(tr["params"]["a"])
            best = np.inf
            for bval, avals in by_b.items():  # w = (Φ_T + I/a)⁻¹ Σ_n φ(x_n), the fit on all points
                feats = RandomFourierFeatures(kernel=tmpl.kernel, b=bval, d=window.d, n_features=tmpl.n_features,
                                              qmc=tmpl.qmc, seed=tmpl.seed)
                gram, phi_nodes, s_x = cached_gram(feats, window), feats(nodes), feats(x).sum(axis=0)
                for a in avals:
                    w = linalg.cho_solve(linalg.cho_factor(gram + np.eye(len(gram)) / a, lower=True), s_x)
                    best = min(best, score(phi_nodes @ w)["ise"])
            out[name]["oracle_ise"] = best
        if name == "KIE":
            out[name]["oracle_ise"] = min(score(tmpl.clone(**tr["params"]).fit(x, window).predict(nodes))["ise"]
                                          for tr in res.selection.trials)
    out["points"] = x
    return out


def _trial_1d(item: tuple[str, int, Config]) -> dict:
    """One 1-D trial ``(data key, seed, cfg)``, built from picklable arguments (a worker job)."""
    key, s, cfg = item
    kind, scale = DATA_1D[key]
    truth = intensity_1d(kind, scale=scale)
    length = float(truth.window.boxes[0, 0, 1] - truth.window.boxes[0, 0, 0])
    t = _trial(truth, truth.window, length, s, cfg, quad_per_unit=200.0 / length, kie_per_unit=200.0 / length,
               edge_width=cfg.edge_fraction * length, release_fie=cfg.release_fie and key == cfg.datasets_1d[0])
    t["label"] = truth.name
    return t


def _trial_2d(item: tuple[float, int, Config]) -> dict:
    """One 2-D trial ``(p_cell, seed, cfg)`` on its fragmented window (a worker job)."""
    pc, s, cfg = item
    t = _trial(intensity_2d(), fragmented_window(pc, seed=10_000 + s), 5.0, s, cfg, quad_per_unit=cfg.quad_per_unit,
               kie_per_unit=4.0, edge_width=2.5 * cfg.edge_fraction)
    t["label"] = f"2-D, p_cell={pc:g}"
    return t


def _run_trials(fn, items: list[tuple], cfg: Config, cost: list[float]) -> list[dict]:
    """``fn`` over ``items`` on ``cfg.workers`` forked workers (largest ``cost`` first), results in item order."""
    from icml25.parallel import fork_map

    order = sorted(range(len(items)), key=lambda i: -cost[i])
    return fork_map(fn, items, cfg.workers, order=order, preload=("k2ie.estimators", "scipy.optimize"))


def _claims(sec: Section, label: str, trials: list[dict]) -> None:
    edge = {m: [t[m]["edge_ise"] for t in trials] for m in METHODS}
    for metric, key in (("ISE", "ise"), ("IAE", "iae")):  # the paper reports both
        err = {m: [t[m][key] for t in trials] for m in METHODS}
        fie_mean = mean_sd(err["FIE"])[0]
        kie_mean = mean_sd(err["KIE"])[0]
        sec.add(Claim.compare(
            claim=f"{label}: K²IE's {metric} is comparable to FIE's (not worse by more than 20%)", metric=metric,
            ours=err["K²IE"], baseline=err["FIE"], baseline_name="FIE (Flaxman RKHS), tuned alike",
            higher_is_better=False, margin=-0.2 * fie_mean, paired=True, paper=PAPER_ACC.replace("ISE", metric),
            note=f"{metric} ratio of the means {mean_sd(err['K²IE'])[0] / fie_mean:.2f}"))
        sec.add(Claim.compare(
            claim=f"{label}: K²IE's {metric} is comparable to the edge-corrected KIE's (within 20%)", metric=metric,
            ours=err["K²IE"], baseline=err["KIE"], baseline_name="edge-corrected KIE, tuned alike",
            higher_is_better=False, margin=-0.2 * kie_mean, paired=True, paper=PAPER_KIE.replace("ISE", metric),
            note=f"{metric} ratio of the means {mean_sd(err['K²IE'])[0] / kie_mean:.2f}"))
    sec.add(Claim.compare(
        claim=f"{label}: K²IE's ISE in the edge band is lower than the edge-corrected KIE's", metric="edge ISE",
        ours=edge["K²IE"], baseline=edge["KIE"], baseline_name="edge-corrected KIE, tuned alike",
        higher_is_better=False, paired=True, paper=PAPER_EDGE))


def _rows(label: str, trials: list[dict]) -> list[list]:
    rows = []
    for m in METHODS:
        def ms(key, m=m):
            mu, sd = mean_sd([t[m][key] for t in trials])
            return f"{mu:.3g} ± {sd:.2g}"
        oracle = ms("oracle_ise") if "oracle_ise" in trials[0][m] else "–"
        rows.append([label, m, round(float(np.mean([t["n"] for t in trials])), 1), ms("ise"), ms("iae"),
                     ms("edge_ise"), oracle, ms("wall"), ms("cpu")])
    return rows


COLS = ["data", "method", "mean N", "ISE", "IAE", "edge ISE", "best-on-grid ISE", "selection + fit wall s",
        "CPU s"]


def _selection_rows(label: str, trials: list[dict], seeds: list[int]) -> list[list]:
    rows = []
    for s, t in zip(seeds, trials):
        for m in METHODS:
            p = ", ".join(f"{k}={v:.3g}" for k, v in t[m]["params"].items())
            rows.append([label, s, m, p, "; ".join(t[m]["at_edge"]) or "no", t[m]["iters"] if m == "FIE" else "–"])
    return rows


SEL_COLS = ["data", "seed", "method", "chosen on hold-out", "at the grid edge", "FIE L-BFGS iterations"]
_STORE: dict[str, list] = {}


def _speed_claims(sec: Section, all_trials: list[dict]) -> None:
    k2 = [t["K²IE"]["wall"] for t in all_trials]
    fie = [t["FIE"]["wall"] for t in all_trials]
    ratio = [f / k for f, k in zip(fie, k2)]
    sec.add(Claim.compare(
        claim="K²IE's selection + final fit takes less wall time than FIE's (all data sets, same grid and splits)",
        metric="seconds", ours=k2, baseline=fie, baseline_name="FIE (L-BFGS to convergence)", higher_is_better=False,
        paired=True, paper=PAPER_TIME, note="timed alone under the CPU lock, cold Φ_T cache for each method"))
    ise_ratio = mean_sd([t["K²IE"]["ise"] for t in all_trials])[0] / mean_sd([t["FIE"]["ise"] for t in all_trials])[0]
    c = Claim.threshold(
        claim="speed-up of K²IE over FIE (selection + fit) is at least 10× at equal error", metric="FIE time / K²IE time",
        ours=ratio, threshold=10.0, kind="target", paper="issue target: ≥ 10× (the paper reports a large speed-up)",
        note=f"pooled ISE ratio K²IE/FIE of the same trials {ise_ratio:.2f}")
    if ise_ratio > 1.2 and c.verdict == "holds":
        c.verdict, c.holds = "inconclusive", False
        c.note += "; not counted: K²IE's ISE is over 20% worse"
    sec.add(c)
    labels = list(dict.fromkeys(t.get("label", "?") for t in all_trials))
    rows = []
    for lab in labels:
        ts = [t for t in all_trials if t.get("label", "?") == lab]
        r = [t["FIE"]["wall"] / t["K²IE"]["wall"] for t in ts]
        rows.append([lab, len(ts), round(float(np.mean([t["n"] for t in ts])), 1),
                     float(np.mean([t["K²IE"]["wall"] for t in ts])), float(np.mean([t["FIE"]["wall"] for t in ts])),
                     float(np.mean([t["KIE"]["wall"] for t in ts])), f"{np.mean(r):.1f} ± {np.std(r, ddof=1) if len(r) > 1 else 0:.1f}",
                     float(np.mean([t["K²IE"]["ise"] for t in ts]) / np.mean([t["FIE"]["ise"] for t in ts]))])
    sec.table("Selection + final fit wall time per data set (mean over trials; speed-up = mean of per-trial FIE/K²IE)",
              ["data", "trials", "mean N", "K²IE s", "FIE s", "KIE s", "speed-up FIE/K²IE", "ISE ratio K²IE/FIE"], rows)
    rel = [t["FIE-release"] for t in all_trials if "FIE-release" in t]
    if rel:  # what the paper's tables time: the final fit only, FIE by Adam (lr 1e-3, <= 999 steps)
        k2f = [r["k2ie_fit"] for r in rel]
        sec.add(Claim.threshold(
            claim="speed-up of K²IE's final fit over FIE's final fit with the released optimiser (Adam, lr 1e-3, "
                  "≤ 999 steps; the paper's timing) is at least 10×", metric="FIE fit time / K²IE fit time",
            ours=[r["fit"] / k for r, k in zip(rel, k2f)], threshold=10.0, kind="target",
            paper="issue target: ≥ 10×; the released scripts time only the final fit",
            note=f"same (a, b) as selected, first 1-D data set; with our L-BFGS FIE the final-fit ratio is "
                 f"{np.mean([r['lbfgs_fit'] for r in rel]) / np.mean(k2f):.1f}× (means)"))


def _plot_1d(path: Path, examples: list[tuple[str, Intensity, dict]]) -> None:
    from icml25.plots import _plt, save_figure

    plt = _plt()
    fig, axes = plt.subplots(1, len(examples), figsize=(4.2 * len(examples), 3.2), squeeze=False)
    for ax, (label, truth, tr) in zip(axes[0], examples):
        lo, hi = truth.window.boxes[0, 0]
        g = np.linspace(lo, hi, 400)[:, None]
        ax.plot(g[:, 0], truth(g), "k--", label="truth")
        for m, col in zip(METHODS, ("C3", "C2", "C0")):
            ax.plot(g[:, 0], tr[m]["estimator"].predict(g), col, label=m, lw=1.2)
        ax.plot(tr["points"][:, 0], np.zeros(len(tr["points"])), "k|", ms=6)
        ax.set_title(f"{label} (seed 0, N={tr['n']})", fontsize=9)
    axes[0][0].legend(fontsize=7)
    save_figure(fig, path, dpi=80)


def _plot_2d(path: Path, truth: Intensity, window: Window, tr: dict) -> None:
    from icml25.plots import _plt, save_figure

    plt = _plt()
    g = np.linspace(0.0, 5.0, 80)
    xx, yy = np.meshgrid(g, g, indexing="xy")
    pts = np.stack([xx.ravel(), yy.ravel()], axis=-1)
    inside = window.contains(pts)
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.2))
    vmax = float(truth(pts).max())
    panels = [("truth", truth(pts))] + [(m, np.where(inside, 0, np.nan)) for m in METHODS]
    for ax, (name, vals) in zip(axes, panels):
        vals = np.array(vals, dtype=float)
        if name != "truth":
            vals[inside] = tr[name]["estimator"].predict(pts[inside])
        ax.imshow(vals.reshape(80, 80), origin="lower", extent=(0, 5, 0, 5), vmin=0, vmax=vmax, cmap="viridis")
        ax.set_title(name, fontsize=9)
        ax.plot(tr["points"][:, 0], tr["points"][:, 1], "w.", ms=1)
    save_figure(fig, path, dpi=70)


DATA_1D = {"l1": (1, 1.0), "l2": (2, 1.0), "l3": (3, 1.0), "l1x10": (1, 10.0), "l2x10": (2, 10.0), "l3x10": (3, 10.0)}


def accuracy_1d(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Table 1's setting: the 1-D truths on one interval, edge band = first and last 10% of the interval."""
    sec = Section("accuracy_1d")
    rows, sel_rows, examples, release = [], [], [], []
    seeds_of = {key: seeds[: cfg.seeds_large] if key == "l3x10" else seeds for key in cfg.datasets_1d}
    items = [(key, s, cfg) for key in cfg.datasets_1d for s in seeds_of[key]]
    done = iter(_run_trials(_trial_1d, items, cfg, cost=[DATA_1D[k][1] * (1 + DATA_1D[k][0]) for k, _, _ in items]))
    for key in cfg.datasets_1d:
        kind, scale = DATA_1D[key]
        truth = intensity_1d(kind, scale=scale)
        run_seeds = seeds_of[key]
        trials = [next(done) for _ in run_seeds]
        _claims(sec, truth.name, trials)
        rows += _rows(truth.name, trials)
        sel_rows += _selection_rows(truth.name, trials, run_seeds)
        _STORE.setdefault("trials", []).extend(trials)
        if len(examples) < 3:
            examples.append((truth.name, truth, trials[0]))
        release += [(truth.name, s, t["FIE-release"]) for s, t in zip(run_seeds, trials) if "FIE-release" in t]
    sec.table("Accuracy and time on the 1-D truths (mean ± sd over trials)", COLS, rows)
    sec.table("Hyper-parameters chosen by p-thinning hold-out (1-D)", SEL_COLS, sel_rows)
    if release:
        sec.table("FIE optimiser: ours (L-BFGS to convergence) vs the release (Adam, lr 1e-3, ≤ 999 steps) at the "
                  "same selected (a, b); K²IE's final fit beside them", ["data", "seed", "K²IE fit s", "L-BFGS fit s",
                                                                        "Adam fit s", "Adam steps", "Adam converged",
                                                                        "ISE (Adam)"],
                  [[n, s, r["k2ie_fit"], r["lbfgs_fit"], r["fit"], r["iters"], r["converged"], r["ise"]]
                   for n, s, r in release])
    _plot_1d(out / "fits_1d.png", examples)
    sec.figures.append("fits_1d.png")
    return sec


def accuracy_2d(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Table 2's setting: the smooth 2-D truth seen through random unions of unit cells of [0, 5]²."""
    sec = Section("accuracy_2d")
    truth = intensity_2d()
    rows, sel_rows = [], []
    items = [(pc, s, cfg) for pc in cfg.p_cells for s in seeds]
    done = iter(_run_trials(_trial_2d, items, cfg, cost=[pc for pc, _, _ in items]))
    for pc in cfg.p_cells:
        trials = [next(done) for _ in seeds]
        if pc == cfg.p_cells[0]:
            _plot_2d(out / "fits_2d.png", truth, fragmented_window(pc, seed=10_000 + seeds[0]), trials[0])
            sec.figures.append("fits_2d.png")
        label = f"2-D, p_cell={pc:g}"
        _claims(sec, label, trials)
        rows += _rows(label, trials)
        sel_rows += _selection_rows(label, trials, seeds)
        _STORE.setdefault("trials", []).extend(trials)
    sec.table("Accuracy and time on fragmented 2-D windows (mean ± sd over trials)", COLS, rows)
    sec.table("Hyper-parameters chosen by p-thinning hold-out (2-D)", SEL_COLS, sel_rows)
    return sec


def speed(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Selection + fit time over every trial above, and the final-fit time versus N at fixed M."""
    from icml25.plots import _plt, save_figure

    sec = Section("speed")
    trials = _STORE.pop("trials", [])
    if trials:
        _speed_claims(sec, trials)
    base = intensity_1d(1)
    rows, k2t, fit_t = [], [], []
    for n in cfg.time_ns:
        truth = intensity_1d(1, scale=n / 46.6)
        x = simulate(truth, base.window, seed=seeds[0])
        tk, tf, it = [], [], []
        for _rep in range(3):
            clear_cache()
            t0 = time.perf_counter()
            K2IE(a=10.0 * n / 46.6, b=0.1, n_features=cfg.n_features).fit(x, base.window)
            tk.append(time.perf_counter() - t0)
            clear_cache()
            t0 = time.perf_counter()
            f = FlaxmanRKHS(a=10.0 * n / 46.6, b=0.1, n_features=cfg.n_features).fit(x, base.window)
            tf.append(time.perf_counter() - t0)
            it.append(f.n_iter_)
        rows.append([len(x), min(tk), min(tf), min(tf) / min(tk), int(round(float(np.median(it))))])
        k2t.append(min(tk))
        fit_t.append(min(tf))
    sec.table(f"Final fit time versus N at M = {cfg.n_features} (λ¹ scaled; best of 3, a = 10·N/46.6, b = 0.1)",
              ["N", "K²IE fit s", "FIE fit s", "ratio", "FIE iterations"], rows)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    ns = [r[0] for r in rows]
    ax.loglog(ns, k2t, "o-", color="C3", label="K²IE")
    ax.loglog(ns, fit_t, "s-", color="C2", label="FIE (L-BFGS)")
    ax.set_xlabel("N")
    ax.set_ylabel("fit seconds")
    ax.legend(fontsize=8)
    save_figure(fig, out / "time_vs_n.png", dpi=80)
    sec.figures.append("time_vs_n.png")
    return sec


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


EXPERIMENTS = [accuracy_1d, accuracy_2d, speed, rff_approximation, unit_coefficients]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    _STORE.clear()
    threads = BUDGETS.pick(quick=quick, smoke=smoke).blas_threads
    with blas_threads(threads or None):  # the same BLAS setting for every method (see k2ie.blas)
        return run_experiments("k2ie", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)
