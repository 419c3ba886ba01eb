"""Part of the reproduction: see ``richardson_tc.reproduce``."""

from __future__ import annotations

import tracemalloc
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from icml25.claims import Claim
from icml25.experiment import Section
from icml25.tuning import selections_table

from richardson_tc.bench import timed_run
from richardson_tc.config import Config
from richardson_tc.reproduce.common import LABELS, LOGS, VARIANTS, _problem, _select_eps, matched_error_gate


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
