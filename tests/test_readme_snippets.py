"""Every ```python block of every README runs as written (so the quickstarts cannot rot).

Each block runs in a fresh interpreter in an empty temp folder, offline, with the workspace installed. These train
small models, so they are marked ``slow``; ``.ci/run`` runs them after the default tests.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
READMES = sorted([ROOT / "shared" / "README.md", *(ROOT / "packages").glob("*/README.md")])
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _snippets() -> list[tuple[str, str]]:
    out = []
    for readme in READMES:
        for i, code in enumerate(BLOCK.findall(readme.read_text())):
            if not code.strip() or "# no-run" in code.splitlines()[0]:
                continue  # an empty block, or one marked as not runnable here (e.g. it needs a user's file)
            out.append((f"{readme.parent.name}#{i}", code))
    return out


SNIPPETS = _snippets()


def test_readme_snippet_parser_finds_blocks():
    assert len({name.split("#")[0] for name, _ in SNIPPETS}) >= len(READMES) - 1, [n for n, _ in SNIPPETS]


@pytest.mark.slow
@pytest.mark.parametrize("name, code", SNIPPETS, ids=[n for n, _ in SNIPPETS])
def test_readme_snippet_runs(name, code, tmp_path):
    env = {**os.environ, "MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "OMP_WAIT_POLICY": "PASSIVE"}
    (tmp_path / "snippet.py").write_text(code)
    out = subprocess.run([sys.executable, "snippet.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, f"{name}:\n{code}\n--- stderr ---\n{out.stderr[-4000:]}"
