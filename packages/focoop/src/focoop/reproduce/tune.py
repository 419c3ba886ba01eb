"""Part of the reproduction (see :mod:`focoop.reproduce`): the ``tuning`` section — the SGD lr of every trained
method, then the adversary step of every DRO method, tuned alike on the validation split of a separate federation."""

from __future__ import annotations

import time
from pathlib import Path

from icml25.experiment import Section

from focoop.reproduce.common import (
    DRO_METHODS,
    LABELS,
    SPLITS,
    TRAINED,
    TUNE_SEED_OFFSET,
    Budget,
    _delta_stats,
    _state,
)


def tuning(b: Budget, seeds: list[int], out: Path) -> Section:
    """The SGD lr of every trained method, then the adversary step of every DRO method, tuned alike on the
    validation split of a separate federation."""
    from icml25.tuning import selections_table, tune_alike

    from focoop.engine import run_inprocess, validation_accuracy

    st = _state(b, seeds)
    sec = Section("tuning")
    trained = [m for m in b.methods if m in TRAINED]
    dro = [m for m in b.methods if m in DRO_METHODS]
    t0 = time.perf_counter()
    adv_rows = []
    for sk in b.splits:
        ts = st.seed + TUNE_SEED_OFFSET
        tune_setup = st.fed(sk, ts)

        def evaluate(m, lr, adv, sk=sk, ts=ts, tune_setup=tune_setup):
            key = (sk, m, float(lr), float(adv) if m in DRO_METHODS else 0.0)
            if key not in st.trials:
                c = st.cfg_of(m, sk, ts, lr, adv)
                r = run_inprocess(tune_setup, c)
                st.trials[key] = (validation_accuracy(tune_setup, c, r), _delta_stats(r.history))
            return st.trials[key][0]

        comp = {LABELS[m]: (lambda p, m=m: evaluate(m, p["lr"], b.adv_grid[0]), {"lr": list(b.lr_grid)})
                for m in trained}
        sel = tune_alike(comp, extend=b.extend)
        st.selections[sk] = sel
        for m in trained:
            st.lr_of[(sk, m)] = float(sel[LABELS[m]].params["lr"])
        sec.table(f"lr chosen on the validation split ({SPLITS[sk][2]}; validation ACC, mean over clients; "
                  f"adversary step {b.adv_grid[0]:g} while the lr is tuned)", *selections_table(sel))
        if dro:
            comp = {LABELS[m]: (lambda p, m=m: evaluate(m, st.lr_of[(sk, m)], p["adv_step"]),  # noqa: B023 (called at once)
                                {"adv_step": list(b.adv_grid)}) for m in dro}
            asel = tune_alike(comp, extend=0)
            st.adv_selections[sk] = {m: asel[LABELS[m]] for m in dro}
            for m in dro:
                st.adv_of[(sk, m)] = float(asel[LABELS[m]].params["adv_step"])
                for adv in b.adv_grid:
                    acc, d = st.trials[(sk, m, st.lr_of[(sk, m)], float(adv))]
                    adv_rows.append([SPLITS[sk][2], LABELS[m], st.lr_of[(sk, m)], f"{adv:g}", f"{acc:.3f}",
                                     f"{d['delta_id_norm']:.4f}", f"{d['delta_ood_norm']:.4f}",
                                     f"{d['ess_mean']:.1f}", "yes" if adv == st.adv_of[(sk, m)] else ""])
    if adv_rows:
        sec.table("adversary step chosen on the validation split (at each method's chosen lr; ‖δ‖ = mean row L2 "
                  "norm of the feature-space perturbation, mean over rounds, clients and batches — text features "
                  "have norm 1; ESS of the KL-DRO weights out of a batch of 32)",
                  ["split", "method", "lr", "adversary step", "validation ACC", "‖δ_id‖", "‖δ_ood‖", "ESS",
                   "chosen"], adv_rows)
    st.t_tune = time.perf_counter() - t0
    return sec
