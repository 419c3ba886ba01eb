"""Command line of suica: ``suica simulate | fit | predict | evaluate | reproduce`` (``.h5ad`` in and out)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import tyro
from icml25.cli_helpers import BaseOptions, CommonOptions, ReproduceOptions, method_main, open_run_dir

from suica.config import SUICAConfig
from suica.registry import METHOD


@dataclass(frozen=True)
class SimulateConfig(BaseOptions):
    """Write a synthetic tissue with ground truth (true rate in layers["rate"], domains in obs["domain"]).

    Runs on the CPU (numpy) and writes one file, --output: there is no --device, --out or --overwrite."""

    out: Annotated[Path | None, tyro.conf.Suppress] = None
    overwrite: Annotated[bool, tyro.conf.Suppress] = False
    output: Path = Path("tissue.h5ad")
    """Output .h5ad file (replaced if it exists)."""
    n_spots: int = 2000
    """Number of spots (hex layouts round it)."""
    n_genes: int = 500
    """Number of genes."""
    n_domains: int = 5
    """Number of spatial domains."""
    layout: Literal["hex", "random"] = "hex"
    """Visium-like hexagonal grid or Slide-seq-like random spots."""
    dim: Literal[2, 3] = 2
    """2D or 3D tissue."""
    zero_frac: float = 0.88
    """Target fraction of zero counts."""
    holdout: float = 0.2
    """Fraction of spots marked obs["split"] == "test" (0 disables)."""
    noise: float = 0.0
    """Scale of non-negative noise added on the support (0 disables)."""


@dataclass(frozen=True)
class FitConfig(CommonOptions):
    """Fit SUICA on an .h5ad (X counts or normalised counts, obsm["spatial"]); spots with obs[split] == "test" are held out."""

    PRESETS = {"cpu": SUICAConfig.cpu, "paper": SUICAConfig.paper}
    PRESET_FIELD = "model"

    data: Path = Path("tissue.h5ad")
    """Input .h5ad file."""
    preprocess: bool = True
    """Apply the official filtering + normalize_total (set False if X is already normalised)."""
    min_counts_spot: float = 200
    """Preprocessing: minimum total counts per spot (official 200)."""
    min_counts_gene: float = 3
    """Preprocessing: minimum total counts per gene on training spots (official 3)."""
    max_count: float | None = 200
    """Preprocessing: drop genes with any count above this on training spots (official 200; None disables)."""
    target_sum: float = 200
    """Preprocessing: normalize_total target (official 200)."""
    split_key: str = "split"
    """obs column marking held-out spots with the value "test" (ignored when absent)."""
    layer: str | None = None
    """Expression from adata.layers[LAYER] instead of adata.X (e.g. "counts"); sparse matrices stay sparse."""
    model: SUICAConfig = field(default_factory=SUICAConfig)
    """SUICA hyper-parameters."""


@dataclass(frozen=True)
class SuicaReproduceOptions(ReproduceOptions):
    """Run SUICA and its baselines side by side and measure the paper's claims (a fixed CPU-scale protocol, so
    there is no --device). --task scale runs the sparse 10^5 x 2*10^4 mini-batch benchmark instead."""

    task: Literal["main", "scale"] = "main"
    """main: the claims (results/full); scale: the sparse mini-batch benchmark (results/full/scale)."""


@dataclass(frozen=True)
class PredictConfig(CommonOptions):
    """Predict expression with a fitted model on a dense grid (super-resolution) or at given coordinates.

    Writes one file, --output: there is no --out or --overwrite."""

    out: Annotated[Path | None, tyro.conf.Suppress] = None
    overwrite: Annotated[bool, tyro.conf.Suppress] = False
    model: Path = Path("runs/suica/model")
    """Run directory written by `suica fit`."""
    output: Path = Path("prediction.h5ad")
    """Output .h5ad file (replaced if it exists)."""
    grid: int = 200
    """Grid resolution per axis (used when --coords is not given)."""
    coords: Path | None = None
    """Query coordinates: an .h5ad (obsm["spatial"]), .npy or .csv (n, 2 or 3)."""
    allow_extrapolation: bool = False
    """Allow queries outside the training frame."""
    full_square: bool = False
    """Grid over [-1, 1]^d in the normalised frame (official Full2D) instead of the data's extent."""


@dataclass(frozen=True)
class EvaluateConfig(CommonOptions):
    """Evaluate a fitted model on the held-out spots of its data (obs[split] == "test"); writes config.json, env.json
    and evaluation.json to --out."""

    model: Path = Path("runs/suica/model")
    """Run directory written by `suica fit`."""
    data: Path | None = None
    """An .h5ad to evaluate on (all its spots); default: the held-out spots saved by `suica fit`."""
    allow_extrapolation: bool = True
    """Allow held-out spots outside the training frame (they are on the border of the tissue)."""


def _threads() -> None:
    from icml25.device import set_threads

    set_threads(2)


def simulate(cfg: SimulateConfig) -> int:
    from icml25.errors import check_non_negative, check_positive

    check_positive(cfg, "n_spots", "n_genes", "n_domains", prefix="--")
    check_non_negative(cfg, "zero_frac", "holdout", "noise", prefix="--")
    for name in ("zero_frac", "holdout"):
        if getattr(cfg, name) >= 1:
            raise ValueError(f"--{name.replace('_', '-')} must be in [0, 1), got {getattr(cfg, name)}")

    import numpy as np

    from suica.data import write_h5ad
    from suica.synthetic import add_noise, holdout_spots, make_tissue

    a = make_tissue(n_spots=cfg.n_spots, n_genes=cfg.n_genes, n_domains=cfg.n_domains, layout=cfg.layout,
                    dim=cfg.dim, zero_frac=cfg.zero_frac, seed=cfg.seed)
    if cfg.noise > 0:
        a = add_noise(a, scale=cfg.noise, seed=cfg.seed)
        a.layers["counts"] = a.X.copy()
    split = np.array(["train"] * a.n_obs, dtype=object)
    if cfg.holdout > 0:
        _, te = holdout_spots(a.n_obs, frac=cfg.holdout, seed=cfg.seed)
        split[te] = "test"
    a.obs["split"] = split.astype(str)
    write_h5ad(a, cfg.output)
    if not cfg.quiet:
        print(f"wrote {a.n_obs} spots x {a.n_vars} genes to {cfg.output}")
    return 0


def _split(adata, key: str):
    import numpy as np

    if key in adata.obs:
        test = np.asarray(adata.obs[key].astype(str) == "test")
        return np.flatnonzero(~test), np.flatnonzero(test)
    return np.arange(adata.n_obs), np.zeros(0, dtype=int)


def fit(cfg: FitConfig) -> int:
    from icml25.seeding import seed_everything

    from suica.data import preprocess, read_h5ad, write_h5ad
    from suica.estimator import SUICA

    _threads()
    seed_everything(cfg.seed)
    adata = read_h5ad(cfg.data, what="--data")
    _check_all_coords(adata, "--data")
    if cfg.layer is not None:
        from suica.data import expression

        expression(adata, cfg.layer)  # clear error for a missing layer
        if cfg.preprocess:  # preprocessing reads raw counts from layers["counts"]: use the chosen layer as counts
            adata.layers["counts"] = adata.layers[cfg.layer]
    if cfg.preprocess:
        tr, _ = _split(adata, cfg.split_key)
        adata = preprocess(adata, min_counts_spot=cfg.min_counts_spot, min_counts_gene=cfg.min_counts_gene,
                           max_count=cfg.max_count, target_sum=cfg.target_sum, fit_on=tr)
    tr, te = _split(adata, cfg.split_key)
    rd = open_run_dir("suica", cfg)
    rd.write_config(cfg)
    rd.write_env(device=cfg.device)
    layer = None if cfg.preprocess else cfg.layer  # after preprocessing the normalised counts are in X
    model = SUICA(config=cfg.model, device=cfg.device, verbose=not cfg.quiet).fit(adata, train_idx=tr, layer=layer)
    for phase, losses in model.history.items():
        for i, v in enumerate(losses):
            if i % 10 == 0 or i == len(losses) - 1:
                rd.log(i, phase=phase, loss=v)
    model.save(rd.path)
    write_h5ad(adata, rd.path / "data.h5ad")
    import numpy as np
    import pandas as pd

    from suica.tl import provenance

    split = np.full(adata.n_obs, "train", dtype=object)
    split[te] = "test"  # O(n) (was a set rebuilt per spot: quadratic)
    # predictions written chunk by chunk into the .h5ad: O(chunk x genes) memory at any number of spots
    model.predict_to_h5ad(adata.obsm["spatial"], rd.path / "predictions.h5ad", allow_extrapolation=True,
                          chunk=CHUNK, obs=pd.DataFrame({"split": split.astype(str)}, index=adata.obs_names),
                          uns=provenance(model, data=str(cfg.data), layer=cfg.layer, n_train=len(tr),
                                         n_test=len(te)))
    rd.write_json("fit.json", {"n_train": int(len(tr)), "n_test": int(len(te)), "timings_s": model.timings})
    if not cfg.quiet:
        print(f"fitted SUICA on {len(tr)} spots x {adata.n_vars} genes ({len(te)} held out); model in {rd.target}")
    return 0


def _load_coords(path: Path):
    import numpy as np

    from suica.data import read_h5ad
    from suica.errors import SUICAInputError

    if not path.exists():
        raise FileNotFoundError(f"no such coordinates file: {str(path)!r}")
    if path.suffix == ".h5ad":
        a = read_h5ad(path, what="--coords")
        if "spatial" not in a.obsm:
            raise SUICAInputError(f'--coords {str(path)!r}: obsm["spatial"] is missing')
        xy = np.asarray(a.obsm["spatial"])
    elif path.suffix == ".npy":
        try:
            xy = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise SUICAInputError(f"--coords {str(path)!r} is not a numeric .npy array file ({exc})") from None
    elif path.suffix == ".csv":
        try:
            xy = np.loadtxt(path, delimiter=",", ndmin=2)
        except ValueError:
            try:  # one header row (e.g. "x,y") is allowed
                xy = np.loadtxt(path, delimiter=",", ndmin=2, skiprows=1)
            except ValueError as exc:
                raise SUICAInputError(f"--coords {str(path)!r}: expected a CSV of numbers, one row per location "
                                      f"(an optional header row), got: {exc}") from None
    else:
        raise SUICAInputError(f"--coords must be .h5ad, .npy or .csv, got {str(path)!r}")
    if xy.ndim != 2 or xy.shape[1] not in (2, 3):
        raise SUICAInputError(f"--coords {str(path)!r}: expected shape (n, 2) or (n, 3), got {xy.shape}")
    if not np.issubdtype(xy.dtype, np.number) or not np.isfinite(xy).all():
        raise SUICAInputError(f"--coords {str(path)!r}: coordinates must be finite numbers (NaN/inf found)")
    return xy


def _check_all_coords(adata, what: str) -> None:
    """Every spot (held-out ones too) needs finite coordinates: a NaN would silently break the split's metrics."""
    import numpy as np

    from suica.errors import SUICAInputError

    if "spatial" not in adata.obsm:
        raise SUICAInputError(f'{what}: obsm["spatial"] (spot coordinates) is missing')
    xy = np.asarray(adata.obsm["spatial"], dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(xy).all(axis=1))
    if bad.size:
        names = [str(adata.obs_names[i]) for i in bad[:3]]
        raise SUICAInputError(f'{what}: obsm["spatial"] has non-finite coordinates for {bad.size} spot(s), '
                              f"e.g. {names}")


def predict(cfg: PredictConfig) -> int:
    import time

    from suica.data import write_h5ad
    from suica.estimator import SUICA

    _threads()
    model = SUICA.load(cfg.model, device=cfg.device)
    t0 = time.perf_counter()
    if cfg.coords is not None:
        out = model.predict(_load_coords(cfg.coords), allow_extrapolation=cfg.allow_extrapolation)
    else:
        if cfg.grid < 1:
            raise ValueError(f"grid must be >= 1, got {cfg.grid}")
        out = model.predict_grid(cfg.grid, full_square=cfg.full_square)
    dt = time.perf_counter() - t0
    write_h5ad(out, cfg.output)
    if not cfg.quiet:
        print(f"predicted {out.n_obs} locations x {out.n_vars} genes in {dt:.2f} s -> {cfg.output}")
    return 0


CHUNK = 4096
"""``suica evaluate``: held-out spots predicted and scored this many at a time."""


def evaluate(cfg: EvaluateConfig) -> int:
    import numpy as np

    from suica.data import dense, read_h5ad
    from suica.errors import SUICAInputError
    from suica.estimator import SUICA
    from suica.metrics import MetricAccumulator

    _threads()
    model = SUICA.load(cfg.model, device=cfg.device)
    if cfg.data is not None:
        a = read_h5ad(cfg.data, what="--data")
        where = f"--data {str(cfg.data)!r}"
    else:
        a = read_h5ad(cfg.model / "data.h5ad", what="--model")
        where = f"--model {str(cfg.model / 'data.h5ad')!r}"
        _, te = _split(a, "split")
        if len(te) == 0:
            raise ValueError("the model's data has no held-out spots (obs['split'] == 'test'); pass --data")
        a = a[te]
    _check_all_coords(a, where)  # obsm["spatial"] present, finite
    coords = np.asarray(a.obsm["spatial"])
    if coords.ndim != 2 or coords.shape[1] != model.frame.dim:
        raise SUICAInputError(f'{where}: obsm["spatial"] must be (n_spots, {model.frame.dim}) like the training data, '
                              f"got {coords.shape}")
    missing = [g for g in model.var_names if g not in set(a.var_names)]
    if missing:
        raise SUICAInputError(f"{where} lacks {len(missing)} of the model's genes (e.g. {missing[:3]})")
    truth = a[:, model.var_names].X  # dense or sparse: read CHUNK spots at a time, never densified as a whole
    acc = MetricAccumulator()
    for s in range(0, a.n_obs, CHUNK):
        pred = model.predict(coords[s:s + CHUNK], allow_extrapolation=cfg.allow_extrapolation).X
        acc.update(pred, dense(truth[s:s + CHUNK]))
    res = acc.result()
    rd = open_run_dir("suica", cfg)  # --out was checked before the work (method_main)
    rd.write_config(cfg)
    rd.write_env(device=cfg.device)
    rd.write_json("evaluation.json", res)
    if not cfg.quiet:
        print(json.dumps(res, indent=2))
        print(f"written to {rd.target}")
    return 0


def _reproduce(opts: SuicaReproduceOptions) -> int:
    from dataclasses import replace

    from icml25.cli_helpers import run_reproduce
    from icml25.registry import default_out

    from suica import reproduce as rep

    out = opts.out if opts.out is not None else default_out(METHOD.name)
    # main: the run is staged and replaces `out` whole; sub-runs inside it (scale/) are carried into the new run
    scale = opts.task == "scale"
    run_reproduce(replace(METHOD, reproduce=rep.reproduce_scale if scale else rep.reproduce), quick=opts.quick,
                  smoke=opts.smoke, out=out, seed=opts.seed, overwrite=opts.overwrite, quiet=opts.quiet,
                  keep=() if scale else rep.SUBRUNS)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(
        METHOD,
        {
            "simulate": (SimulateConfig, simulate),
            "fit": (FitConfig, fit),
            "predict": (PredictConfig, predict),
            "evaluate": (EvaluateConfig, evaluate),
            "reproduce": (SuicaReproduceOptions, _reproduce),
        },
        argv=argv,
    )
