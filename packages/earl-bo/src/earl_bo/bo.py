"""The BO loop shared by EARL-BO and every baseline: the same Sobol initial design, budget and seed for all.

``optimize(objective, bounds, *, n_init, budget, method, seed)`` evaluates ``n_init`` scrambled Sobol points (seeded:
the same for every method), then ``budget`` queries of ``method``; it returns the data, the best-so-far curve and the
time per iteration. Maximisation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from earl_bo.earl import EARLBO, check_bounds
from earl_bo.errors import EarlBoError
from earl_bo.gp_env import DTYPE

METHODS = ("earl-bo", "earl-bo-h1", "earl-bo-no-turbo", "sobol", "centre", "logei", "turbo", "msl")
"""EARL-BO (H = 3), EARL-BO with H = 1, EARL-BO without the TuRBO stage, and the baselines (``centre``: the box
centre, then steps around the incumbent)."""


@dataclass
class Result:
    """``X [n_init + budget, d]``, ``y [n_init + budget]``, best-so-far ``best [budget + 1]`` (after the initial
    design, then after each query) and wall seconds per query."""

    method: str
    X: np.ndarray
    y: np.ndarray
    best: np.ndarray
    seconds: list[float] = field(default_factory=list)

    @property
    def x_best(self) -> np.ndarray:
        return self.X[int(np.argmax(self.y))]


def initial_design(bounds: np.ndarray, n: int, *, seed: int) -> np.ndarray:
    """``n`` scrambled Sobol points in the box, ``[n, d]`` (the same for every method at a given seed)."""
    from torch.quasirandom import SobolEngine

    lb, ub = bounds
    u = SobolEngine(bounds.shape[1], scramble=True, seed=seed).draw(n).to(DTYPE).numpy()
    return lb + u * (ub - lb)


def make_strategy(method: str, bounds: np.ndarray, *, seed: int, options: dict[str, Any] | None = None):
    """A ``suggest(X, y) -> x`` object in the original box for ``method`` (one of :data:`METHODS`)."""
    from earl_bo import baselines

    opts = dict(options or {})
    d = bounds.shape[1]
    if method.startswith("earl-bo"):
        if method == "earl-bo-h1":
            opts["horizon"] = 1
        elif method == "earl-bo-no-turbo":
            opts["off_policy_episodes"] = 0
        return EARLBO(bounds, seed=seed, **opts)
    classes = {"sobol": baselines.Sobol, "centre": baselines.Centre, "logei": baselines.LogEI, "turbo": baselines.Turbo,
               "msl": baselines.MultiStepLookahead}
    if method not in classes:
        raise EarlBoError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    return _UnitCube(classes[method](d, seed=seed, **opts), bounds)


class _UnitCube:
    """Wraps a unit-cube strategy to take and return points in the original box."""

    def __init__(self, inner, bounds: np.ndarray) -> None:
        self.inner, self.bounds = inner, bounds

    def suggest(self, X, y) -> np.ndarray:
        lb, ub = self.bounds
        xu = torch.as_tensor((np.asarray(X) - lb) / (ub - lb), dtype=DTYPE).clamp(0, 1)
        a = self.inner.suggest(xu, torch.as_tensor(np.asarray(y), dtype=DTYPE)).reshape(-1).clamp(0, 1)
        return lb + a.numpy() * (ub - lb)


def _evaluate(objective: Callable[[np.ndarray], float], x: np.ndarray) -> float:
    v = objective(x)
    try:
        v = float(v)
    except (TypeError, ValueError) as exc:
        raise EarlBoError(f"the objective must return a number, got {type(v).__name__} at x = {x.tolist()}") from exc
    if not np.isfinite(v):
        raise EarlBoError(f"the objective returned {v} (not finite) at x = {x.tolist()}")
    return v


def optimize(objective: Callable[[np.ndarray], float], bounds, *, n_init: int = 5, budget: int = 20,
             method: str = "earl-bo", seed: int = 0, options: dict[str, Any] | None = None,
             callback: Callable[[int, np.ndarray, float], None] | None = None) -> Result:
    """Maximise ``objective(x [d]) -> float`` over ``bounds [2, d]`` with ``method`` (:data:`METHODS`).

    ``n_init`` (>= 2) Sobol points, then ``budget`` (>= 1) queries; ``options`` go to the strategy (e.g. EARL-BO's
    ``episodes``). Raises :class:`~earl_bo.errors.EarlBoError` on bad input or a non-finite objective value.
    """
    b = check_bounds(bounds)
    if isinstance(n_init, bool) or not isinstance(n_init, (int, np.integer)) or n_init < 2:
        raise EarlBoError(f"n_init must be an integer >= 2 (the GP needs 2 points), got {n_init!r}")
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise EarlBoError(f"budget must be an integer >= 1, got {budget!r}")
    if method not in METHODS:
        raise EarlBoError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    # torch's global generator (GP-fit restarts, botorch's raw samples) is forked and seeded from ``seed``: a run
    # depends on its seed only, not on what the process drew before it (a worker's earlier jobs, the caller's state)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        return _optimize(objective, b, n_init=int(n_init), budget=int(budget), method=method, seed=seed,
                         options=options, callback=callback)


def _optimize(objective, b, *, n_init, budget, method, seed, options, callback) -> Result:
    strategy = make_strategy(method, b, seed=seed, options=options)
    X = initial_design(b, int(n_init), seed=seed)
    y = np.array([_evaluate(objective, x) for x in X])
    best = [float(y.max())]
    seconds = []
    for i in range(int(budget)):
        t0 = time.perf_counter()
        x = np.clip(np.asarray(strategy.suggest(X, y), dtype=np.float64).reshape(-1), b[0], b[1])
        seconds.append(time.perf_counter() - t0)
        v = _evaluate(objective, x)
        X = np.vstack([X, x])
        y = np.append(y, v)
        best.append(float(y.max()))
        if callback is not None:
            callback(i, x, v)
    return Result(method=method, X=X, y=y, best=np.asarray(best), seconds=seconds)


# ---------------------------------------------------------------------------------------------- a user's black box
@dataclass
class MinimizeResult:
    """What :func:`minimize` found: ``x`` (best point ``[d]``), ``fun`` (its value), every evaluation ``X [n, d]``,
    ``y [n]`` (the objective's values as returned), ``best`` (the best-so-far value after the initial design, then
    after each query) and the wall seconds per query."""

    x: np.ndarray
    fun: float
    X: np.ndarray
    y: np.ndarray
    best: np.ndarray
    seconds: list[float]
    log: list[dict]
    """One record per evaluation: ``index``, ``phase`` (``initial`` / ``query``), ``x``, ``value``, ``best``."""


def check_pairs(bounds, *, name: str = "bounds") -> np.ndarray:
    """``bounds`` given as one ``(low, high)`` pair per dimension (scipy's convention), returned as ``[2, d]``."""
    try:
        b = np.asarray(bounds, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise EarlBoError(f"{name} must be one (low, high) pair of numbers per dimension, got {bounds!r}") from exc
    if b.ndim != 2 or b.shape[1] != 2 or b.shape[0] < 1:
        raise EarlBoError(f"{name} must have shape (d, 2): one (low, high) pair per dimension, got shape {b.shape}")
    try:
        return check_bounds(b.T)
    except EarlBoError as exc:
        raise EarlBoError(f"{name}: {exc}") from exc


def _write_log(path: Path, records: list[dict]) -> None:
    """The evaluations as JSON (a list of records) or CSV (``index, phase, x0..x{d-1}, value, best``), by suffix."""
    import csv
    import io
    import json
    import os

    path = Path(path)
    if path.suffix.lower() == ".json":
        text = json.dumps(records, indent=1)
    else:
        buf = io.StringIO()
        d = len(records[0]["x"]) if records else 0
        w = csv.writer(buf)
        w.writerow(["index", "phase", *(f"x{i}" for i in range(d)), "value", "best"])
        for r in records:
            w.writerow([r["index"], r["phase"], *(repr(float(v)) for v in r["x"]), repr(r["value"]), repr(r["best"])])
        text = buf.getvalue()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def minimize(f: Callable[[np.ndarray], float], bounds, *, n_init: int = 5, budget: int = 20,
             method: str = "earl-bo", seed: int = 0, options: dict[str, Any] | None = None,
             log: str | Path | None = None, maximize: bool = False) -> MinimizeResult:
    """Minimise a black box ``f(x [d]) -> float`` (or maximise it with ``maximize=True``) over ``bounds``, one
    ``(low, high)`` pair per dimension, with ``method`` (:data:`METHODS`; default EARL-BO with the CPU preset
    :func:`earl_bo.config.cpu`, ``options`` override its keywords).

    ``n_init`` Sobol points, then ``budget`` queries. ``log`` (a ``.json`` or ``.csv`` path) receives every
    evaluation, rewritten after each one, so a run that stops keeps its log. Raises
    :class:`~earl_bo.errors.EarlBoError` on bad input or a non-finite value (naming the x).
    """
    from dataclasses import asdict

    from earl_bo.config import cpu

    b = check_pairs(bounds)
    if method.startswith("earl-bo"):
        options = {**asdict(cpu()), **(options or {})}
    sign = 1.0 if maximize else -1.0
    records: list[dict] = []

    def g(x: np.ndarray) -> float:
        v = _evaluate(f, np.asarray(x, dtype=np.float64))
        prev = records[-1]["best"] if records else None
        best = v if prev is None else (max(prev, v) if maximize else min(prev, v))
        records.append({"index": len(records), "phase": "initial" if len(records) < n_init else "query",
                        "x": [float(t) for t in x], "value": v, "best": best})
        if log is not None:
            _write_log(Path(log), records)
        return sign * v

    r = optimize(g, b, n_init=n_init, budget=budget, method=method, seed=seed, options=options)
    y = sign * r.y
    i = int(np.argmax(r.y))
    return MinimizeResult(x=r.X[i], fun=float(y[i]), X=r.X, y=y, best=sign * r.best, seconds=r.seconds, log=records)


def load_objective(spec: str) -> Callable[[np.ndarray], float]:
    """``module:function`` (importable, the working directory on the path) or ``path/to/file.py:function``."""
    import importlib
    import importlib.util
    import sys

    mod_name, sep, fn_name = str(spec).rpartition(":")
    if not sep or not mod_name or not fn_name:
        raise EarlBoError(f"--objective must be module:function or path/to/file.py:function, got {spec!r}")
    try:
        if mod_name.endswith(".py"):
            p = Path(mod_name)
            if not p.is_file():
                raise EarlBoError(f"--objective: file {mod_name!r} not found")
            spec_ = importlib.util.spec_from_file_location(p.stem, p)
            module = importlib.util.module_from_spec(spec_)
            spec_.loader.exec_module(module)
        else:
            if "" not in sys.path and str(Path.cwd()) not in sys.path:
                sys.path.insert(0, str(Path.cwd()))
            module = importlib.import_module(mod_name)
    except EarlBoError:
        raise
    except Exception as exc:  # noqa: BLE001 - any import failure is the user's module: one clear line
        raise EarlBoError(f"--objective: cannot import {mod_name!r}: {type(exc).__name__}: {exc}") from exc
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise EarlBoError(f"--objective: {mod_name!r} has no callable {fn_name!r}")
    return fn


def load_bounds(path: str | Path) -> np.ndarray:
    """A JSON file of bounds: ``[[low, high], ...]`` (one pair per dimension) or ``{"low": [...], "high": [...]}``;
    returned as ``[2, d]``."""
    import json

    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError as exc:
        raise EarlBoError(f"--bounds: file {str(path)!r} not found") from exc
    except (OSError, ValueError) as exc:
        raise EarlBoError(f"--bounds: {str(path)!r} is not valid JSON ({exc})") from exc
    if isinstance(data, dict):
        if set(data) != {"low", "high"}:
            raise EarlBoError(f"--bounds: a JSON object must have exactly the keys 'low' and 'high', got {sorted(data)}")
        try:
            data = list(zip(data["low"], data["high"], strict=True))
        except (TypeError, ValueError) as exc:
            raise EarlBoError("--bounds: 'low' and 'high' must be lists of the same length") from exc
    return check_pairs(data, name="--bounds")
