"""Command line of private-robust-align: ``simulate``, ``fit``, ``privatize-pairs``, ``dpo-demo``,
``reproduce [--quick|--smoke]``.

``python -m private_robust_align`` works too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from icml25.cli_helpers import BaseOptions, ReproduceOptions, method_main, reproduce_command

from private_robust_align.config import EstimatorConfig, FitPreset, SimConfig
from private_robust_align.registry import METHOD


@dataclass(frozen=True)
class SimulateOptions(BaseOptions):
    """Generate linear Bradley–Terry preferences, privatize and corrupt the labels; write data.npz (x, y, z, θ*)."""

    sim: SimConfig = SimConfig()
    """The data, the mechanism and the adversary."""


@dataclass(frozen=True)
class FitOptions(BaseOptions):
    """Fit the debiased, norm-constrained estimator on a data file (or on freshly simulated data). A NumPy method: it
    runs on the CPU (no --device)."""

    PRESETS = {"cpu": FitPreset.cpu, "paper": FitPreset.paper}  # private_robust_align.config.FitPreset

    data: Path | None = None
    """An .npz file with arrays x [n, d] and z [n] in {0, 1} (e.g. `simulate`'s data.npz); default: simulate."""
    epsilon: float | None = None
    """ε the labels were privatized with (default: the file's `epsilon` entry, else --sim.epsilon)."""
    estimator: EstimatorConfig = EstimatorConfig()
    """The estimator (norm bound B, ridge λ)."""
    sim: SimConfig = SimConfig()
    """Data to simulate when --data is not given."""


@dataclass(frozen=True)
class DpoDemoOptions(BaseOptions):
    """trl DPO on randomized-response-swapped preference pairs: `sigmoid` vs `robust` (rDPO) on a tiny LM."""

    epsilon: float = 1.0
    """ε of randomized response on the pairs (> 0; inf = no privacy)."""
    steps: int = 60
    """DPO steps per run."""
    n_train: int = 256
    """Training pairs."""
    n_test: int = 128
    """Held-out pairs (prompts from the test split)."""
    lr: float = 2e-3
    """Learning rate (same for both losses)."""
    beta: float = 0.1
    """DPO β."""


@dataclass(frozen=True)
class PrivatizePairsOptions(BaseOptions):
    """Randomized response on your own preference pairs: swap each (chosen, rejected) with probability
    ρ(ε) = 1/(1 + e^ε) and write released.jsonl (trl's prompt/chosen/rejected format, other fields kept).
    Train on it with trl DPO loss_type="robust", label_smoothing=ρ (printed)."""

    data: Path = Path("pairs.jsonl")
    """A .jsonl file (one {"prompt", "chosen", "rejected"} object a line) or a .json list of them."""
    epsilon: float = 1.0
    """ε of randomized response (> 0; inf releases the pairs unchanged)."""


def privatize_pairs(opts: PrivatizePairsOptions) -> int:
    import json

    import numpy as np
    from icml25.cli_helpers import check_out, open_run_dir

    from private_robust_align.dpo import load_pairs, rr_swap_pairs
    from private_robust_align.errors import check_epsilon
    from private_robust_align.mechanism import flip_rate

    rho = flip_rate(check_epsilon(opts.epsilon, "--epsilon"))
    check_out(opts)
    try:
        rows = load_pairs(opts.data)
    except UnicodeDecodeError:
        raise ValueError(f"--data {str(opts.data)!r} is not a UTF-8 text (.jsonl / .json) file") from None
    released, _ = rr_swap_pairs(rows, epsilon=opts.epsilon, rng=np.random.default_rng(opts.seed))
    rd = open_run_dir(METHOD.name, opts)
    rd.write_config({**asdict(opts), "data": str(opts.data), "out": str(opts.out), "flip_rate": rho, "n": len(rows)})
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in released)
    from icml25.io import atomic_write_text

    atomic_write_text(rd.path / "released.jsonl", text)
    if not opts.quiet:
        print(f"{len(rows)} pairs released with randomized response (ε = {opts.epsilon:g}, swap probability "
              f"ρ = {rho:.4f}) to {rd.target / 'released.jsonl'}; train with trl DPOConfig(loss_type=\"robust\", "
              f"label_smoothing={rho:.4f})")
    return 0


def _load_data(path: Path):
    """x, z and every array of a ``--data`` .npz; each error names the flag and the file."""
    import numpy as np
    from icml25.errors import read_npz

    from private_robust_align.errors import PrivateRobustAlignError, check_features, check_labels

    where = f"--data {str(path)!r}"
    arrays = read_npz(path, what="--data", error=PrivateRobustAlignError, numeric=False,
                      hint="the data.npz written by `simulate` or numpy.savez(x=..., z=...)")
    missing = [k for k in ("x", "z") if k not in arrays]
    if missing:
        raise PrivateRobustAlignError(f"{where} lacks the array(s) {missing} (expected x [n, d], z [n])")
    try:
        x = check_features(arrays["x"], "x")
        z = check_labels(arrays["z"], n=x.shape[0], name="z")
    except PrivateRobustAlignError as exc:
        raise PrivateRobustAlignError(f"{where}: {exc}") from None
    if "epsilon" in arrays:
        e = arrays["epsilon"]
        if e.size != 1 or not (np.issubdtype(e.dtype, np.floating) or np.issubdtype(e.dtype, np.integer)):
            raise PrivateRobustAlignError(f"{where}: 'epsilon' must be one number, got {e.dtype} {e.shape}")
    return x, z, arrays


def simulate(opts: SimulateOptions) -> int:
    import numpy as np
    from icml25.registry import default_out
    from icml25.rundir import RunDir

    from private_robust_align.data import make_preferences
    from private_robust_align.orders import privatize_and_corrupt

    s = opts.sim.validate()
    d = make_preferences(s.n, s.dim, norm=s.norm, design=s.design, seed=opts.seed)
    p = privatize_and_corrupt(d.x, d.y, order=s.order, epsilon=s.epsilon, alpha=s.alphas, seed=opts.seed,
                              adversary=s.adversary, theta_star=d.theta_star)
    out = opts.out if opts.out is not None else default_out(METHOD.name)
    with RunDir(out, overwrite=opts.overwrite, staged=True) as rd:
        rd.write_config(asdict(opts))
        np.savez(rd.file("data.npz"), x=d.x, y=d.y, z=p.z, theta_star=d.theta_star, epsilon=np.array(s.epsilon))
        summary = {"n": s.n, "dim": s.dim, "order": s.order, "epsilon": s.epsilon, "alpha": list(p.alpha),
                   "adversary": s.adversary, "changed_by_adversary": p.changed,
                   "labels_released_unlike_clean": int((p.z != d.y).sum())}
        rd.write_json("simulate.json", summary)
    if not opts.quiet:
        print(f"{summary}\nwritten to {rd.target}")
    return 0


def fit(opts: FitOptions) -> int:
    import numpy as np
    from icml25.registry import default_out
    from icml25.rundir import RunDir

    from private_robust_align.data import make_preferences
    from private_robust_align.errors import check_epsilon
    from private_robust_align.estimator import DebiasedLogistic
    from private_robust_align.metrics import l2_error, sigma_norm_error
    from private_robust_align.orders import privatize_and_corrupt

    est_cfg = opts.estimator.validate()
    if opts.epsilon is not None:
        check_epsilon(opts.epsilon, "--epsilon")
    if opts.data is not None:
        x, z, arrays = _load_data(Path(opts.data))
        theta_star = arrays.get("theta_star")
        if opts.epsilon is not None:
            eps = opts.epsilon
        elif "epsilon" in arrays:
            eps = float(arrays["epsilon"].reshape(()))
            if not eps > 0:
                raise ValueError(f"--data {str(opts.data)!r}: its 'epsilon' must be > 0 (inf = no privacy), got {eps}")
        else:
            raise ValueError("epsilon: pass --epsilon (the data file has no `epsilon` entry)")
    else:
        s = opts.sim.validate()
        d = make_preferences(s.n, s.dim, norm=s.norm, design=s.design, seed=opts.seed)
        x, theta_star = d.x, d.theta_star
        eps = opts.epsilon if opts.epsilon is not None else s.epsilon
        z = privatize_and_corrupt(d.x, d.y, order=s.order, epsilon=eps, alpha=s.alphas, seed=opts.seed,
                                  adversary=s.adversary, theta_star=d.theta_star).z
    eps = check_epsilon(eps, "--epsilon")
    est = DebiasedLogistic(epsilon=eps, radius=est_cfg.radius, l2=est_cfg.l2).fit(x, z)
    naive = DebiasedLogistic(epsilon=eps, radius=est_cfg.radius, l2=est_cfg.l2, debias=False).fit(x, z)
    res = {"theta": est.theta_.tolist(), "epsilon": eps if math.isfinite(eps) else "inf",
           "converged": est.converged_, "constraint_active": est.info_.active,
           "newton_iterations": est.info_.iterations, "n": int(x.shape[0]), "dim": int(x.shape[1])}
    if theta_star is not None:
        ts = np.asarray(theta_star, dtype=np.float64)
        res.update(l2_error=l2_error(est.theta_, ts), sigma_error=sigma_norm_error(est.theta_, ts, x),
                   naive_l2_error=l2_error(naive.theta_, ts))
    out = opts.out if opts.out is not None else default_out(METHOD.name)
    with RunDir(out, overwrite=opts.overwrite, staged=True) as rd:
        rd.write_config({k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(opts).items()})
        rd.write_json("fit.json", res)
    if not opts.quiet:
        print(f"{res}\nwritten to {rd.target}")
    return 0


def dpo_demo(opts: DpoDemoOptions) -> int:
    from icml25.registry import default_out
    from icml25.rundir import RunDir

    from private_robust_align.dpo import run_dpo
    from private_robust_align.errors import PrivateRobustAlignError, check_epsilon

    eps = check_epsilon(opts.epsilon)
    for name in ("steps", "n_train", "n_test"):
        if getattr(opts, name) < 1:
            raise PrivateRobustAlignError(f"{name} must be >= 1, got {getattr(opts, name)}")
    if not (opts.lr > 0 and opts.beta > 0):
        raise PrivateRobustAlignError(f"lr and beta must be > 0, got lr={opts.lr}, beta={opts.beta}")
    out = opts.out if opts.out is not None else default_out(METHOD.name)
    with RunDir(out, overwrite=opts.overwrite, staged=True) as rd:
        rd.write_config({k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(opts).items()})
        kw = dict(epsilon=eps, steps=opts.steps, n_train=opts.n_train, n_test=opts.n_test, lr=opts.lr,
                  beta=opts.beta, seed=opts.seed)
        runs = {"sigmoid (naive DPO)": run_dpo("sigmoid", **kw), "robust (rDPO, debiased)": run_dpo("robust", **kw),
                "sigmoid on clean pairs (oracle)": run_dpo("sigmoid", clean=True, **kw)}
        res = {k: asdict(v) for k, v in runs.items()}
        rd.write_json("dpo.json", res)
    if not opts.quiet:
        for k, v in runs.items():
            print(f"{k:34s} held-out accuracy {v.accuracy:.3f}  win probability {v.win_probability:.3f}  "
                  f"mean margin {v.mean_margin:.3f}  ({v.seconds:.1f} s)")
        print(f"written to {rd.target}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {
        "simulate": (SimulateOptions, simulate),
        "fit": (FitOptions, fit),
        "privatize-pairs": (PrivatizePairsOptions, privatize_pairs),
        "dpo-demo": (DpoDemoOptions, dpo_demo),
        "reproduce": (ReproduceOptions, reproduce_command(METHOD)),
    }, argv=argv)
