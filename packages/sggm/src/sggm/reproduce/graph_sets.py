"""Experiment 8 of :mod:`sggm.reproduce`: a trained joint-paradigm model on the standard synthetic sets (GDSS's
MMDs), against a structure-only score model tuned alike and an Erdős–Rényi control (the competence gates)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from icml25.claims import Claim
from icml25.experiment import Section

from sggm.config import Config
from sggm.reproduce.common import PAPER_NOTE
from sggm.sde import VP

STD_METRICS = ("degree", "cluster", "orbit")
STD_MODELS = {"joint": "both", "structure-only": "A"}  # model -> what its score network generates


def standard_sets(cfg: Config, seeds: list[int], out: Path) -> Section:
    """A trained joint-paradigm GDSS-style model on the standard synthetic sets (community-small, grid, ego-like),
    scored by GDSS's degree / clustering / orbit MMDs, against a structure-only score model (GDSS without X: the
    EDP-GNN-style baseline, tuned alike) and an Erdős–Rényi model fitted to the same density (the trivial control of
    the competence gates). Graphs of different sizes are padded with GDSS's node flags: training, validation loss
    and sampling are masked to the existing nodes, and each generated graph's node count is drawn from the training
    graphs' (:func:`sggm.datasets.sample_node_flags`). One torch thread, as ``learned``."""
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

    from sggm.datasets import erdos_renyi_like, node_flags, sample_node_flags, standard_set, to_tensors
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
        return X, to_signed(A), node_flags([g.number_of_nodes() for g in gs], n_max[name])

    def fit(model: str, name: str, s: int, lr: float):
        tr, va, te = split(name, s)
        torch.manual_seed(s)
        net = ScoreNetwork(n_features=F if model == "joint" else 1, sde_x=sde, sde_a=sde, hidden=32, depth=2,
                           adj_powers=cfg.std_adj_powers)
        (Xtr, Atr, ftr), (Xva, Ava, fva) = tensors(model, tr, name), tensors(model, va, name)
        curve = train_with_validation(net, Xtr, Atr, Xva, Ava, generate=STD_MODELS[model], steps=cfg.std_steps,
                                      eval_every=cfg.std_eval_every, batch_size=32, lr=lr, T=1.0, t_min=cfg.t_min,
                                      seed=s, flags=ftr, flags_val=fva)
        return net, curve, tr, te

    def generate(net, model: str, name: str, N: int, s: int, tr: list) -> list:
        rng = np.random.default_rng(s + 5)
        B, n = cfg.std_samples, n_max[name]
        z = np.triu(rng.standard_normal((B, n, n)), 1)
        AT = z + np.swapaxes(z, 1, 2)
        flags = sample_node_flags([g.number_of_nodes() for g in tr], B, n, rng)  # GDSS: node counts of training
        kw = dict(n_steps=N, T=1.0, t_min=cfg.t_min, sde_x=sde, sde_a=sde, seed=s + 6, flags=flags)
        if model == "joint":
            sx, sa = net.numpy_scores(flags=flags)
            _, A = sample(sx, sa, rng.standard_normal((B, n, F)), AT, **kw)
        else:
            _, sa = net.numpy_scores(heads="a", flags=flags)
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
                    r = graph_mmds(te, generate(net, m, d, N, s, tr), methods=STD_METRICS)
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
