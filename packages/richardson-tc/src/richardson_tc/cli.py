"""Command line of richardson-tc: ``richardson-tc {complete, benchmark, reproduce}`` (also ``python -m richardson_tc``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

from icml25.cli_helpers import BaseOptions, ReproduceOptions, method_main, reproduce_command

from richardson_tc.config import CPU_DATA, PAPER_DATA, SolverOptions, cpu, paper
from richardson_tc.errors import RichardsonTcError
from richardson_tc.registry import METHOD

Kind = Literal["cp", "tucker", "gaussian", "digits", "video"]
SolverName = Literal["lifted", "lifted-accel", "lifted-sampled", "direct", "direct-loop", "em", "em-tensorly"]


@dataclass(frozen=True)
class CompleteOptions(BaseOptions):
    """Complete a tensor (generated, or your .npy/.mat file) from the entries in Ω; write factors and history. A NumPy
    method: it runs on the CPU (no --device)."""

    PRESETS = {"cpu": lambda: {"solver_options": cpu(), **CPU_DATA},
               "paper": lambda: {"solver_options": paper(), **PAPER_DATA}}

    solver_options: SolverOptions = field(default_factory=cpu)
    """How each ALS block is solved."""
    tensor: Kind = "cp"
    """Generated tensor (ignored with --input)."""
    shape: tuple[int, ...] = (60, 60, 60)
    """Shape of a generated tensor (cp, tucker, gaussian, video)."""
    true_rank: int = 8
    """Rank of a generated cp/tucker tensor."""
    input: str | None = None
    """A .npy or .mat tensor file (NaN marks missing entries); Ω is --mask, --coo, or its finite entries × --p."""
    key: str | None = None
    """Variable of a .mat file (default: the largest array)."""
    mask: str | None = None
    """A .npy boolean mask of the observed entries (else Ω is sampled with --p)."""
    coo: str | None = None
    """A .npz with integer 'coords' [m, N], float 'values' [m] and 'shape' [N]: the observed entries (COO)."""
    p: float = 0.1
    """Sample ratio of a sampled Ω: |Ω| = ⌊p·|𝒳|⌋ (seeded by --seed)."""


@dataclass(frozen=True)
class BenchmarkOptions(BaseOptions):
    """Time every solver on one generated tensor at several sample ratios (same Ω and initialisation)."""

    tensor: Kind = "cp"
    """Generated tensor."""
    shape: tuple[int, ...] = (60, 60, 60)
    """Tensor shape."""
    rank: int = 8
    """True and fitted CP rank."""
    ps: tuple[float, ...] = (0.05, 0.1, 0.3, 0.5, 0.9)
    """Sample ratios."""
    solvers: tuple[SolverName, ...] = ("direct", "direct-loop", "em", "em-tensorly", "lifted", "lifted-accel",
                                       "lifted-sampled")
    """Solvers to time (direct-loop runs --loop-sweeps sweeps and is extrapolated per step; em-tensorly is
    tensorly's parafac(mask=))."""
    tol: float = 1e-3
    """ε of the lifted solvers (step rule)."""
    n_sweeps: int = 10
    """ALS sweeps."""
    loop_sweeps: int = 1
    """Sweeps actually run by the slow per-entry loop."""


def _check_p(p: float, name: str = "--p") -> None:
    if not (0 < p <= 1):
        raise RichardsonTcError(f"{name} (sample ratio) must be in (0, 1], got {p}")


def _check_shape(shape: tuple[int, ...]) -> None:
    if len(shape) < 2 or any(s < 1 for s in shape):
        raise RichardsonTcError(f"--shape must have >= 2 positive sizes (tensor order >= 2), got {shape}")


def _load_problem(opts: CompleteOptions):
    import numpy as np

    from richardson_tc.data import (
        ObservedEntries,
        load_array,
        load_npz,
        load_tensor,
        make_tensor,
        sample_mask,
    )

    _check_p(opts.p)
    if opts.mask and opts.coo:
        raise RichardsonTcError("give --mask or --coo, not both")
    if opts.coo:
        z = load_npz(opts.coo, what="--coo", keys=("coords", "values", "shape"))
        if z["shape"].ndim != 1 or not np.issubdtype(z["shape"].dtype, np.integer):
            raise RichardsonTcError(f"--coo {opts.coo!r}: 'shape' must be a 1-D integer array, got "
                                    f"{z['shape'].dtype} {z['shape'].shape}")
        try:
            obs = ObservedEntries.from_coo(tuple(z["shape"]), z["coords"], z["values"])
        except RichardsonTcError as exc:
            raise RichardsonTcError(f"--coo {opts.coo!r}: {exc}") from None
        tensor = obs.to_dense(np.nan)
        return tensor, obs.to_mask()
    if opts.input:
        tensor = load_tensor(opts.input, key=opts.key, what="--input")
    else:
        _check_shape(opts.shape)
        if opts.true_rank < 1:
            raise RichardsonTcError(f"--true-rank must be >= 1, got {opts.true_rank}")
        tensor = make_tensor(opts.tensor, shape=opts.shape, rank=opts.true_rank, seed=opts.seed)
    if tensor.ndim < 2:
        raise RichardsonTcError(f"tensor must have order >= 2, got shape {tensor.shape}")
    if opts.mask:
        mask = load_array(opts.mask, what="--mask")
        if mask.shape != tensor.shape:
            raise RichardsonTcError(f"--mask {opts.mask!r}: shape {mask.shape} does not match the tensor's "
                                    f"{tensor.shape}")
        mask = mask.astype(bool) & np.isfinite(tensor)
    else:
        mask = sample_mask(tensor.shape, opts.p, seed=opts.seed) & np.isfinite(tensor)
    return tensor, mask


def complete_command(opts: CompleteOptions) -> int:
    import numpy as np
    from icml25.registry import default_out
    from icml25.rundir import RunDir

    from richardson_tc.complete import cp_complete

    so = opts.solver_options
    tensor, mask = _load_problem(opts)  # every input is checked before anything is written
    kw = dict(rank=so.rank, solver=so.solver, tol=so.tol, max_inner=so.max_inner, stop_rule=so.stop_rule,
              accelerate=so.accelerate and not so.sampled, sampled=so.sampled, n_sweeps=so.n_sweeps,
              ridge=so.ridge, max_entries=so.max_entries, seed=opts.seed)
    cp, hist = cp_complete(tensor, mask, **kw)
    out = opts.out if opts.out is not None else default_out(METHOD.name)
    with RunDir(out, overwrite=opts.overwrite, staged=True) as rd:
        rd.write_config({**asdict(opts), "out": str(out)})
        rd.write_env(device="cpu")
        rd.write_json("history.json", hist.to_dict())
        with open(rd.file("factors.npz"), "wb") as fh:
            np.savez(fh, **{f"factor_{k}": a for k, a in enumerate(cp.factors)})
        summary = {"solver": hist.solver, "seconds": hist.seconds, "inner_updates": int(sum(hist.inner_updates)),
                   **{k: v for k, v in hist.sweeps[-1].items() if k != "sweep"}}
        rd.write_json("results.json", summary)
    if not opts.quiet:
        print(", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in summary.items()))
        print(f"written to {rd.target}")
    return 0


def benchmark_command(opts: BenchmarkOptions) -> int:
    from icml25.claims import markdown_table
    from icml25.registry import default_out
    from icml25.rundir import RunDir

    from richardson_tc.bench import run_benchmark

    _check_shape(opts.shape)
    for p in opts.ps:
        _check_p(p, "--ps")
    for name in ("rank", "n_sweeps", "loop_sweeps"):
        if getattr(opts, name) < 1:
            raise RichardsonTcError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(opts, name)}")
    if not 0 < opts.tol < 1:
        raise RichardsonTcError(f"--tol must be in (0, 1), got {opts.tol}")
    out = opts.out if opts.out is not None else default_out(METHOD.name)
    with RunDir(out, overwrite=opts.overwrite, staged=True) as rd:
        rows = run_benchmark(kind=opts.tensor, shape=opts.shape, rank=opts.rank, ps=opts.ps, solvers=opts.solvers,
                             tol=opts.tol, n_sweeps=opts.n_sweeps, loop_sweeps=opts.loop_sweeps, seed=opts.seed)
        rd.write_config({**asdict(opts), "out": str(out)})
        rd.write_env(device="cpu")
        rd.write_json("benchmark.json", rows)
    if not opts.quiet:
        cols = ["p", "solver", "total s", "ms / ALS step", "inner updates / step", "held-out RRE",
                "speed-up vs direct", "speed-up vs loop"]
        print(markdown_table(cols, [[r[c] for c in cols] for r in rows]))
        print(f"written to {rd.target}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {
        "complete": (CompleteOptions, complete_command),
        "benchmark": (BenchmarkOptions, benchmark_command),
        "reproduce": (ReproduceOptions, reproduce_command(METHOD)),
    }, argv=argv)
