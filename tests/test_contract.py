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


# ---------------------------------------------------------------- committed full runs and generated README blocks
def _full(name: str) -> Path:
    return ROOT / "packages" / name / "results" / "full" / "results.json"


@pytest.mark.parametrize("name", PACKAGES)
def test_committed_full_run_has_verdicts_kinds_and_a_matching_readme(name):
    from icml25.report import current_block, load_package, package_block, stale_values

    path = _full(name)
    if not path.exists():
        pytest.skip(f"{name}: no committed full run yet")
    runs = load_package(path.parents[2])
    data = runs.main
    assert data["method"] == name and not data.get("quick") and not data.get("smoke")
    for sub, d in runs.runs():
        assert d["method"] == name and not d.get("quick") and not d.get("smoke"), f"{name}/{sub}: not a full run"
        for c in d["claims"]:
            assert c.get("kind") in ("paper", "property", "target", "gate"), f"{c['claim']!r}: no kind"
            assert c.get("verdict") in ("holds", "inconclusive", "fails", "untested"), f"{c['claim']!r}: no verdict"
        folder = path.parent if sub == "main" else path.parent / sub
        for fig in d.get("figures", []):
            assert (folder / fig).exists(), f"{fig} listed in {folder / 'results.json'} but not committed"
    readme = (ROOT / "packages" / name / "README.md").read_text()
    assert current_block(readme, where=f"packages/{name}/README.md") == package_block(runs), (
        f"packages/{name}/README.md: the generated block differs from results/full/results.json; run "
        f"`uv run icml25 report --package packages/{name} --update-readme packages/{name}/README.md`")
    stale = stale_values(readme, runs, where=f"packages/{name}/README.md")
    assert not stale, (f"packages/{name}/README.md: inline values in the prose differ from the committed runs: "
                       f"{stale}; run `uv run icml25 report --package packages/{name} --update-readme "
                       f"packages/{name}/README.md`")


def test_root_readme_summary_matches_committed_runs():
    from icml25.report import current_block, package_results, summary_block

    found = package_results(ROOT / "packages")
    assert current_block((ROOT / "README.md").read_text()) == summary_block(found), (
        "README.md: the summary differs from the committed full runs; run "
        "`uv run icml25 report --packages packages --update-readme README.md`")


def test_readme_check_catches_a_tampered_number(tmp_path):
    """Negative control: a README whose block has one number changed by hand no longer matches."""
    from icml25.claims import Claim, Report
    from icml25.report import current_block, load_package, package_block, replace_block

    r = Report(method="demo", seeds=[0, 1, 2])
    r.add(Claim.compare(claim="beats", metric="acc", ours=[0.91, 0.9, 0.92], baseline=[0.5, 0.51, 0.52],
                        baseline_name="b", paper="p"))
    data = r.to_dict()
    (tmp_path / "results" / "full").mkdir(parents=True)
    (tmp_path / "results" / "full" / "results.json").write_text(json.dumps(data))
    runs = load_package(tmp_path)
    readme = replace_block("# demo\n<!-- icml25-report:start -->\n<!-- icml25-report:end -->\n", package_block(runs))
    assert current_block(readme) == package_block(runs)
    tampered = readme.replace("0.91", "0.97")
    assert tampered != readme and current_block(tampered) != package_block(runs)
    (tmp_path / "README.md").write_text(tampered)
    out = _run([str(BIN / "icml25"), "report", "--package", str(tmp_path), "--update-readme",
                str(tmp_path / "README.md"), "--check"])
    assert out.returncode == 1 and "out of date" in out.stderr
    (tmp_path / "README.md").write_text(readme)
    out = _run([str(BIN / "icml25"), "report", "--package", str(tmp_path), "--update-readme",
                str(tmp_path / "README.md"), "--check"])
    assert out.returncode == 0, out.stderr


# ---------------------------------------------------------------- the scaffold passes the contract as generated
def test_scaffold_passes_the_contract_as_generated(tmp_path):
    """`icml25 new` writes a package in the house shape; as generated it answers --help, runs reproduce --smoke into
    a valid results.json, refuses bad input with exit 2, and its own tests of the mathematics pass."""
    import tomllib

    from icml25.scaffold import create_package

    pkg = create_package("demo-scaffold", root=tmp_path, title="Demo paper", url="https://example.org/paper")
    src = pkg / "src"
    for f in ("config.py", "errors.py", "reproduce.py", "cli.py", "registry.py", "method.py", "data.py"):
        assert (src / "demo_scaffold" / f).exists(), f
    meta = tomllib.loads((pkg / "pyproject.toml").read_text())["project"]
    assert meta["scripts"]["demo-scaffold"] == "demo_scaffold.cli:main"
    assert meta["entry-points"]["icml25.methods"]["demo-scaffold"] == "demo_scaffold.registry:METHOD"
    readme = (pkg / "README.md").read_text()
    assert "<!-- icml25-report:start -->" in readme and "```python" in readme
    env = {**ENV, "PYTHONPATH": str(src)}

    def run(*args: str, **kw) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, env=env,
                              cwd=tmp_path, **kw)

    assert run("-m", "demo_scaffold", "--help").returncode == 0
    out = tmp_path / "run"
    r = run("-m", "demo_scaffold", "reproduce", "--smoke", "--quiet", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    data = json.loads((out / "results.json").read_text())
    validate_results(data)
    assert data["claims"] and all(c["kind"] in ("paper", "property", "target", "gate") for c in data["claims"])
    gates = [c for c in data["claims"] if c["kind"] == "gate"]
    assert gates and all(c.get("gates") == [gates[0]["claim"]] for c in data["claims"] if c["kind"] != "gate")
    f = tmp_path / "a-file"
    f.write_text("x")
    bad = run("-m", "demo_scaffold", "reproduce", "--smoke", "--out", str(f))
    assert bad.returncode == 2 and "error:" in bad.stderr and "Traceback" not in bad.stderr
    bad = run("-m", "demo_scaffold", "fit", "--config.dim", "0", "--out", str(tmp_path / "never"))
    assert bad.returncode == 2 and "dim" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "never").exists()
    t = run("-m", "pytest", "-q", "-p", "no:cacheprovider", str(pkg / "tests"))
    assert t.returncode == 0, t.stdout[-3000:]


# ---------------------------------------------------------------- bad-input battery (generic part, every package)
def _battery_cases(tmp: Path) -> list[tuple[str, list[str], str]]:
    a_file = tmp / "a-file"
    a_file.write_text("not a folder")
    full = tmp / "full"
    full.mkdir()
    (full / "keep.txt").write_text("an earlier run")
    return [
        ("out is a file", ["reproduce", "--smoke", "--out", str(a_file)], "a-file"),
        ("out is not empty", ["reproduce", "--smoke", "--out", str(full)], "not empty"),
        ("zero threads", ["reproduce", "--smoke", "--threads", "0", "--out", str(tmp / "never")], "threads"),
        ("negative threads", ["reproduce", "--smoke", "--threads", "-2", "--out", str(tmp / "never")], "threads"),
    ]


@pytest.mark.parametrize("name", PACKAGES)
def test_bad_input_battery(name, tmp_path):
    """Each bad input: exit 2, one `error:` line naming the field or file, no traceback, nothing written."""
    for label, args, needle in _battery_cases(tmp_path):
        before = sorted(p.name for p in tmp_path.rglob("*"))
        out = _run([str(BIN / name), *args], timeout=120)
        assert out.returncode == 2, f"{name}: {label}: exit {out.returncode}\n{out.stderr[-2000:]}"
        assert "error:" in out.stderr and needle in out.stderr, f"{name}: {label}: {out.stderr[-2000:]}"
        assert "Traceback" not in out.stderr, f"{name}: {label}: traceback\n{out.stderr[-3000:]}"
        assert sorted(p.name for p in tmp_path.rglob("*")) == before, f"{name}: {label}: something was written"
