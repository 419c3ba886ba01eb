"""Shared pieces of the reproduction: the encodings compared, data seeds, the parallel training jobs, lr tuning alike, gates and tables."""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from icml25.claims import Claim, fmt_seeds
from icml25.experiment import Section

from string_pe.config import Config

PTS_PES = ("ape", "ape-fourier", "rope-axial", "rope-mixed", "cayley", "circulant")
LIN_PES = ("rope-mixed", "cayley", "circulant")
"""Encodings trained with Performer-style linear attention on the point sets (encoding on the features)."""
IMG_PES = ("ape", "rope-axial", "rope-mixed", "cayley", "circulant")
"""Encodings of the RGB ViTs (the ViT's absolute PE is the learned table, as in the paper's ViT baseline; the
Fourier APE runs on the point sets only, to keep the image experiment inside the time budget)."""
LABEL = {"none": "no PE", "ape": "learned APE", "ape-fourier": "Fourier APE", "rope-axial": "RoPE-Axial",
         "rope-mixed": "RoPE-Mixed", "cayley": "Cayley-STRING", "circulant": "Circulant-STRING"}
ROTARY = ("rope-axial", "rope-mixed", "cayley", "circulant")
STRINGS = ("cayley", "circulant")
ABSOLUTE = ("ape", "ape-fourier")
ROPES = ("rope-axial", "rope-mixed")
LR_GRID = Config().lr_grid
"""The learning-rate grid every model is tuned on (same size and budget for all; extended at an edge, see EXTEND)."""
EXTEND = 2
"""Steps a choice at the grid's edge may be extended by, for every competitor alike (the first in parallel, the second
only where the first extension is again the best)."""

EXTENT = 8.0
SHIFT = 5 * EXTENT  # +40 per axis: five box widths
RANDOM_SHIFT = 10 * EXTENT
PAPER_VIT = "ImageNet ViT (Table 2): the top two are STRING variants, > 1% absolute over ViT (APE)"
PAPER_3D = "KUKA pick (Fig. 5, Circulant-STRING): 3D STRING 73.8% vs 2D 65.3% success"

# Data seeds of the generated splits: split -> offset added to the run seed. Test and validation sets are drawn
# from disjoint seed ranges (validation uses the tuning seed only), so they never coincide (tested).
DATA_SEED = {("2d", "train"): 1000, ("2d", "test"): 2000, ("2d", "val"): 6000,
             ("img", "train"): 10000, ("img", "val"): 11000, ("img", "test"): 12000}


def data_seed(task: str, split: str, seed: int) -> int:
    """Seed of the generated ``split`` (train / val / test) of ``task`` (2d / img) for run seed ``seed`` (< 1000)."""
    if not 0 <= seed < 1000:
        raise ValueError(f"seed must be in [0, 1000) so that data seed ranges stay disjoint, got {seed}")
    return DATA_SEED[(task, split)] + seed


_fmt = partial(fmt_seeds, spec=".3f", sd_spec=".3f")  # mean ± sd over seeds, one table cell


def _best(names: tuple[str, ...], scores: dict[str, list[float]]) -> str:
    """The name with the highest mean test score (the strongest baseline of a family: conservative for us)."""
    return max(names, key=lambda p: float(np.mean(scores[p])))


# ---------------------------------------------------------------------------------------------- parallel jobs
_DATA: dict[Any, Any] = {}
"""Data of the running experiment, filled in the parent before the worker processes fork (read-only in workers)."""


def _pts_job(job: dict) -> dict:
    """Train one point-set model; ``acc`` = final validation accuracy (tuning), ``curve`` = validation accuracy after
    every epoch (gates), ``test`` / ``shift`` / ``random`` / ``logit_diff`` on the seed's test split."""
    import torch
    from icml25.seeding import seed_everything

    from string_pe.data import PointSets, translate
    from string_pe.model import PointSetClassifier
    from string_pe.train import TrainSettings, accuracy, fit

    torch.set_num_threads(1)
    cfg: Config = _DATA["cfg"]
    s, pe, ds = job["seed"], job["pe"], job["data_seed"]
    tr, va, te = (_DATA[("pts", split, ds)] for split in ("train", "val", "test"))
    seed_everything(s)
    model = PointSetClassifier(feature_dim=tr.features.shape[-1], coord_dim=2, num_classes=4, dim=cfg.pts_dim,
                               depth=cfg.pts_depth, num_heads=cfg.pts_heads, pe=pe,
                               attn=job.get("attn", "softmax"), encoding_kwargs=job.get("enc"))

    def acc(d) -> float:
        return accuracy(model, (d.features, d.positions), d.labels)

    curve: list[float] = []

    def on_epoch(epoch: int, loss: float) -> None:
        curve.append(acc(va))
        model.train()

    fit(model, (tr.features, tr.positions), tr.labels,
        TrainSettings(epochs=cfg.pts_epochs, batch_size=64, lr=job["lr"], weight_decay=0.01, seed=s),
        on_epoch=on_epoch)
    out = {"acc": curve[-1], "curve": curve, "test": acc(te), "shift": acc(translate(te, SHIFT)),
           "random": acc(translate(te, None, max_shift=RANDOM_SHIFT, seed=3000 + s))}
    with torch.no_grad():  # the invariance itself, in float64: max |Δ logit| over both translations
        m64 = copy.deepcopy(model).double()
        te64 = PointSets(te.features.double(), te.positions.double(), te.labels, te.classes)
        ref = m64(te64.features, te64.positions)
        out["logit_diff"] = max(float((m64(d.features, d.positions) - ref).abs().max())
                                for d in (translate(te64, SHIFT),
                                          translate(te64, None, max_shift=RANDOM_SHIFT, seed=3000 + s)))
    return out


def image_inputs(images, depth, mode: str) -> tuple:
    """Model inputs for ``mode``: ``"rgb"`` ``(x − ½,)``, ``"rgbd-3d"`` ``(x − ½, depth)`` (depth → 3D patch
    coordinates), ``"rgbd-channel"`` ``(cat[x − ½, depth − ½],)`` (depth as a fourth input channel)."""
    import torch

    x = images - 0.5
    if mode == "rgb":
        return (x,)
    if mode == "rgbd-3d":
        return (x, depth)
    if mode == "rgbd-channel":
        return (torch.cat([x, depth - 0.5], dim=1),)  # (n, 3, H, W) + (n, 1, H, W) -> (n, 4, H, W)
    raise ValueError(f"mode must be 'rgb', 'rgbd-3d' or 'rgbd-channel', got {mode!r}")


def build_vit(cfg: Config, pe: str, mode: str, num_classes: int, encoding_kwargs: dict | None = None):
    from string_pe.model import ViT

    return ViT(image_size=(cfg.img_size, cfg.img_size), patch_size=cfg.img_patch,
               in_chans=4 if mode == "rgbd-channel" else 3, num_classes=num_classes, dim=cfg.vit_dim,
               depth=cfg.vit_depth, num_heads=cfg.vit_heads, pe=pe, coord_dim=3 if mode == "rgbd-3d" else 2,
               encoding_kwargs=encoding_kwargs)


def _img_job(job: dict) -> dict:
    """Train one ViT; ``acc`` = final validation accuracy (tuning), ``curve`` = validation accuracy after every
    epoch (gates), ``test`` = accuracy on the seed's test scenes."""
    import torch
    from icml25.seeding import seed_everything

    from string_pe.train import TrainSettings, accuracy, fit

    torch.set_num_threads(1)
    cfg: Config = _DATA["cfg"]
    s, mode, ds = job["seed"], job["mode"], job["data_seed"]
    x, d, y = _DATA[("img", "train", ds)]
    xv, dv, yv = _DATA[("img", "val", ds)]
    seed_everything(s)
    from string_pe.images import TASKS

    model = build_vit(cfg, job["pe"], mode, len(TASKS[cfg.img_task]), job.get("enc"))
    curve: list[float] = []

    def on_epoch(epoch: int, loss: float) -> None:
        curve.append(accuracy(model, image_inputs(xv, dv, mode), yv))
        model.train()

    losses = fit(model, image_inputs(x, d, mode), y,
                 TrainSettings(epochs=cfg.img_epochs, batch_size=cfg.img_batch, lr=job["lr"], weight_decay=0.05,
                               warmup_epochs=cfg.img_warmup, seed=s), on_epoch=on_epoch)
    xe, de, ye = _DATA[("img", "test", ds)]
    return {"acc": curve[-1], "curve": curve, "test": accuracy(model, image_inputs(xe, de, mode), ye),
            "train": accuracy(model, image_inputs(x, d, mode), y), "losses": losses}


def _run_jobs(fn: Callable[[dict], dict], jobs: list[dict], workers: int) -> list[dict]:
    """``[fn(job) for job in jobs]``, in ``workers`` forked one-thread processes when ``workers > 1``
    (:func:`icml25.parallel.fork_map`; the jobs read the data sets this process built, so they need fork)."""
    from icml25.parallel import fork_map

    return fork_map(fn, jobs, workers)


class _Tuner:
    """Tune many competitors alike with their grid points trained in parallel, scored on ``seeds`` tuning seeds.

    ``run()`` trains every grid point of every competitor on every tuning seed at once, then the one extra point of
    each competitor chosen at an edge, and runs :func:`icml25.tuning.tune_alike` on the cached scores (the mean
    validation accuracy over the tuning seeds), so the choice, edge extension and notes are exactly the shared
    tuner's. ``seeds=(None,)`` uses each spec's own seed. Every job's full result is kept (:meth:`result`), so the
    final runs at the chosen lr on the tuning seeds are not trained twice."""

    def __init__(self, fn: Callable[[dict], dict], workers: int, lr_grid: tuple[float, ...],
                 seeds: tuple[int | None, ...] = (None,)) -> None:
        self.fn, self.workers, self.grid, self.seeds = fn, workers, list(lr_grid), tuple(seeds)
        self.cache: dict[tuple[str, float], float] = {}
        self.results: dict[tuple[str, float, int | None], dict] = {}
        self.specs: dict[str, dict] = {}

    def add(self, name: str, spec: dict) -> None:
        self.specs[name] = spec

    def job(self, name: str, lr: float, seed: int | None) -> dict:
        return {**self.specs[name], "lr": lr, **({} if seed is None else {"seed": seed, "data_seed": seed})}

    def result(self, name: str, lr: float, seed: int | None) -> dict | None:
        return self.results.get((name, lr, seed))

    def _train(self, keys: list[tuple[str, float]]) -> None:
        todo = [(n, lr, s) for n, lr in keys if (n, lr) not in self.cache for s in self.seeds]
        res = _run_jobs(self.fn, [self.job(n, lr, s) for n, lr, s in todo], self.workers)
        self.results.update(dict(zip(todo, res, strict=True)))
        for n, lr in keys:
            self.cache[(n, lr)] = float(np.mean([self.results[(n, lr, s)]["acc"] for s in self.seeds]))

    def run(self) -> dict:
        from icml25.tuning import _next_value, tune_alike

        self._train([(n, lr) for n in self.specs for lr in self.grid])
        extra = []
        for n in self.specs:
            scores = [self.cache[(n, lr)] for lr in self.grid]
            best = self.grid[int(np.argmax(scores))]  # ties: first, as select()
            if best in (min(self.grid), max(self.grid)):
                extra.append((n, _next_value(self.grid, best == max(self.grid))))
        self._train(extra)

        def ev(n: str) -> Callable[[dict], float]:
            def f(p: dict) -> float:
                if (n, p["lr"]) not in self.cache:
                    self._train([(n, p["lr"])])
                return self.cache[(n, p["lr"])]
            return f

        return tune_alike({n: (ev(n), {"lr": list(self.grid)}) for n in self.specs}, extend=EXTEND)


def final_runs(tuner: _Tuner, sel: dict, names: list[str], seeds: list[int]) -> dict[str, list[dict]]:
    """Every competitor's result at its chosen lr on every seed, in seed order; the runs the tuner already made on
    its tuning seeds (same seed, data and lr: the same model) are reused, the other seeds are trained here."""
    todo = [(n, s) for s in seeds for n in names if tuner.result(n, sel[n].params["lr"], s) is None]
    res = _run_jobs(tuner.fn, [tuner.job(n, sel[n].params["lr"], s) for n, s in todo], tuner.workers)
    got = dict(zip(todo, res, strict=True))
    return {n: [tuner.result(n, sel[n].params["lr"], s) or got[(n, s)] for s in seeds] for n in names}


GATE_WINDOW = 2
"""Gates: a validation curve has plateaued when its best value rose by at most the seed noise over the last
``GATE_WINDOW`` epochs (:func:`icml25.train.plateau_check`)."""


def gate_name(where: str, name: str) -> str:
    return f"Gate ({where}): {name} has learned the task"


def add_gate(sec: Section, where: str, name: str, runs: list[dict], *, chance: float, margin: float) -> str:
    """Competence gate of one competitor: every seed's validation curve (one point per epoch) plateaued, and its
    test accuracy is above the stated accuracy ``chance + margin`` (one-sided test over seeds). Returns its name."""
    from icml25.train import Curve

    curves = [Curve(steps=list(range(1, len(r["curve"]) + 1)), values=[float(v) for v in r["curve"]],
                    patience=GATE_WINDOW) for r in runs]
    sec.add(Claim.gate(
        claim=gate_name(where, name), metric="test accuracy; validation accuracy after every epoch (plateau)",
        ours=[r["test"] for r in runs], controls={f"chance + {margin:g}": chance}, margin=margin, curves=curves,
        note=f"stated accuracy {chance + margin:.2f} (chance {chance:.2f} + {margin:g}); final validation "
             f"accuracy {_fmt([r['curve'][-1] for r in runs])}"))
    return gate_name(where, name)


def curve_table(sec: Section, where: str, runs: dict[str, list[dict]]) -> None:
    """Table of every competitor's validation accuracy after each epoch, mean over seeds (what the gates' plateau
    half reads, per seed)."""
    n_ep = max(len(r["curve"]) for rs in runs.values() for r in rs)
    rows = [[n, *(f"{np.mean([r['curve'][e] for r in rs]):.3f}" for e in range(n_ep))] for n, rs in runs.items()]
    sec.table(f"Validation accuracy after each epoch ({where}; mean over seeds)",
              ["model", *(str(e + 1) for e in range(n_ep))], rows)


def _pair_note(sel: dict, a: str, b: str) -> str:
    return f"{sel[a].note()}; {sel[b].note()}"


def lin_name(pe: str) -> str:
    return f"{LABEL[pe]} (linear attention)"


INIT_NAMES = {"cayley": "Cayley-STRING, random S", "circulant": "Circulant-STRING, random init"}


def _other_inits(cfg: Config) -> dict[str, dict]:
    """The initialisation study's competitors: Cayley from a random small S, Circulant from random coefficients."""
    return {INIT_NAMES["cayley"]: {"pe": "cayley", "enc": {"s_init_std": cfg.s_init_std}},
            INIT_NAMES["circulant"]: {"pe": "circulant", "enc": {"init": "normal", "init_std": cfg.circ_init_std}}}
