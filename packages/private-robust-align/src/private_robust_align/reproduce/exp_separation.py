"""Part of the reproduction: see ``private_robust_align.reproduce``."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from icml25.claims import Claim
from icml25.experiment import Section

from private_robust_align.config import Config
from private_robust_align.estimator import (
    MedianOfMeansLogistic,
    TrimmedDebiasedLogistic,
)
from private_robust_align.mechanism import privacy_constant
from private_robust_align.metrics import l2_error
from private_robust_align.reproduce.common import (
    ALPHA_NOTE,
    CLC_PAPER,
    HEADLINE,
    NO_NUMBERS,
    PROP_CLC,
    PROP_LTC,
    B,
    _between,
    _data,
    _err,
    _fmt,
    _gaps,
    _kappa,
    _ours,
    _plt,
    _release,
)


# ---------------------------------------------------------------------------------------------------- 2. separation
def separation(cfg: Config, seeds: list[int], out: Path) -> Section:
    sec = Section("separation")
    advs = ("directional", "shrinking", "random")
    orders = ("CTL", "CLC", "LTC")
    # err[adv][eps][alpha][order] -> per-seed list; shift likewise; base[eps] -> per-seed α=0 error.
    # CLC splits the budget evenly, α₁ = α₂ = α/2 (same total ⌊αn⌋ up to rounding): first-order bias α/2·(1 + c(ε)),
    # halfway between CTL (α) and LTC (c(ε)·α).
    err = {a: {e: {al: {o: [] for o in orders} for al in cfg.alpha_sep} for e in cfg.eps_sep} for a in advs}
    shift = {a: {e: {al: {o: [] for o in orders} for al in cfg.alpha_sep} for e in cfg.eps_sep} for a in advs}
    base = {e: [] for e in cfg.eps_sep}
    for s in seeds:
        d = _data(cfg, cfg.n_sep, s)
        for e in cfg.eps_sep:
            th0 = _ours(cfg, seeds, e).fit(d.x, _release(d, order="CTL", eps=e, alpha=0.0, seed=s)).theta_
            base[e].append(_err(th0, d.theta_star))
            for a in advs:
                for al in cfg.alpha_sep:
                    for o in orders:
                        alpha = (al / 2, al / 2) if o == "CLC" else al
                        th = _ours(cfg, seeds, e).fit(d.x, _release(d, order=o, eps=e, alpha=alpha, seed=s,
                                                                     adversary=a)).theta_
                        err[a][e][al][o].append(_err(th, d.theta_star))
                        shift[a][e][al][o].append(l2_error(th, th0))
    # the separation beyond one estimator: two standard robust estimators under LTC vs CTL (settings fixed before
    # the run: trim 2·α of the pairs, 9 blocks; the same ridge κ as ours), both adaptive adversaries
    mid = cfg.alpha_sep[len(cfg.alpha_sep) // 2]
    e_rob = cfg.eps_robust
    robust = {"trimmed": f"trimmed debiased logistic (trim {2 * mid:g}, 3 rounds)",
              "mom": "median of means (9 blocks, geometric median)"}
    rob = {(k, a, o): [] for k in robust for a in advs[:2] for o in ("CTL", "LTC")}
    for s in seeds:
        d = _data(cfg, cfg.n_sep, s)
        kap = _kappa(cfg, seeds, "ours") / cfg.n_sep
        for a in advs[:2]:
            for o in ("CTL", "LTC"):
                z = _release(d, order=o, eps=e_rob, alpha=mid, seed=s, adversary=a)
                est = {"trimmed": TrimmedDebiasedLogistic(epsilon=e_rob, radius=B, l2=kap, trim=2 * mid),
                       "mom": MedianOfMeansLogistic(epsilon=e_rob, radius=B, l2=kap, blocks=9, seed=s)}
                for k, m in est.items():
                    rob[(k, a, o)].append(_err(m.fit(d.x, z).theta_, d.theta_star))
    for k, name in robust.items():
        for a in advs[:2]:
            sec.add(Claim.compare(
                claim=f"The separation holds beyond our estimator, LTC harder than CTL: {name}, {a} adversary, ε = {e_rob:g}, "
                      f"α = {mid:g}",
                metric="‖θ̂ − θ*‖₂", ours=rob[(k, a, "LTC")], baseline=rob[(k, a, "CTL")], baseline_name="CTL error",
                paper=HEADLINE, higher_is_better=True, paired=True, kind="paper",
                note="ours = LTC error of that estimator; the separation is about what any estimator can do, so it "
                     "is measured here beyond the debiased MLE; estimator settings fixed before the run, not tuned; "
                     f"our estimator at the same cell: LTC {_fmt(err[a][e_rob][mid]['LTC'])}, CTL "
                     f"{_fmt(err[a][e_rob][mid]['CTL'])}"))
    sec.table(f"The separation for two more robust estimators (ε = {e_rob:g}, α = {mid:g}, n = {cfg.n_sep}): "
              "‖θ̂ − θ*‖₂, mean ± sd over seeds",
              ["estimator", "adversary", "CTL", "LTC", "ours CTL", "ours LTC"],
              [[robust[k], a, _fmt(rob[(k, a, "CTL")]), _fmt(rob[(k, a, "LTC")]), _fmt(err[a][e_rob][mid]["CTL"]),
                _fmt(err[a][e_rob][mid]["LTC"])] for k in robust for a in advs[:2]])
    rows, cells = [], {a: {"LTC>CTL": [0, 0], "CLC between": [0, 0]} for a in advs[:2]}
    for a in advs:
        for e in cfg.eps_sep:
            for al in cfg.alpha_sep:
                c, m, l_ = (err[a][e][al][o] for o in orders)
                sc, sm, sl = (np.array(shift[a][e][al][o]) for o in orders)
                ratio = sl / np.maximum(sc, 1e-300)
                p = q = "—"
                if a != "random":
                    cl = Claim.compare(claim="", metric="", ours=l_, baseline=c, baseline_name="", paper="",
                                       higher_is_better=True, paired=True)
                    p = f"{cl.verdict} (p={cl.p_value:.2g})" if cl.p_value is not None else cl.verdict
                    cells[a]["LTC>CTL"][0] += cl.verdict == "holds"
                    cells[a]["LTC>CTL"][1] += 1
                    cb = _between(c, m, l_)
                    q = f"{cb.verdict} (p={cb.p_value:.2g})" if cb.p_value is not None else cb.verdict
                    cells[a]["CLC between"][0] += cb.verdict == "holds"
                    cells[a]["CLC between"][1] += 1
                rows.append([a, e, al, _fmt(base[e]), _fmt(c), _fmt(m), _fmt(l_), _fmt(sc), _fmt(sm), _fmt(sl),
                             f"{np.mean(ratio):.2f}", f"{privacy_constant(e):.2f}",
                             f"{np.mean(sm) / np.mean((sc + sl) / 2):.2f}", p, q])
    sec.table(f"CTL vs CLC(α/2, α/2) vs LTC (n = {cfg.n_sep}, d = {cfg.dim}, ‖θ*‖ = B = 2): ‖θ̂ − θ*‖₂ and the "
              "corruption-induced shift ‖θ̂(α) − θ̂(0)‖₂ (mean ± sd over seeds)",
              ["adversary", "ε", "α", "error at α = 0", "error CTL", "error CLC", "error LTC", "shift CTL",
               "shift CLC", "shift LTC", "shift ratio LTC/CTL", "c(ε)", "shift CLC / mean(CTL, LTC)",
               "LTC > CTL (paired t)", "CTL < CLC < LTC (t on min gap)"], rows)
    mid = cfg.alpha_sep[len(cfg.alpha_sep) // 2]
    for a in ("directional", "shrinking"):
        sec.notes.append(f"separation: LTC error > CTL error significantly (paired t, p < 0.05) in "
                         f"{cells[a]['LTC>CTL'][0]} of {cells[a]['LTC>CTL'][1]} (ε, α) cells under the {a} adversary; "
                         f"CTL < CLC < LTC significantly in {cells[a]['CLC between'][0]} of "
                         f"{cells[a]['CLC between'][1]}")
        for e in cfg.eps_sep:
            sec.add(Claim.compare(
                claim=f"LTC is harder than CTL: {a} adversary, ε = {e:g}, α = {mid:g}",
                metric="‖θ̂ − θ*‖₂", ours=err[a][e][mid]["LTC"], baseline=err[a][e][mid]["CTL"],
                baseline_name="CTL error", paper=HEADLINE, higher_is_better=True, paired=True, kind="property",
                note="ours = LTC error; the claim holds when LTC's error is larger (same data, RR uniforms, adversary); "
                     + PROP_LTC))
        for e in cfg.eps_sep:
            c, m, l_ = (err[a][e][mid][o] for o in orders)
            sec.add(Claim.threshold(
                claim=f"CLC(α/2, α/2) lies between CTL and LTC: {a} adversary, ε = {e:g}, α = {mid:g}",
                metric="per seed min(error LTC − error CLC, error CLC − error CTL)", ours=_gaps(c, m, l_),
                threshold=0.0, higher_is_better=True, kind="property", paper=CLC_PAPER,
                note=f"errors CTL {_fmt(c)}, CLC {_fmt(m)}, LTC {_fmt(l_)}; same data, RR uniforms and adversary "
                     "direction in the three orders; a one-sample t-test of the smaller of the two gaps; " + PROP_CLC))
    a0 = mid  # α of the two ratio claims: chosen before the full run on seeds 1000–1011 (README)
    lo_e, hi_e = min(cfg.eps_sep), max(cfg.eps_sep)
    ratio = {e: (np.array(shift["directional"][e][a0]["LTC"]) / np.array(shift["directional"][e][a0]["CTL"]))
             for e in cfg.eps_sep}
    sec.add(Claim.compare(
        claim=f"The LTC/CTL bias ratio grows as ε falls (directional, α = {a0:g}, ε = {lo_e:g} vs {hi_e:g})",
        metric="shift ratio LTC/CTL", ours=ratio[lo_e].tolist(), baseline=ratio[hi_e].tolist(),
        baseline_name=f"ratio at ε = {hi_e:g}", paper=HEADLINE, paired=True, kind="property",
        note=f"c({lo_e:g}) = {privacy_constant(lo_e):.2f}, c({hi_e:g}) = {privacy_constant(hi_e):.2f}; " + ALPHA_NOTE
             + "; property: the debiasing scales each post-privacy flip by c(ε), which falls with ε, so the ratio "
               "grows as ε falls by construction (the row that can fail is 'ratio ≈ c(ε)')"))
    for adv in ("directional", "shrinking"):
        r_adv = {e: (np.array(shift[adv][e][a0]["LTC"]) / np.array(shift[adv][e][a0]["CTL"])) for e in cfg.eps_sep}
        logdev = np.mean([np.abs(np.log(r_adv[e] / privacy_constant(e))) for e in cfg.eps_sep], axis=0)
        sec.add(Claim.threshold(
            claim=f"The LTC/CTL bias ratio ≈ c(ε) = (e^ε+1)/(e^ε−1) ({adv}, α = {a0:g}, within a factor 1.5)",
            metric=f"mean over ε ∈ {list(cfg.eps_sep)} of |log(ratio / c(ε))|", ours=logdev.tolist(),
            threshold=math.log(1.5), higher_is_better=False, kind="paper",
            paper="bias_LTC / bias_CTL ≈ c(ε) (reconstructed from the bias forms α vs c(ε)α; " + NO_NUMBERS + ")",
            note="per-ε mean ratios in the table; the ball constraint and the nonlinearity of σ compress large "
                 "shifts; both adaptive adversaries, the same α and factor, fixed before this run; " + ALPHA_NOTE))
    e_lo2 = min(e for e in cfg.eps_sep if e >= 0.5) if any(e >= 0.5 for e in cfg.eps_sep) else lo_e
    a_hi = max(cfg.alpha_sep)
    growth_ctl = (np.array(shift["directional"][e_lo2][a_hi]["CTL"]) / np.array(shift["directional"][hi_e][a_hi]["CTL"]))
    growth_ltc = (np.array(shift["directional"][e_lo2][a_hi]["LTC"]) / np.array(shift["directional"][hi_e][a_hi]["LTC"]))
    sec.add(Claim.threshold(
        claim=f"The CTL bias does not depend on ε (directional, α = {a_hi:g}: shift at ε = {e_lo2:g} / at ε = {hi_e:g})",
        metric="CTL shift growth factor (1 = independent of ε)", ours=growth_ctl.tolist(), threshold=1.5,
        higher_is_better=False, kind="property",
        paper="CTL bias O(α), independent of ε (reconstructed); " + NO_NUMBERS,
        note=f"LTC's growth factor over the same range: {_fmt(growth_ltc)} (c ratio "
             f"{privacy_constant(e_lo2) / privacy_constant(hi_e):.2f}); the per-seed CTL shift also carries RR noise "
             "of relative size ≈ c(ε)/√(αn), hence the largest α of the grid; property: under CTL the flips hit the "
             "clean labels before RR and the debiased loss is unbiased for that (corrupted) clean loss at every ε, so "
             "the expected shift does not depend on ε by construction of the estimator"))
    diff = [abs(x - y) for e in cfg.eps_sep for al in cfg.alpha_sep
            for x, y in zip(err["random"][e][al]["LTC"], err["random"][e][al]["CTL"])]
    sec.add(Claim.threshold(
        claim="LTC = CTL under random flips (a non-adaptive adversary)", metric="max |error LTC − error CTL| "
        "over all (ε, α) cells and seeds", ours=[max(diff)], threshold=1e-12, higher_is_better=False,
        kind="property", deterministic=True,
        paper="LTC ≈ CTL without an adaptive adversary (the separation needs adaptivity); " + NO_NUMBERS,
        note="exact on coupled streams: flipping a fixed random set of labels commutes with randomized response "
             "(both are XORs), so the released labels are identical"))
    # figure: ratio vs ε with c(ε)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    es = np.array(cfg.eps_sep)
    grid = np.linspace(es.min(), es.max(), 100)
    ax.plot(grid, [privacy_constant(g) for g in grid], "k--", label="c(ε): LTC/CTL predicted")
    ax.plot(grid, [(1 + privacy_constant(g)) / 2 for g in grid], "k:", label="(1 + c(ε))/2: CLC/CTL predicted")
    mid = cfg.alpha_sep[len(cfg.alpha_sep) // 2]
    r_clc = [np.mean(np.array(shift["directional"][e][mid]["CLC"]) / np.array(shift["directional"][e][mid]["CTL"]))
             for e in es]
    ax.plot(es, r_clc, "^-", color="gray", label=f"CLC/CTL, directional, α={mid:g}")
    for a in ("directional", "shrinking"):
        for al in cfg.alpha_sep:
            r = [np.mean(np.array(shift[a][e][al]["LTC"]) / np.array(shift[a][e][al]["CTL"])) for e in es]
            ax.plot(es, r, "o-" if a == "directional" else "s:", label=f"{a}, α={al:g}", alpha=0.8)
    ax.set_xlabel("ε")
    ax.set_ylabel("shift ratio to CTL")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend(fontsize=6)
    ax.set_title("LTC/CTL and CLC/CTL bias ratios vs c(ε)")
    fig.savefig(out / "separation.png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    sec.figures.append("separation.png")
    return sec
