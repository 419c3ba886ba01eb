"""Part of the reproduction (see :mod:`focoop.reproduce`): the test runs — every method at its chosen lr on every
split and test seed, methods without OOD prompts scored four ways, and the Flower apps checked against the in-process
engine on the first split and seed."""

from __future__ import annotations

import time

import numpy as np

from focoop.reproduce.common import DRO_METHODS, MULTI_SCORED, SCORINGS, _Bench, _delta_stats


def _test_runs(st: _Bench) -> None:
    """Every method at its chosen lr on every test seed; methods without OOD prompts scored four ways."""
    import torch

    from focoop.engine import evaluate_variants, run_inprocess
    from focoop.flower import run_flower_local

    b, seeds = st.b, st.seeds
    t0 = time.perf_counter()
    for sk in b.splits:
        for s in seeds:
            setup = st.fed(sk, s)
            for m in b.methods:
                cfg = st.cfg_of(m, sk, s, st.lr_of.get((sk, m), b.lr_grid[0]))
                r = run_inprocess(setup, cfg)
                st.run_seconds.setdefault(m, []).append(r.seconds)
                if m in DRO_METHODS:
                    st.delta.setdefault((sk, m), []).append(_delta_stats(r.history))
                if m in MULTI_SCORED:
                    ev = evaluate_variants(setup, cfg, r, {k: cfg.with_(**over) for k, (_, over) in SCORINGS.items()})
                    for key in SCORINGS:
                        st.rows.setdefault((sk, m, key), []).append(ev[key].summary())
                else:
                    st.rows.setdefault((sk, m, "own"), []).append(r.summary())
                if m == "focoop":
                    st.timing["inprocess"].append(r.seconds_per_round)
                    if st.hist is None:
                        st.hist = r.history
                    if b.flower and s == seeds[0] and sk == b.splits[0]:  # Flower apps, same split/seed
                        fr = run_flower_local(setup, cfg)
                        st.timing["flower"].append(fr.seconds_per_round)
                        same = all(torch.allclose(r.global_state[k], fr.global_state[k], atol=1e-6)
                                   for k in r.global_state)
                        same &= all(a.keys() == bb.keys() and np.allclose(
                            [a[k] for k in a], [bb[k] for k in a], rtol=0, atol=1e-9, equal_nan=True)
                            for a, bb in zip(r.per_client, fr.per_client))  # NaN: client without a test split
                        st.engines_equal &= bool(same)
                        st.flower_checked += 1
    st.t_test = time.perf_counter() - t0
