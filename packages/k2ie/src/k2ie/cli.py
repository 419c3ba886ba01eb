"""Command line of k2ie: ``k2ie fit | evaluate | reproduce [--quick|--smoke]``.

``fit`` fits K²IE (or a baseline) on generated data or on your own points (a CSV file, one coordinate per column,
with the window given by ``--bounds lo hi ...``; or a JSON file with ``points`` (N, d) and ``window``
(n_box, d, 2)), optionally selecting (a, b) by p-thinning hold-out, and writes ``model.json`` (the
parameters, points and window: the fit is deterministic, so this is the whole model), ``fit.json`` and
``intensity.json`` (λ̂ on a grid). ``evaluate`` reloads a fit run and scores it against a known truth or predicts at
the points of a JSON file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from icml25.cli_helpers import BaseOptions, ReproduceOptions, method_main, reproduce_command

from k2ie.config import EstimatorConfig, cpu, fit_settings, paper
from k2ie.errors import K2ieError
from k2ie.registry import METHOD

DataName = Literal["l1", "l2", "l3", "bumps2d"]


@dataclass(frozen=True)
class FitOptions(BaseOptions):
    """Fit an intensity estimator and write the run directory (a NumPy method: it runs on the CPU, no --device)."""

    PRESETS = {"cpu": lambda: fit_settings(cpu()), "paper": lambda: fit_settings(paper())}

    method: Literal["k2ie", "kie", "fie"] = "k2ie"
    """Estimator: K²IE, the edge-corrected KIE, or Flaxman et al.'s RKHS estimator."""
    data: DataName = "l1"
    """Generated data when --points is not given: 1-D truths l1/l2/l3 or the 2-D bumps on a fragmented window."""
    scale: float = 1.0
    """Multiplier of the generated truth (10 gives the ×10 data sets)."""
    p_cell: float = 1.0
    """bumps2d only: probability of keeping each unit cell of [0, 5]² in the window."""
    points: Path | None = None
    """Your data: a CSV file (one point per row, one coordinate per column, optional header row; needs --bounds) or
    a JSON file {"points": [[x1, ...], ...], "window": [[[lo, hi], ...], ...]}."""
    bounds: tuple[float, ...] | None = None
    """Window of CSV points: lo hi per column, e.g. --bounds 0 50 (1-D) or --bounds 0 5 0 5 (2-D)."""
    allow_overlap: bool = False
    """Accept overlapping window boxes (their overlap is counted twice)."""
    estimator: EstimatorConfig = field(default_factory=EstimatorConfig)
    """Hyper-parameters (used as given with --no-select)."""
    select: bool = True
    """Choose (a, b) (KIE: b) by p-thinning hold-out on the official log grid."""
    grid_size: int = 6
    """Grid points per axis (a and b over [0.1, 100], b divided by the window's extent along axis 0)."""
    p: float = 0.6
    """Thinning probability of the training split, in (0, 1)."""
    n_splits: int = 10
    """Hold-out splits (the score is averaged over them; the released scripts use 5)."""
    cv: Literal["holdout", "lscv"] = "holdout"
    """Selection criterion: p-thinning hold-out, or K²IE's in-sample LSCV."""


@dataclass(frozen=True)
class EvaluateOptions(BaseOptions):
    """Reload a `k2ie fit` run; score it against its generated truth, or predict at the points of a JSON file."""

    run: Path = Path("runs/k2ie/latest")
    """Run directory written by `k2ie fit`."""
    x: Path | None = None
    """JSON file {"x": [[...], ...]}: predict λ̂ there (otherwise: ISE/IAE against the run's generated truth)."""


def _truth(data: str, scale: float, p_cell: float, seed: int):
    from k2ie.data import fragmented_window, intensity_1d, intensity_2d

    if data == "bumps2d":
        base = intensity_2d()
        from k2ie.data import Intensity
        truth = Intensity(base.name, lambda x: scale * base.fn(x), scale * base.upper, base.window)
        return truth, fragmented_window(p_cell, seed=10_000 + seed)
    t = intensity_1d(int(data[1]), scale=scale)
    return t, t.window


def _estimator(method: str, cfg: EstimatorConfig, seed: int):
    from k2ie.estimators import K2IE, KIE, FlaxmanRKHS

    if method == "kie":
        return KIE(kernel=cfg.kernel, b=cfg.b)
    cls = K2IE if method == "k2ie" else FlaxmanRKHS
    return cls(kernel=cfg.kernel, a=cfg.a, b=cfg.b, n_features=cfg.n_features, qmc=cfg.qmc, seed=seed)


def fit_command(opts: FitOptions) -> int:
    from icml25.registry import default_out
    from icml25.rundir import RunDir

    from k2ie.data import simulate
    from k2ie.selection import select

    # validate everything before the run directory is created
    if not (np.isfinite(opts.scale) and opts.scale > 0):
        raise K2ieError(f"--scale must be a positive finite number, got {opts.scale}")
    if not (np.isfinite(opts.p_cell) and 0 < opts.p_cell <= 1):  # checked for every --data: it is stored in the run
        raise K2ieError(f"--p-cell must be in (0, 1] (probability of keeping a cell), got {opts.p_cell}")
    if not 0 < opts.p < 1:
        raise K2ieError(f"--p must be in (0, 1) (probability of keeping a point for training), got {opts.p}")
    for name in ("grid_size", "n_splits"):
        if getattr(opts, name) < 1:
            raise K2ieError(f"--{name.replace('_', '-')} must be a positive integer, got {getattr(opts, name)}")
    if opts.cv == "lscv" and opts.method != "k2ie":
        raise K2ieError("--cv 'lscv' is defined for --method k2ie only")
    if opts.bounds is not None and opts.points is None:
        raise K2ieError("--bounds is the window of --points FILE.csv; generated --data has its own window")
    est = _estimator(opts.method, opts.estimator, opts.seed)
    if opts.points is not None:
        from k2ie.io import load_points

        x, win = load_points(opts.points, bounds=opts.bounds, allow_overlap=opts.allow_overlap)
        truth = None
    else:
        truth, win = _truth(opts.data, opts.scale, opts.p_cell, opts.seed)
        x = simulate(truth, win, seed=opts.seed)
    extent = float(win.bounds[0, 1] - win.bounds[0, 0])
    info: dict = {"n_points": len(x), "window_volume": win.volume}
    if opts.select:
        g = np.geomspace(0.1, 100.0, opts.grid_size)
        grid = ({"b": [float(v / extent) for v in np.geomspace(0.1, 100.0, opts.grid_size ** 2)]}
                if opts.method == "kie" else {"a": [float(v) for v in g], "b": [float(v / extent) for v in g]})
        res = select(est, x, win, grid=grid, p=opts.p, n_splits=opts.n_splits, seed=opts.seed, cv=opts.cv)
        est = res.estimator
        info.update(selected=res.params, score=res.score, at_edge=res.selection.at_edge, seconds=res.seconds)
    else:
        est = est.fit(x, win)
    params = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in est.get_params().items()}
    info.update(integral=est.integral(), min_intensity_on_grid=None)
    out = opts.out if opts.out is not None else default_out(METHOD.name)
    with RunDir(out, overwrite=opts.overwrite, staged=True) as rd:
        lo, hi = win.bounds[:, 0], win.bounds[:, 1]
        if win.d == 1:
            grid_x = np.linspace(lo[0], hi[0], 200)[:, None]
        else:
            axes = [np.linspace(lo[i], hi[i], 40) for i in range(win.d)]
            grid_x = np.stack([m.ravel() for m in np.meshgrid(*axes, indexing="ij")], axis=-1)
        grid_x = grid_x[win.contains(grid_x)]
        lam = est.predict(grid_x)
        info["min_intensity_on_grid"] = float(lam.min()) if len(lam) else None
        rd.write_config(asdict(opts))
        rd.write_json("model.json", {"method": opts.method, "params": params, "points": x.tolist(),
                                     "window": win.to_list(), "allow_overlap": win.allow_overlap,
                                     "data": None if opts.points is not None else
                                     {"name": opts.data, "scale": opts.scale, "p_cell": opts.p_cell, "seed": opts.seed}})
        rd.write_json("fit.json", info)
        rd.write_json("intensity.json", {"x": grid_x.tolist(), "intensity": lam.tolist()})
    if not opts.quiet:
        print(json.dumps(info, default=str))
        print(f"written to {rd.target}")
    return 0


def load_run(run: Path):
    """The fitted estimator of a ``k2ie fit`` run directory (refit from its saved parameters and points)."""
    from icml25.errors import read_json

    from k2ie.estimators import K2IE, KIE, FlaxmanRKHS
    from k2ie.window import Window

    path = Path(run) / "model.json"
    model = read_json(path, what="--run model", required=("method", "params", "points", "window"))
    cls = {"k2ie": K2IE, "kie": KIE, "fie": FlaxmanRKHS}.get(model["method"])
    if cls is None:
        raise K2ieError(f"--run {str(path)!r}: unknown method {model['method']!r} (k2ie, kie, fie)")
    if not isinstance(model["params"], dict):
        raise K2ieError(f"--run {str(path)!r}: 'params' must be a JSON object of {cls.__name__}'s parameters")
    try:
        win = Window(model["window"], allow_overlap=model.get("allow_overlap", False))
    except K2ieError as exc:
        raise K2ieError(f"--run {str(path)!r}: {exc}") from None
    try:
        est = cls(**model["params"])
    except TypeError as exc:  # an unknown or missing parameter name
        raise K2ieError(f"--run {str(path)!r}: 'params' do not fit {cls.__name__} ({exc})") from None
    try:
        x = np.asarray(model["points"], dtype=np.float64).reshape(-1, win.d)
    except (TypeError, ValueError) as exc:
        raise K2ieError(f"--run {str(path)!r}: 'points' must be numbers, {win.d} per point ({exc})") from None
    return est.fit(win.check_points(x), win), model


def evaluate_command(opts: EvaluateOptions) -> int:
    from icml25.errors import read_json
    from icml25.registry import default_out
    from icml25.rundir import RunDir

    from k2ie.metrics import integrated_errors

    est, model = load_run(opts.run)
    if opts.x is not None:
        xs = read_json(opts.x, what="points to predict at", required=("x",))
        from k2ie.window import as_points
        x = as_points(xs["x"], est.window_.d, name="x")
        result = {"x": x.tolist(), "intensity": est.predict(x).tolist()}
    else:
        if model.get("data") is None:
            raise K2ieError("this run was fitted on your own points (no known truth): pass --x FILE to predict")
        d = model["data"]
        truth, win = _truth(d["name"], d["scale"], d["p_cell"], d["seed"])
        per_unit = 200.0 / est.window_.volume if est.window_.d == 1 else 4.0  # 200 panels in 1-D, 4 per unit in 2-D
        result = integrated_errors(est.predict, truth, est.window_, per_unit=per_unit)
        result["integral"] = est.integral()
    out = opts.out if opts.out is not None else default_out(METHOD.name)
    with RunDir(out, overwrite=opts.overwrite, staged=True) as rd:
        rd.write_config(asdict(opts))
        rd.write_json("evaluate.json", result)
    if not opts.quiet:
        print(json.dumps({k: v for k, v in result.items() if k != "x"})[:2000])
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {
        "fit": (FitOptions, fit_command),
        "evaluate": (EvaluateOptions, evaluate_command),
        "reproduce": (ReproduceOptions, reproduce_command(METHOD)),
    }, argv=argv)
