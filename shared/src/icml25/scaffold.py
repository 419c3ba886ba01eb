"""``icml25 new NAME``: scaffold a package that follows the house contract (see ENGINEERING.md).

Creates ``packages/NAME`` in the house shape: a hatchling pyproject (console script, ``icml25.methods`` entry point,
dev group); ``src/<import_name>/`` with ``config.py`` (frozen dataclasses, ``paper()``/``cpu()`` presets,
``BUDGETS``), ``errors.py`` (derived from ``UserInputError``), ``data.py``/``method.py`` (a worked example with a
known ground truth, to be replaced), ``reproduce.py`` (a list of experiments run by
``icml25.experiment.run_experiments``), ``cli.py`` (tyro over the configs), ``registry.py``, a lazy ``__init__``;
``tests/`` of the mathematics with a negative control; a README with a Python quickstart and the report markers.
The generated package passes the contract tests as it is.
"""

from __future__ import annotations

import re
from pathlib import Path

NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def import_name(name: str) -> str:
    return name.replace("-", "_")


def _class_name(mod: str) -> str:
    return "".join(part.capitalize() for part in mod.split("_"))


def _files(name: str, mod: str, title: str, url: str) -> dict[str, str]:
    cls = _class_name(mod)
    return {
        "pyproject.toml": f"""[project]
name = "{name}"
version = "0.1.0"
description = "{title} (ICML 2025)"
readme = "README.md"
requires-python = ">=3.11"
license = {{ text = "MIT" }}
dependencies = [
    "icml25",
    "numpy>=1.26",
    "tyro>=0.8",
]

[project.urls]
Paper = "{url}"

[project.scripts]
{name} = "{mod}.cli:main"

[project.entry-points."icml25.methods"]
{name} = "{mod}.registry:METHOD"

[dependency-groups]
dev = ["pytest>=8"]

[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[tool.hatch.build.targets.wheel]
packages = ["src/{mod}"]
""",
        f"src/{mod}/__init__.py": f'''"""{name}: {title} (ICML 2025).

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {{
    "Config": "{mod}.config",
    "fit": "{mod}.method",
    "predict": "{mod}.method",
    "make_data": "{mod}.data",
    "{cls}Error": "{mod}.errors",
}})
''',
        f"src/{mod}/__main__.py": f"""import sys

from {mod}.cli import main

sys.exit(main())
""",
        f"src/{mod}/registry.py": f'''"""Registration of {name} in the icml25 method registry (kept import-light: no torch here)."""

from __future__ import annotations

from pathlib import Path

from icml25.registry import Method


def _reproduce(*, quick: bool, smoke: bool, out: Path, seed: int):
    from {mod}.reproduce import reproduce

    return reproduce(quick=quick, smoke=smoke, out=out, seed=seed)


METHOD = Method(
    name="{name}",
    title="{title}",
    venue="ICML 2025",
    url="{url}",
    reproduce=_reproduce,
    cli="{name}",
)
''',
        f"src/{mod}/errors.py": f'''"""Errors of {name}: all derive from icml25's UserInputError (exit 2 with one `error:` line)."""

from icml25.errors import UserInputError


class {cls}Error(UserInputError):
    """Bad input to {name}."""
''',
        f"src/{mod}/config.py": f'''"""Configuration of {name}: one frozen dataclass per concern, named presets, and the reproduce budgets.

The CLI is generated from these dataclasses (tyro); the field docstrings are the help text.
REPLACE the example fields with the method's own (keep the presets and the budgets).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from icml25.errors import check_non_negative, check_positive
from icml25.experiment import Budgets


@dataclass(frozen=True)
class Config:
    """Example method (ridge regression on data with a known ground truth)."""

    n: int = 400
    """Training examples."""
    dim: int = 8
    """Input dimension."""
    noise: float = 0.1
    """Noise standard deviation of the targets."""
    ridge: float = 1e-3
    """Ridge penalty lambda of the closed form w = (X^T X + lambda I)^-1 X^T y."""
    seeds: int = 5
    """Seeds of a reproduce run."""

    def __post_init__(self) -> None:
        check_positive(self, "n", "dim", "seeds")
        check_non_negative(self, "noise", "ridge")


def paper() -> Config:
    """The paper's settings."""
    return Config()


def cpu() -> Config:
    """Our CPU-scale settings."""
    return replace(paper(), n=200)


BUDGETS = Budgets(smoke=replace(cpu(), n=50, seeds=1), quick=replace(cpu(), seeds=3), full=replace(paper(), seeds=5))
''',
        f"src/{mod}/data.py": '''"""Data with a known ground truth (generated, never downloaded)."""

from __future__ import annotations

import numpy as np


def make_data(n: int, dim: int, *, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``X [n, dim]``, ``y [n]`` and the true weights ``w [dim]`` with ``y = X w + noise * eps``."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(dim)
    x = rng.standard_normal((n, dim))
    return x, x @ w + noise * rng.standard_normal(n), w
''',
        f"src/{mod}/method.py": f'''"""The method (REPLACE this example with the paper's method; cite the paper and give the key equation).

Ridge regression in closed form: ``w = (X^T X + lambda I)^-1 X^T y``; shapes ``X [n, d]``, ``y [n]``, ``w [d]``.
"""

from __future__ import annotations

import numpy as np

from {mod}.errors import {cls}Error


def fit(x: np.ndarray, y: np.ndarray, *, ridge: float) -> np.ndarray:
    """Weights ``w [d]`` of ridge regression with penalty ``ridge``."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.shape != (x.shape[0],):
        raise {cls}Error(f"x must be [n, d] and y [n], got {{x.shape}} and {{y.shape}}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise {cls}Error("x and y must be finite (found NaN or inf)")
    d = x.shape[1]
    return np.linalg.solve(x.T @ x + ridge * np.eye(d), x.T @ y)


def predict(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64) @ w
''',
        f"src/{mod}/reproduce.py": f'''"""Side-by-side reproduction of the paper's claims for {name}: a list of experiments.

REPLACE the example experiment with the paper's; keep the shape: each experiment is ``(cfg, seeds, out) ->
Section`` and compares the method with its baselines on the same data and seeds (tuned alike with
``icml25.tuning``), with verdicts from the per-seed numbers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from icml25.claims import Claim, Report
from icml25.experiment import Section, run_experiments

from {mod}.config import BUDGETS, Config
from {mod}.data import make_data
from {mod}.method import fit, predict


GATE = "Example gate: the fitted model has learned the task (beats the trivial controls)"


def recovery(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Test error of the method against the mean predictor on fresh inputs, one dataset per seed."""
    sec = Section("recovery")
    ours, base, zero = [], [], []
    for s in seeds:
        x, y, w_true = make_data(cfg.n, cfg.dim, noise=cfg.noise, seed=s)
        x_test = np.random.default_rng(10_000 + s).standard_normal((cfg.n, cfg.dim))
        y_test = x_test @ w_true
        w = fit(x, y, ridge=cfg.ridge)
        ours.append(float(np.mean((predict(w, x_test) - y_test) ** 2)))
        base.append(float(np.mean((y.mean() - y_test) ** 2)))
        zero.append(float(np.mean(y_test**2)))
    # Competence before comparison: a gate says the method (and, in a real package, every baseline it is compared
    # with) has learned the task before any paper claim compares them. An iterative method also passes its
    # validation curves, one per seed: curves=[icml25.train.train_until_plateau(step, evaluate, ...), ...].
    sec.add(Claim.gate(
        claim=GATE, metric="test MSE", ours=ours, controls={{"mean predictor": base, "zero predictor": zero}},
        higher_is_better=False, paired=True, note="closed-form fit: no training curve"))
    sec.add(Claim.compare(
        claim="Example: the fitted model predicts better than the mean of the targets",
        metric="test MSE", ours=ours, baseline=base, baseline_name="mean predictor", higher_is_better=False,
        paired=True, kind="property", paper="scaffold example: replace with the paper's claim and its table",
        gates=[GATE]))
    sec.table("Example: test MSE per seed", ["seed", "ours", "mean predictor"],
              [[s, o, b] for s, o, b in zip(seeds, ours, base)])
    return sec


EXPERIMENTS = [recovery]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    return run_experiments("{name}", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)
''',
        f"src/{mod}/cli.py": f'''"""Command line of {name}: ``{name} fit ... | reproduce [--quick]``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from icml25.cli_helpers import BaseOptions, ReproduceOptions, method_main, reproduce_command

from {mod}.config import Config, cpu
from {mod}.registry import METHOD


@dataclass(frozen=True)
class FitOptions(BaseOptions):
    """Fit the method on generated data and write the run directory.

    (A command that runs torch on a chosen device derives from ``CommonOptions`` instead, which adds ``--device``,
    and passes ``icml25.device.resolve_device(opts.device)`` to the method.)"""

    config: Config = cpu()
    """The method's configuration."""


def fit_command(opts: FitOptions) -> int:
    from icml25.registry import default_out
    from icml25.rundir import RunDir

    out = opts.out if opts.out is not None else default_out(METHOD.name)
    with RunDir(out, overwrite=opts.overwrite, staged=True) as rd:  # --out is checked before anything is written
        from {mod}.data import make_data
        from {mod}.method import fit

        x, y, w_true = make_data(opts.config.n, opts.config.dim, noise=opts.config.noise, seed=opts.seed)
        w = fit(x, y, ridge=opts.config.ridge)
        rd.write_config(asdict(opts))
        rd.write_json("fit.json", {{"weight_error": float(((w - w_true) ** 2).sum() ** 0.5)}})
    if not opts.quiet:
        print(f"written to {{rd.target}}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {{
        "fit": (FitOptions, fit_command),
        "reproduce": (ReproduceOptions, reproduce_command(METHOD)),
    }}, argv=argv)
''',
        f"tests/test_{mod}.py": f'''"""Tests of the mathematics (REPLACE the example with the paper's): each would fail if the method were wrong."""

import numpy as np
import pytest
from {mod}.config import Config
from {mod}.data import make_data
from {mod}.errors import {cls}Error
from {mod}.method import fit


def test_zero_ridge_equals_least_squares_in_float64():
    x, y, _ = make_data(50, 4, noise=0.1, seed=0)
    ref = np.linalg.lstsq(x, y, rcond=None)[0]
    np.testing.assert_allclose(fit(x, y, ridge=0.0), ref, rtol=1e-10, atol=1e-12)
    # negative control: a large penalty shrinks the weights away from least squares
    assert np.linalg.norm(fit(x, y, ridge=100.0)) < 0.9 * np.linalg.norm(ref)


def test_noise_free_recovers_the_true_weights_and_is_deterministic():
    x, y, w = make_data(30, 3, noise=0.0, seed=1)
    np.testing.assert_allclose(fit(x, y, ridge=0.0), w, atol=1e-10)
    np.testing.assert_array_equal(make_data(30, 3, noise=0.1, seed=2)[1], make_data(30, 3, noise=0.1, seed=2)[1])


@pytest.mark.parametrize("field, value", [("n", 0), ("dim", -1), ("noise", float("nan")), ("seeds", 0)])
def test_bad_config_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        Config(**{{field: value}})


def test_bad_data_refused():
    with pytest.raises({cls}Error, match="finite"):
        fit(np.array([[np.nan]]), np.array([1.0]), ridge=0.0)
''',
        "README.md": f"""# {name}

**{title}** (ICML 2025) — [paper]({url})

One paragraph: what the method does and why you would use it.

## Install

```bash
pip install {name}                                        # a released wheel
uv pip install --no-sources ./shared ./packages/{name}    # from a clone: a real copy, not an editable link
```

## Quickstart

```bash
{name} fit --config.n 200 --out runs/{name}/demo
{name} reproduce --quick
```

```python
from {mod}.data import make_data
from {mod}.method import fit

x, y, w_true = make_data(200, 8, noise=0.1, seed=0)
w = fit(x, y, ridge=1e-3)
print(abs(w - w_true).max())
```

## Results

Full run: `{name} reproduce --out packages/{name}/results/full --overwrite`; quick: `{name} reproduce --quick`.

<!-- icml25-report:start -->
<!-- icml25-report:end -->

## What the verdicts mean

## Parameters

## Deviations from the paper

## Citation
""",
    }


def create_package(name: str, *, root: Path = Path("packages"), title: str = "TODO: paper title",
                   url: str = "https://icml.cc/virtual/2025") -> Path:
    if not NAME_RE.match(name):
        raise ValueError(f"package name must be lowercase letters/digits separated by single dashes, got {name!r}")
    if '"' in title or '"' in url:
        raise ValueError("title and url must not contain double quotes")
    target = Path(root) / name
    if target.exists():
        raise ValueError(f"{target} already exists")
    mod = import_name(name)
    for rel, text in _files(name, mod, title, url).items():
        p = target / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return target
