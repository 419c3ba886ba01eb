"""Command line of earl-bo: ``earl-bo optimize | benchmark | reproduce [--quick|--smoke] [--task main|hpo-digits]``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

from icml25.cli_helpers import CommonOptions, ReproduceOptions, method_main, open_run_dir, reproduce_command

from earl_bo.config import AgentConfig, cpu, paper
from earl_bo.registry import METHOD

Method = str
Benchmark = str


def _device(opts, methods) -> str:
    """The device the run uses, as written to env.json: ``--device`` resolved for EARL-BO (a bad value raises an
    error naming ``--device``), ``cpu`` when no EARL-BO variant runs (the baselines run on the CPU)."""
    from earl_bo.earl import resolve_device

    dev = resolve_device(opts.device, name="--device")
    return str(dev) if any(m.startswith("earl-bo") for m in methods) else "cpu"


def _agent_options(opts, method: str, device: str) -> dict | None:
    """Keyword arguments of :class:`earl_bo.EARLBO` for ``method`` (None for a baseline)."""
    return {**opts.agent.kwargs(), "device": device} if method.startswith("earl-bo") else None


def _check(opts) -> None:
    from earl_bo.errors import EarlBoError
    from earl_bo.objectives import FIXED_DIMS, NAMES

    opts.agent.check()

    if opts.benchmark not in NAMES:
        raise EarlBoError(f"--benchmark must be one of {', '.join(NAMES)}, got {opts.benchmark!r}")
    if opts.benchmark in FIXED_DIMS and opts.dim not in FIXED_DIMS[opts.benchmark]:
        raise EarlBoError(f"--dim must be one of {FIXED_DIMS[opts.benchmark]} for {opts.benchmark!r}, got {opts.dim}")
    if opts.benchmark not in FIXED_DIMS and opts.dim < 2:
        raise EarlBoError(f"--dim must be >= 2, got {opts.dim}")
    if opts.n_init < 2:
        raise EarlBoError(f"--n-init must be >= 2 (the GP needs 2 points), got {opts.n_init}")
    if opts.budget < 1:
        raise EarlBoError(f"--budget must be >= 1, got {opts.budget}")
    from earl_bo.bo import METHODS

    for m in getattr(opts, "methods", None) or (opts.method,):
        if m not in METHODS:
            raise EarlBoError(f"--method(s) must be among {', '.join(METHODS)}, got {m!r}")


@dataclass(frozen=True)
class OptimizeOptions(CommonOptions):
    """Optimise your own black box (--objective module:function --bounds bounds.json; minimised unless --maximize)
    or maximise a benchmark function, with one method; writes result.json and queries.csv / queries.json (every
    evaluation)."""

    PRESETS = {"cpu": cpu, "paper": paper}
    PRESET_FIELD = "agent"

    objective: str | None = None
    """Your black box, module:function (importable from the working directory) or path/to/file.py:function; it takes
    a 1-D numpy array x and returns a number. Needs --bounds; replaces --benchmark and --dim."""
    bounds: str | None = None
    """JSON file of the search box: [[low, high], ...] (one pair per dimension) or {"low": [...], "high": [...]}."""
    maximize: bool = False
    """Maximise --objective instead of minimising it (the benchmarks are always maximised)."""
    benchmark: Benchmark = "ackley"
    """Objective: ackley, levy, rosenbrock, hartmann, branin (botorch, negated), hpo-digits or hpo-wine (scikit-learn's bundled data)."""
    dim: int = 5
    """Dimension d (hartmann: 3, 4 or 6; branin: 2; hpo-digits, hpo-wine: 5)."""
    n_init: int = 5
    """Initial Sobol points (>= 2)."""
    budget: int = 10
    """BO queries after the initial design (>= 1)."""
    method: Method = "earl-bo"
    """earl-bo (H=3), earl-bo-h1, earl-bo-no-turbo, or a baseline: sobol, centre (box centre, then steps around the
    incumbent), logei, turbo, msl (2-step lookahead)."""
    agent: AgentConfig = cpu()
    """EARL-BO's agent (ignored by the baselines)."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """Device of EARL-BO's agent (encoder, actor, critic, Adam) and its GP virtual environment: auto picks cuda if
    available, else cpu (no mps: the GP environment computes in float64); the GP fit to the real data and the
    baselines run on the CPU. The same seed draws the same random numbers on every device."""


def _user_objective(opts: OptimizeOptions) -> int:
    import json

    from earl_bo.bo import load_bounds, load_objective, minimize
    from earl_bo.errors import EarlBoError

    opts.agent.check()
    if opts.bounds is None:
        raise EarlBoError("--bounds is required with --objective (a JSON file: [[low, high], ...])")
    if opts.n_init < 2:
        raise EarlBoError(f"--n-init must be >= 2 (the GP needs 2 points), got {opts.n_init}")
    if opts.budget < 1:
        raise EarlBoError(f"--budget must be >= 1, got {opts.budget}")
    from earl_bo.bo import METHODS

    if opts.method not in METHODS:
        raise EarlBoError(f"--method must be among {', '.join(METHODS)}, got {opts.method!r}")
    device = _device(opts, (opts.method,))
    bounds = load_bounds(opts.bounds)
    f = load_objective(opts.objective)
    rd = open_run_dir(METHOD.name, opts)
    rd.write_config(asdict(opts))
    rd.write_env(device=device)
    r = minimize(f, bounds.T, n_init=opts.n_init, budget=opts.budget, method=opts.method, seed=opts.seed,
                 options=_agent_options(opts, opts.method, device),
                 log=rd.path / "queries.csv", maximize=opts.maximize)
    rd.write_json("queries.json", r.log)
    summary = {"objective": opts.objective, "direction": "maximize" if opts.maximize else "minimize",
               "method": opts.method, "best": r.fun, "x_best": r.x.tolist(), "best_so_far": r.best.tolist(),
               "X": r.X.tolist(), "y": r.y.tolist(), "seconds_per_query": r.seconds}
    rd.write_json("result.json", summary)
    if not opts.quiet:
        print(json.dumps({k: summary[k] for k in ("objective", "direction", "method", "best", "x_best")}))
        print(f"written to {rd.target}")
    return 0


def optimize_command(opts: OptimizeOptions) -> int:
    if opts.objective is not None:
        return _user_objective(opts)
    if opts.bounds is not None:
        from earl_bo.errors import EarlBoError

        raise EarlBoError("--bounds needs --objective (the benchmarks have their own boxes)")
    _check(opts)
    import json

    from earl_bo.bo import optimize
    from earl_bo.objectives import make_objective

    device = _device(opts, (opts.method,))
    obj = make_objective(opts.benchmark, opts.dim)
    rd = open_run_dir(METHOD.name, opts)
    rd.write_config(asdict(opts))
    rd.write_env(device=device)
    opts_agent = _agent_options(opts, opts.method, device)
    r = optimize(obj.f, obj.bounds, n_init=opts.n_init, budget=opts.budget, method=opts.method, seed=opts.seed,
                 options=opts_agent, callback=lambda i, x, v: rd.log(i, value=v, x=x.tolist()))
    summary = {"benchmark": obj.name, "method": opts.method, "best": float(r.y.max()), "x_best": r.x_best.tolist(),
               "simple_regret": None if obj.optimum is None else float(obj.optimum - r.y.max()),
               "best_so_far": r.best.tolist(), "X": r.X.tolist(), "y": r.y.tolist(), "seconds_per_query": r.seconds}
    rd.write_json("result.json", summary)
    if not opts.quiet:
        print(json.dumps({k: summary[k] for k in ("benchmark", "method", "best", "simple_regret")}))
        print(f"written to {rd.target}")
    return 0


@dataclass(frozen=True)
class BenchmarkOptions(CommonOptions):
    """Run several methods side by side on one benchmark (same initial design per seed); writes results.json and
    a best-so-far plot."""

    benchmark: Benchmark = "ackley"
    """Objective: ackley, levy, rosenbrock, hartmann, branin, hpo-digits or hpo-wine."""
    dim: int = 5
    """Dimension d."""
    n_init: int = 5
    """Initial Sobol points (>= 2)."""
    budget: int = 10
    """BO queries after the initial design (>= 1)."""
    methods: tuple[Method, ...] = ("earl-bo", "logei", "turbo", "sobol")
    """Methods to compare (earl-bo, earl-bo-h1, earl-bo-no-turbo, sobol, centre, logei, turbo, msl)."""
    seeds: int = 3
    """Seeds (seed, seed + 1, ...)."""
    agent: AgentConfig = cpu()
    """EARL-BO's agent."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """Device of EARL-BO's agent (encoder, actor, critic, Adam) and its GP virtual environment: auto picks cuda if
    available, else cpu (no mps: the GP environment computes in float64); the GP fit to the real data and the
    baselines run on the CPU. The same seed draws the same random numbers on every device."""


def benchmark_command(opts: BenchmarkOptions) -> int:
    _check(opts)
    from earl_bo.errors import EarlBoError

    if opts.seeds < 1:
        raise EarlBoError(f"--seeds must be >= 1, got {opts.seeds}")
    if not opts.methods:
        raise EarlBoError("--methods must name at least one method")
    import numpy as np
    from icml25.plots import learning_curves

    from earl_bo.bo import optimize
    from earl_bo.objectives import make_objective

    device = _device(opts, opts.methods)
    obj = make_objective(opts.benchmark, opts.dim)
    rd = open_run_dir(METHOD.name, opts)
    rd.write_config(asdict(opts))
    rd.write_env(device=device)
    curves, rows = {}, []
    for m in opts.methods:
        runs = [optimize(obj.f, obj.bounds, n_init=opts.n_init, budget=opts.budget, method=m, seed=opts.seed + s,
                         options=_agent_options(opts, m, device)) for s in range(opts.seeds)]
        best = np.array([r.best for r in runs])
        curves[m] = best
        rows.append({"method": m, "final_best_mean": float(best[:, -1].mean()),
                     "final_best_per_seed": best[:, -1].tolist(),
                     "seconds_per_query": float(np.mean([np.mean(r.seconds) for r in runs]))})
        rd.log(len(rows), **rows[-1])
    learning_curves(curves, rd.path / "best_so_far.png", xlabel="queries after the initial design",
                    ylabel="best value so far", title=obj.name)
    rd.write_json("results.json", {"benchmark": obj.name, "optimum": obj.optimum, "methods": rows})
    if not opts.quiet:
        for r in rows:
            print(f"{r['method']:>18}: best {r['final_best_mean']:.4g}  ({r['seconds_per_query']:.2f} s/query)")
        print(f"written to {rd.target}")
    return 0


@dataclass(frozen=True)
class EarlBoReproduceOptions(ReproduceOptions):
    """Run EARL-BO and its baselines side by side and measure the paper's claims (a fixed CPU-scale protocol: no
    --device; `optimize` and `benchmark` take one)."""

    task: str = "main"
    """main: validation tuning, Ackley/Levy at d = 5, 10 (shifted and unshifted), the lookahead and ablations, the
    H = 1 check and timing (the committed full run);
    hpo-digits: the hyper-parameter tuning task alone (HistGradientBoosting on sklearn's digits, about 5 minutes)."""


def reproduce_cmd(opts: EarlBoReproduceOptions) -> int:
    from earl_bo.config import TASKS
    from earl_bo.errors import EarlBoError

    if opts.task not in TASKS:
        raise EarlBoError(f"--task must be one of {', '.join(TASKS)}, got {opts.task!r}")
    return reproduce_command(METHOD, by_task="earl_bo.reproduce:reproduce")(opts)


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {
        "optimize": (OptimizeOptions, optimize_command),
        "benchmark": (BenchmarkOptions, benchmark_command),
        "reproduce": (EarlBoReproduceOptions, reproduce_cmd),
    }, argv=argv)
