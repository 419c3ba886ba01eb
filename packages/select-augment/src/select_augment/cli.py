"""Command line of select-augment: ``select-augment fit ... | reproduce [--quick]``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from icml25.cli_helpers import CommonOptions, ReproduceOptions, method_main, reproduce_command

from select_augment.config import Config, cpu
from select_augment.registry import METHOD


@dataclass(frozen=True)
class FitOptions(CommonOptions):
    """Fit the method on generated data and write the run directory."""

    config: Config = cpu()
    """The method's configuration."""


def fit_command(opts: FitOptions) -> int:
    from icml25.registry import default_out
    from icml25.rundir import RunDir

    out = opts.out if opts.out is not None else default_out(METHOD.name)
    with RunDir(out, overwrite=opts.overwrite, staged=True) as rd:  # --out is checked before anything is written
        from select_augment.data import make_data
        from select_augment.method import fit

        x, y, w_true = make_data(opts.config.n, opts.config.dim, noise=opts.config.noise, seed=opts.seed)
        w = fit(x, y, ridge=opts.config.ridge)
        rd.write_config(asdict(opts))
        rd.write_json("fit.json", {"weight_error": float(((w - w_true) ** 2).sum() ** 0.5)})
    if not opts.quiet:
        print(f"written to {rd.target}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {
        "fit": (FitOptions, fit_command),
        "reproduce": (ReproduceOptions, reproduce_command(METHOD)),
    }, argv=argv)
