"""``icml25 new NAME``: scaffold a package that follows the house contract (see ENGINEERING.md).

Creates ``packages/NAME`` with a hatchling pyproject (console script, ``icml25.methods`` entry point, dev group),
``src/<import_name>/`` (``__init__``, ``__main__``, ``cli``, ``registry``, ``reproduce``), ``tests/`` and a README
skeleton. The generated package passes the contract tests as it is; its reproduce is a placeholder that raises
until the method is written.
"""

from __future__ import annotations

import re
from pathlib import Path

NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def import_name(name: str) -> str:
    return name.replace("-", "_")


def _files(name: str, mod: str, title: str, url: str) -> dict[str, str]:
    return {
        "pyproject.toml": f'''[project]
name = "{name}"
version = "0.1.0"
description = "{title} (ICML 2025)"
readme = "README.md"
requires-python = ">=3.11"
license = {{ text = "MIT" }}
dependencies = [
    "icml25",
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
''',
        f"src/{mod}/__init__.py": f'''"""{name}: {title} (ICML 2025)."""

__version__ = "0.1.0"
''',
        f"src/{mod}/__main__.py": f'''import sys

from {mod}.cli import main

sys.exit(main())
''',
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
        f"src/{mod}/reproduce.py": f'''"""Side-by-side reproduction of the paper's claims for {name}."""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Report


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    raise NotImplementedError("{name}: reproduce is not written yet")
''',
        f"src/{mod}/cli.py": f'''"""Command line of {name}: ``{name} reproduce [--quick]``."""

from __future__ import annotations

from collections.abc import Sequence

from icml25.cli_helpers import ReproduceOptions, method_main, reproduce_command

from {mod}.registry import METHOD


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {{"reproduce": (ReproduceOptions, reproduce_command(METHOD))}}, argv=argv)
''',
        f"tests/test_{mod}.py": f'''from {mod}.registry import METHOD


def test_registered_name():
    assert METHOD.name == "{name}"
''',
        "README.md": f'''# {name}

**{title}** (ICML 2025) — [paper]({url})

One paragraph: what the method does and why you would use it.

## Install

```bash
pip install ./packages/{name}        # from a clone of the icml25 monorepo
```

## Quickstart

```bash
{name} reproduce --quick
```

```python
import {mod}
```

## Results

Measured by `{name} reproduce` (command, date, machine). Ours vs baselines, mean ± sd over seeds; the paper's
numbers beside them, labelled as the paper's.

| claim | ours | baseline | holds | paper |
|---|---|---|---|---|

## Parameters

## Deviations from the paper

## Citation
''',
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
