"""``--task ae-lr``: both autoencoders' pre-training learning rates tuned alike."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from icml25.experiment import Section

from sold.config import Config
from sold.reproduce.common import _fmt
from sold.reproduce.jobs import ae_job
from sold.reproduce.results import _pool


def autoencoder_lr(cfg: Config, seeds: list[int], out: Path) -> Section:
    """``--task ae-lr``: both autoencoders' pre-training learning rates tuned alike.

    SAVi over ``ae_lr_grid`` and the holistic autoencoder over ``holistic_ae_lr_grid`` (same number of points, same
    spacing), each with the full run's pre-training budget, on the first ``ae_tune_seeds`` seeds; the criterion,
    the same for both, is the reconstruction MSE on the validation episodes (frames 0 … eval_context +
    eval_horizon − 1; reset seeds disjoint from training and test). SAVi's validation foreground ARI is reported
    beside it but not used to choose."""
    from concurrent.futures import as_completed

    from icml25.tuning import selections_table, tune_alike

    sec = Section("autoencoder learning rates")
    seeds = seeds[: cfg.ae_tune_seeds]
    grids = {"slots": cfg.ae_lr_grid, "holistic": cfg.holistic_ae_lr_grid}
    pool = _pool(cfg.workers)
    try:
        futs = {pool.submit(ae_job, cfg, s, kind, lr, keep=False): (s, kind, lr)
                for kind in ("slots", "holistic") for lr in grids[kind] for s in seeds}
        res = {futs[f]: f.result() for f in as_completed(futs)}

        def evaluator(kind: str):
            def score(p) -> float:
                lr = p["lr"]
                todo = {pool.submit(ae_job, cfg, s, kind, lr, keep=False): (s, kind, lr)
                        for s in seeds if (s, kind, lr) not in res}       # a point beyond the grid's edge
                res.update({todo[f]: f.result() for f in as_completed(todo)})
                return float(np.mean([res[(s, kind, lr)]["recon_val"] for s in seeds]))
            return score

        sel = tune_alike({k: (evaluator(k), {"lr": list(grids[k])}) for k in grids}, higher_is_better=False,
                         extend=cfg.tune_extend)
    finally:
        pool.close()
    grids = {k: sorted(sel[k].grid["lr"]) for k in grids}
    cols, rows = selections_table(sel)
    sec.table(f"Autoencoder learning rate chosen on the validation episodes (grids of the same size, extended by "
              f"up to {cfg.tune_extend} step past an edge choice; {cfg.ae.pretrain_steps} pre-training steps each, "
              f"seeds {seeds}; score = validation reconstruction MSE)", cols, rows)
    names = {"slots": "SAVi", "holistic": "holistic AE"}
    defaults = {"slots": cfg.ae.lr, "holistic": cfg.ae.holistic_lr}
    sec.table("Every autoencoder learning rate tried (mean ± sd over the tuning seeds)",
              ["autoencoder", "lr", "validation recon MSE", "validation FG-ARI (SAVi)", "test recon MSE",
               "seconds", "chosen", "default"],
              [[names[k], f"{lr:g}", _fmt([res[(s, k, lr)]["recon_val"] for s in seeds]),
                _fmt([res[(s, k, lr)]["ari_val"] for s in seeds]) if k == "slots" else "—",
                _fmt([res[(s, k, lr)]["recon_test"] for s in seeds]),
                _fmt([res[(s, k, lr)]["seconds"] for s in seeds]),
                "yes" if lr == sel[k].params["lr"] else "", "yes" if lr == defaults[k] else ""]
               for k in grids for lr in grids[k]])
    sec.table("Per seed", ["autoencoder", "lr", "seed", "validation recon MSE", "validation FG-ARI", "final train loss"],
              [[names[k], f"{lr:g}", s, res[(s, k, lr)]["recon_val"], res[(s, k, lr)]["ari_val"],
                res[(s, k, lr)]["final_loss"]] for k in grids for lr in grids[k] for s in seeds])
    for k in grids:
        chosen = sel[k].params["lr"]
        sec.notes.append(f"{names[k]} ({sel[k].note()}); the configured default is {defaults[k]:g} "
                         f"({'the same' if chosen == defaults[k] else 'DIFFERENT from the choice'})")
    return sec
