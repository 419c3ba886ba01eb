"""Part of the reproduction (see :mod:`focoop.reproduce`): the ``figures`` section — FPR95/ACC/CACC bars and the
run's notes."""

from __future__ import annotations

from pathlib import Path

from icml25.experiment import Section

from focoop.reproduce.common import DECLARED, LABELS, MULTI_SCORED, SPLITS, TUNE_SEED_OFFSET, Budget, _state


def figures(b: Budget, seeds: list[int], out: Path) -> Section:
    """FPR95/ACC/CACC bars (each method at its best scoring on FPR95) and the run's notes."""
    from icml25.plots import grouped_bars

    st = _state(b, seeds)
    sec = Section("figures")
    best_row = {(sk, m): (m, DECLARED if m in MULTI_SCORED else "own") for sk in b.splits for m in b.methods}
    for key, name in (("fpr95", "FPR95 (lower is better; the pre-declared scoring)"), ("acc", "ACC"),
                      ("cacc", "CACC")):
        data = {SPLITS[sk][2].split(" (")[0]: {LABELS[m]: st.vals(sk, *best_row[(sk, m)], key) for m in b.methods}
                for sk in b.splits}
        fname = f"{key}.png"
        grouped_bars(data, out / fname, ylabel=key.upper(), title=f"{name}, mean over clients (tiny CLIP)")
        sec.figures.append(fname)
    zs = getattr(st.bundle, "info", {}).get("zero_shot", {})
    clip_desc = "random (smoke)" if st.smoke else f"pretrained {b.clip_steps} steps"
    sec.notes += [
        f"tiny CLIP: {clip_desc}; zero-shot after pretraining {zs}; loading/pretraining took {st.t_clip:.1f} s; "
        f"benchmark encoded once in {st.bench.seconds:.1f} s ({b.n_train} train / {b.n_test} test images per "
        f"class, {b.n_far} far-OOD textures + {b.n_near} near-OOD held-out shapes)",
        f"{b.clients} clients, {b.rounds} rounds x {b.local_epochs} local epochs, {b.num_shot} shots, "
        f"K={b.n_ood} negative words {st.words}; test seeds {seeds}; tuning seed {st.seed + TUNE_SEED_OFFSET}",
        f"lr grid {list(b.lr_grid)} (extended by one step when the choice is at an edge: "
        f"{'yes' if b.extend else 'no'}), the same for every trained method; tuning took {st.t_tune:.1f} s, "
        f"the test runs {st.t_test:.1f} s",
    ]
    if st.hist:
        sec.notes.append(
            f"FOCoOp ({SPLITS[b.splits[0]][2]}, seed {seeds[0]}) per-round server/DRO log: "
            + "; ".join(f"r{int(h['round'])}: plan mass {h.get('plan_mass', float('nan')):.3f}, "
                        f"selected {int(h.get('n_selected', 0))}, γ₂ {h.get('gamma_ood_mean', float('nan')):.2f}, "
                        f"ESS {h.get('ess_mean', float('nan')):.1f}, ‖δ_id‖ {h.get('delta_id_norm', float('nan')):.4f}, "
                        f"‖δ_ood‖ {h.get('delta_ood_norm', float('nan')):.4f}" for h in st.hist[-3:]))
    return sec
