"""Part of the reproduction (see :mod:`focoop.reproduce`): the result tables of the test runs (every method and
scoring per split, the DRO's effect, the adversary's perturbation norm)."""

from __future__ import annotations

import numpy as np
from icml25.claims import mean_sd
from icml25.experiment import Section

from focoop.reproduce.common import DECLARED, FOCOOP_SCORING, LABELS, SCORINGS, SPLITS, _Bench


def _result_tables(st: _Bench, sec: Section) -> None:
    from icml25.stats import verdict

    b, methods = st.b, st.b.methods
    cols = ["method", "scoring", "lr", "adversary step", "ACC", "CACC", "FPR95", "AUROC", "FPR95 spread (std over clients)",
            "FPR95 far", "FPR95 near"]
    for sk in b.splits:
        tab = []
        for m in methods:
            for _, k in st.rows_of(m):
                lr = st.lr_of.get((sk, m))
                adv = st.adv_of.get((sk, m))
                row = [LABELS[m], (SCORINGS[k][0] + (" (declared)" if k == DECLARED else "")) if k in SCORINGS
                       else FOCOOP_SCORING, "—" if lr is None else lr, "—" if adv is None else f"{adv:g}"]
                for key in ("acc", "cacc", "fpr95", "auroc", "fpr95_std", "fpr95_far", "fpr95_near"):
                    mu, sd = mean_sd(st.vals(sk, m, k, key))
                    row.append(f"{mu:.3f} ± {sd:.3f}")
                tab.append(row)
        sec.table(f"{SPLITS[sk][2]} (mean ± sd over {len(st.seeds)} seeds of the mean over clients)", cols, tab)
    if "focoop_no_dro" in methods:  # the DRO's effect, whatever it is (FOCoOp − FOCoOp −DRO, paired over seeds)
        eff = []
        for sk in b.splits:
            for key, name in (("acc", "ACC"), ("cacc", "CACC"), ("fpr95", "FPR95"), ("auroc", "AUROC")):
                a, c = st.vals(sk, "focoop", "own", key), st.vals(sk, "focoop_no_dro", "own", key)
                d = np.asarray(a) - np.asarray(c)
                p1 = verdict(a, c, paired=True).p_value if len(d) >= 3 else None
                p_two = float("nan") if p1 is None else min(1.0, 2 * min(p1, 1 - p1))
                eff.append([SPLITS[sk][2], name, f"{np.mean(a):.3f}", f"{np.mean(c):.3f}",
                            f"{d.mean():+.3f} ± {d.std(ddof=1) if len(d) > 1 else 0.0:.3f}",
                            "—" if not np.isfinite(p_two) else f"{p_two:.2g}"])
        sec.table("effect of the bi-level DRO (FOCoOp minus FOCoOp −DRO, paired over seeds; two-sided p)",
                  ["split", "metric", "FOCoOp", "FOCoOp −DRO", "difference (mean ± sd)", "p"], eff)
    if st.delta:  # how far the adversary moves the unit-norm text features in the test runs
        rows = []
        for (sk, m), ds in st.delta.items():
            rows.append([SPLITS[sk][2], LABELS[m], f"{st.adv_of.get((sk, m), b.adv_grid[0]):g}",
                         *("{:.4f} ± {:.4f}".format(*mean_sd([d[k] for d in ds]))
                           for k in ("delta_id_norm", "delta_ood_norm")),
                         "{:.1f} ± {:.1f}".format(*mean_sd([d["ess_mean"] for d in ds]))])
        sec.table("the adversary in the test runs (‖δ‖ = mean row L2 norm of the feature-space perturbation, mean "
                  "over rounds, clients and batches; text features have norm 1; ESS of the KL-DRO weights, batch 32)",
                  ["split", "method", "adversary step", "‖δ_id‖", "‖δ_ood‖", "ESS"], rows)
