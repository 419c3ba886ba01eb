"""Workspace-wide contract tests, parametrised over every folder in packages/.

Each package: imports; its console script and ``python -m`` answer ``--help``; its registry module is import-light;
it is listed by ``icml25 list``; its pyproject declares the console script and the ``icml25.methods`` entry point;
its README has a Results section; and ``<cli> reproduce --smoke`` writes a run directory whose ``results.json``
validates against the claims schema.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from icml25.claims import validate_results
from icml25.registry import discover

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())
BIN = Path(sys.executable).parent
ENV = {**os.environ, "MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _mod(name: str) -> str:
    return name.replace("-", "_")


def _run(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=ENV, cwd=ROOT)


def test_packages_found():
    assert PACKAGES, "no packages in packages/"


@pytest.mark.parametrize("name", PACKAGES)
def test_pyproject_contract(name):
    meta = tomllib.loads((ROOT / "packages" / name / "pyproject.toml").read_text())["project"]
    assert meta["name"] == name
    assert meta["scripts"][name] == f"{_mod(name)}.cli:main"
    assert meta["entry-points"]["icml25.methods"][name] == f"{_mod(name)}.registry:METHOD"
    assert any(d.split("[")[0].strip() == "icml25" for d in meta["dependencies"])
    assert meta.get("description"), "the description is the paper title shown by `icml25 list`"
    readme = (ROOT / "packages" / name / "README.md").read_text()
    assert any(line.startswith("#") and "result" in line.lower() for line in readme.splitlines())
    assert (ROOT / "packages" / name / "tests").is_dir()


@pytest.mark.parametrize("name", PACKAGES)
def test_imports(name):
    mod = importlib.import_module(_mod(name))
    assert mod.__name__ == _mod(name)


@pytest.mark.parametrize("name", PACKAGES)
def test_registry_is_light_and_matches(name):
    code = (f"import sys, {_mod(name)}.registry as r; assert r.METHOD.name == {name!r}, r.METHOD.name; "
            "print('torch' in sys.modules)")
    out = _run([sys.executable, "-c", code], timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False", "registry.py must not import torch (icml25 list stays fast)"


def test_all_listed():
    listed = {m.name for m in discover()}
    missing = set(PACKAGES) - listed
    assert not missing, f"not registered in icml25.methods (run `uv sync --all-packages`?): {missing}"


@pytest.mark.parametrize("name", PACKAGES)
def test_cli_help(name):
    exe = BIN / name
    assert exe.exists(), f"console script {exe} missing"
    out = _run([str(exe), "--help"], timeout=120)
    assert out.returncode == 0, out.stderr
    assert "reproduce" in out.stdout
    out = _run([sys.executable, "-m", _mod(name), "--help"], timeout=120)
    assert out.returncode == 0, out.stderr
    assert "reproduce" in out.stdout


@pytest.mark.parametrize("name", PACKAGES)
def test_reproduce_smoke(name, tmp_path):
    out_dir = tmp_path / "run"
    out = _run([str(BIN / name), "reproduce", "--smoke", "--quiet", "--out", str(out_dir)], timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    for f in ("config.json", "env.json", "results.json", "results.md"):
        assert (out_dir / f).exists(), f"{f} missing from the run dir"
    data = json.loads((out_dir / "results.json").read_text())
    validate_results(data)
    assert data["method"] == name and data["smoke"] is True
    assert data["claims"], "reproduce must measure at least one claim"
    for fig in data.get("figures", []):
        assert (out_dir / fig).exists(), f"figure {fig} listed but not written"
