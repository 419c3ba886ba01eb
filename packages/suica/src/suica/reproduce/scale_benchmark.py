"""The ``--task scale`` sub-run of :mod:`suica.reproduce` (:func:`scale`, run by
:func:`suica.reproduce.reproduce_scale`): a sparse 10⁵ spots x 2·10⁴ genes mini-batch fit of the default ``SUICA()``,
time, peak memory and the INR's loss curve."""

from __future__ import annotations

import resource
import time
from pathlib import Path

import numpy as np
from icml25.claims import Claim
from icml25.experiment import Section

from suica.config import ReproduceConfig
from suica.reproduce.common import CURVE_EVERY

PLATEAU_LOSS_FRAC = 0.01
"""Scale benchmark (one fit, no validation split): the INR's training-loss curve has plateaued when its last 3
points (75 steps) improved the best loss by at most this fraction of the final loss."""


def _loss_curve(history: list[float]):
    """A training-loss curve (every :data:`CURVE_EVERY` steps, lower is better; the scale benchmark)."""
    from icml25.train import Curve

    pts = [(i + 1, float(v)) for i, v in enumerate(history) if (i + 1) % CURVE_EVERY == 0 or i + 1 == len(history)]
    if len(pts) < 2:
        return None
    return Curve(steps=[a for a, _ in pts], values=[b for _, b in pts], higher_is_better=False, patience=3,
                 stopped_by="budget")


def _rss_now_mb() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return float(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def scale(cfg: ReproduceConfig, seeds: list[int], out: Path) -> Section:
    """Sparse mini-batch fit of ``scale_spots x scale_genes`` with the package default ``SUICA()`` (PCA embedding;
    CSR end to end), then chunked prediction and chunked evaluation at ``scale_eval_spots`` spots: time, peak
    memory, the INR's training-loss curve (plateau check) and the reconstruction metrics."""
    import scipy.sparse as sp
    import torch
    from icml25.train import plateau_check

    from suica.estimator import SUICA
    from suica.metrics import MetricAccumulator

    sec = Section("scale")
    rss0 = _rss_now_mb()
    t0 = time.perf_counter()
    from suica.synthetic import make_sparse_tissue

    a = make_sparse_tissue(n_spots=cfg.scale_spots, n_genes=cfg.scale_genes, density=cfg.scale_density,
                           seed=seeds[0])
    keep = np.asarray(a.X.sum(0)).ravel() > 0
    a = a[:, keep].copy()
    x = a.X
    a.X = sp.csr_matrix(sp.diags(200.0 / np.asarray(x.sum(1)).ravel()) @ x, dtype=np.float32)  # normalize_total
    gen_s = time.perf_counter() - t0
    rss_data = _rss_now_mb()
    t0 = time.perf_counter()
    m = SUICA(inr_epochs=cfg.scale_inr_epochs, decoder_epochs=cfg.scale_decoder_epochs, batch_size=cfg.scale_batch,
              seed=seeds[0]).fit(a)
    fit_s = time.perf_counter() - t0
    peak_fit = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    # chunked prediction + evaluation at the first scale_eval_spots spots: never the whole (n, G) matrix
    t0 = time.perf_counter()
    n_eval = min(cfg.scale_eval_spots, a.n_obs)
    acc = MetricAccumulator()
    xy = a.obsm["spatial"][:n_eval]
    for s0, y, _ in m.iter_predict(xy, allow_extrapolation=True, chunk=cfg.scale_batch):
        acc.update(y, a.X[s0:s0 + len(y)].toarray())
    ev = acc.result()
    pred_s = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    nnz = int(a.X.nnz)
    curve = _loss_curve(m.history["inr"])
    pl = plateau_check([curve], noise=PLATEAU_LOSS_FRAC * curve.values[-1]) if curve is not None else None
    sec.add(Claim.threshold(claim=f"sparse mini-batch fit of {a.n_obs} spots x {a.n_vars} genes with the default "
                                  f"SUICA() and chunked prediction + evaluation of {n_eval} spots stay under 4 GB "
                                  "peak memory", metric="peak_rss_mb", ours=peak, threshold=4096.0,
                            higher_is_better=False, kind="target", deterministic=True,
                            paper="target: peak memory under 4 GB (10^5 spots x 2*10^4 genes, sparse)",
                            note=(f"INR stage {pl.describe()}" if pl is not None else "") +
                                 f"; {cfg.scale_inr_epochs} INR / {cfg.scale_decoder_epochs} decoder steps "
                                 "(one AdamW step per epoch), not the default 400 / 200"))
    sec.table(f"scale benchmark (default SUICA(): PCA embedding; {torch.get_num_threads()} torch threads, "
              f"{cfg.scale_inr_epochs} INR / {cfg.scale_decoder_epochs} decoder epoch(s), batch {cfg.scale_batch})",
              ["spots", "genes", "non-zeros", "data s", "fit s", "stages s", "s per INR epoch",
               "s per decoder epoch", "RSS after data MB", "peak RSS after fit MB", "peak RSS MB",
               f"predict + evaluate {n_eval} spots s"],
              [[a.n_obs, a.n_vars, nnz, round(gen_s, 1), round(fit_s, 1),
                str({k: round(v, 1) for k, v in m.timings.items()}),
                round(m.timings["inr_s"] / max(cfg.scale_inr_epochs, 1), 2),
                round(m.timings["decoder_s"] / max(cfg.scale_decoder_epochs, 1), 1), round(rss_data),
                round(peak_fit), round(peak), round(pred_s, 1)]])
    keys = ["masked_pearson", "pearson", "zero_iou", "support_recovery", "mae"]
    sec.table(f"scale: reconstruction of the first {n_eval} training spots (chunked, {cfg.scale_batch} at a time)",
              keys, [[round(ev[k], 4) for k in keys]])
    if curve is not None:
        sec.table("scale: INR training loss (L1 + MSE to the PCA scores)", ["step", "loss"],
                  [[st, round(v, 4)] for st, v in zip(curve.steps, curve.values)])
    sec.notes.append(f"scale: process RSS before data {rss0:.0f} MB; the default schedule (400 INR + 200 decoder "
                     "epochs) is extrapolated from the measured epoch times in the table, not run")
    return sec
