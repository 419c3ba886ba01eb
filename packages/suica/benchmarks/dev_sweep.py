"""Development sweep behind the README's "why SUICA loses to the interpolators" (issue 36, priority 0).

Runs SUICA variants, PCA + INR and the interpolators on two *development* tissue settings that the generalisation
experiment does not use (Voronoi domains, hex / random layouts, seeds 77000+), 500 spots x 120 genes, 20 % of the
spots held out, and prints the held-out means over the seeds. Not part of ``reproduce``; run it under the CPU lock::

    flock /tmp/icml25-cpu.lock uv run --no-sync python packages/suica/benchmarks/dev_sweep.py \
        '{"default": {}, "idw16": {"k": 16}, "pca": {}, "mse": {"decoder_loss": "mse"}}' 0,1,2

First argument: ``{name: SUICA overrides}`` (names starting with ``idw`` / ``gauss`` / ``pca`` select those
methods); second: seeds; optional third: spots. Two worker processes, one torch thread each.
"""
import json
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np
import torch

torch.set_num_threads(1)
from multiprocessing import Pool

from suica.reproduce import _make, _prepare, _scores
from suica.synthetic import make_tissue

DEV = {  # development tissues: none of the generalisation settings, seeds not used by reproduce
    "voronoi3/hex/88": dict(domain_shape="voronoi", layout="hex", zero_frac=0.88, n_domains=3),
    "voronoi4/random/85": dict(domain_shape="voronoi", layout="random", zero_frac=0.85, n_domains=4),
}
VARIANTS = json.loads(sys.argv[1])
SEEDS = [int(s) for s in sys.argv[2].split(",")]
N = int(sys.argv[3]) if len(sys.argv) > 3 else 500

def job(args):
    dname, s, vname = args
    torch.set_num_threads(1)
    raw = make_tissue(n_spots=N, n_genes=120, seed=77000 + s, **DEV[dname])
    a, tr, te = _prepare(raw, s)
    x, rate, xy = np.asarray(a.X), np.asarray(a.layers["rate"]), a.obsm["spatial"]
    kw = VARIANTS[vname]
    t0 = time.perf_counter()
    if vname.startswith("idw"):
        m = _make("idw", {}, s, {"k": kw.get("k", 16)}).fit(a, train_idx=tr)
    elif vname.startswith("gauss"):
        m = _make("gaussian", {}, s, {"bandwidth": kw.get("bandwidth", 2.0)}).fit(a, train_idx=tr)
    elif vname.startswith("pca"):
        m = _make("pca_inr", kw, s).fit(a, train_idx=tr)
    else:
        m = _make("suica", kw, s).fit(a, train_idx=tr)
    p = np.asarray(m.predict(xy, allow_extrapolation=True).X)
    ev = _scores(p, x, rate, te)
    return dname, s, vname, {k: ev[k] for k in ("rate_corr", "masked_pearson", "zero_iou", "mae")}, time.perf_counter() - t0

if __name__ == "__main__":
    jobs = [(d, s, v) for d in DEV for s in SEEDS for v in VARIANTS]
    res = {}
    with Pool(2) as pool:
        for d, s, v, ev, t in pool.imap_unordered(job, jobs):
            res.setdefault((d, v), []).append((ev, t))
    for d in DEV:
        for v in VARIANTS:
            r = res[(d, v)]
            print(f"{d:20s} {v:22s} " + " ".join(f"{k}={np.mean([e[k] for e, _ in r]):.3f}" for k in r[0][0]) + f" t={np.mean([t for _, t in r]):.1f}")
