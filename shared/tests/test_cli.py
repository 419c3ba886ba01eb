"""The umbrella CLI, exercised against fake methods installed through a throw-away dist-info on PYTHONPATH."""

import json
import os
import subprocess
import sys
import textwrap
import time
import tomllib

import pytest
from icml25.cli import main
from icml25.testing import run_cli

FAKE = '''
from pathlib import Path
from icml25.claims import Claim, Report
from icml25.registry import Method

def _good(*, quick, smoke, out, seed):
    r = Report(method="fake-good", seeds=[seed])
    r.add(Claim.compare(claim="ours beats base", metric="acc", ours=[0.9], baseline=[0.5], baseline_name="base", paper="p"))
    return r

def _crash(*, quick, smoke, out, seed):
    raise RuntimeError("boom")

def _malformed(*, quick, smoke, out, seed):
    r = Report(method="fake-malformed")
    r.add(Claim(claim="x", metric="m", ours=float("nan"), baseline=1.0, baseline_name="b", holds=True, paper=""))
    return r

GOOD = Method(name="fake-good", title="Good", venue="ICML 2025", url="u", reproduce=_good)
CRASH = Method(name="fake-crash", title="Crash", venue="ICML 2025", url="u", reproduce=_crash)
MALFORMED = Method(name="fake-malformed", title="Malformed", venue="ICML 2025", url="u", reproduce=_malformed)
'''


@pytest.fixture(scope="module")
def fake_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("fakes")
    (root / "icml25_fake_methods.py").write_text(FAKE)
    info = root / "icml25_fake_methods-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: icml25-fake-methods\nVersion: 0.0.1\nSummary: Fake paper title\n")
    (info / "entry_points.txt").write_text(textwrap.dedent("""\
        [icml25.methods]
        fake-good = icml25_fake_methods:GOOD
        fake-crash = icml25_fake_methods:CRASH
        fake-malformed = icml25_fake_methods:MALFORMED
        """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]), "MPLBACKEND": "Agg"}
    return env


def _icml25(args, env, **kw):
    return subprocess.run([sys.executable, "-m", "icml25", *args], capture_output=True, text=True, env=env, timeout=300, **kw)


def test_list_reads_metadata_without_torch(fake_env):
    code = "import sys; from icml25.cli import main; main(['list']); print('TORCH' if 'torch' in sys.modules else 'NOTORCH')"
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=fake_env, timeout=60)
    assert time.perf_counter() - t0 < 10
    assert "fake-good" in out.stdout and "Fake paper title" in out.stdout
    assert out.stdout.strip().endswith("NOTORCH")


def test_import_icml25_is_light():
    out = subprocess.run([sys.executable, "-c", "import sys, icml25; print(sorted(m for m in ('torch','matplotlib','tyro') if m in sys.modules))"],
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_reproduce_unknown_name_lists_known(fake_env):
    out = _icml25(["reproduce", "nope", "--out", "unused"], fake_env)
    assert out.returncode == 2
    assert "unknown method" in out.stderr and "fake-good" in out.stderr


def test_reproduce_failures_do_not_stop_others(fake_env, tmp_path):
    out = _icml25(["reproduce", "fake-crash", "fake-malformed", "fake-good", "--out", str(tmp_path / "r"), "--quiet"], fake_env)
    assert out.returncode == 1, out.stderr
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())["methods"]
    assert summary["fake-good"]["status"] == "ok"
    assert summary["fake-crash"]["status"] == "failed" and "boom" in summary["fake-crash"]["error"]
    assert summary["fake-malformed"]["status"] == "failed"
    assert (tmp_path / "r" / "fake-good" / "results.json").exists()
    md = (tmp_path / "r" / "summary.md").read_text()
    assert "ours beats base" in md and "FAILED" in md
    # the existing --out is refused the second time
    again = _icml25(["reproduce", "fake-good", "--out", str(tmp_path / "r")], fake_env)
    assert again.returncode == 2 and "not empty" in again.stderr


def test_report_collects_latest_and_updates_readme(fake_env, tmp_path):
    _icml25(["reproduce", "fake-good", "--out", str(tmp_path / "runs" / "a"), "--quiet"], fake_env)
    (tmp_path / "runs" / "broken").mkdir()
    (tmp_path / "runs" / "broken" / "results.json").write_text("{not json")
    readme = tmp_path / "README.md"
    readme.write_text("head\n<!-- icml25-report:start -->\nold\n<!-- icml25-report:end -->\ntail\n")
    res = run_cli(main, ["report", "--runs", str(tmp_path / "runs"), "--update-readme", str(readme)])
    assert res.returncode == 0
    text = readme.read_text()
    assert "ours beats base" in text and "\nold\n" not in text and text.startswith("head") and text.endswith("tail\n")


def test_new_scaffold(tmp_path):
    res = run_cli(main, ["new", "my-method", "--root", str(tmp_path), "--title", "A Paper"])
    assert res.returncode == 0, res.stderr
    pkg = tmp_path / "my-method"
    meta = tomllib.loads((pkg / "pyproject.toml").read_text())
    assert meta["project"]["scripts"]["my-method"] == "my_method.cli:main"
    assert meta["project"]["entry-points"]["icml25.methods"]["my-method"] == "my_method.registry:METHOD"
    for rel in ("src/my_method/cli.py", "src/my_method/registry.py", "src/my_method/__main__.py", "README.md"):
        compile((pkg / rel).read_text(), rel, "exec") if rel.endswith(".py") else None
        assert (pkg / rel).exists()
    assert "## Results" in (pkg / "README.md").read_text()
    bad = run_cli(main, ["new", "Bad_Name", "--root", str(tmp_path)])
    assert bad.returncode == 2 and "lowercase" in bad.stderr
    again = run_cli(main, ["new", "my-method", "--root", str(tmp_path)])
    assert again.returncode == 2 and "exists" in again.stderr


# ---------------------------------------------------------------- issue #70: bad input -> exit 2, one `error:` line
def _one_error_line(res, prog, needle):
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert "Traceback" not in res.stderr and "╭" not in res.stderr, res.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: "), res.stderr[-2000:]
    assert needle in lines[0], lines[0]


@pytest.mark.parametrize("value", ["abc", "0", "-1"])
def test_bad_icml25_threads_is_one_line_even_for_help(value):
    pytest.importorskip("string_pe")
    env = {**os.environ, "ICML25_THREADS": value}
    for module, prog, args in (("string_pe", "string-pe", ["--help"]), ("lcia", "lcia", ["train", "--help"]),
                               ("icml25", "icml25", ["--help"])):
        res = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, env=env, timeout=120)
        _one_error_line(res, prog, f"ICML25_THREADS={value}: must be a positive integer")
    ok = subprocess.run([sys.executable, "-m", "string_pe", "--help"], capture_output=True, text=True,
                        env={**os.environ, "ICML25_THREADS": "2"}, timeout=120)
    assert ok.returncode == 0 and "usage" in ok.stdout, ok.stderr[-2000:]


def test_int_flag_given_nan_names_the_flag_in_a_real_cli():
    pytest.importorskip("lcia")
    res = subprocess.run([sys.executable, "-m", "lcia", "train", "--config.steps", "nan"], capture_output=True,
                         text=True, timeout=120)
    _one_error_line(res, "lcia", "--config.steps: 'nan' is not an integer")


_PARSE_CASES = [  # (extra argv after `train --out DIR`, or a whole argv without it; what the one line must say)
    (["--epochs", "nan"], "--epochs: 'nan' is not an integer"),
    (["--epochs=1.5"], "--epochs: '1.5' is not an integer"),
    (["--lr", "abc"], "--lr: 'abc' is not a number"),
    (["--threads", "abc"], "--threads: 'abc' is not an integer"),
    (["--threads", "0"], "--threads: must be a positive integer"),
    (["--pe", "foo"], "--pe: 'foo' is not one of none, ape, ape-fourier"),
    (["--bogus", "1"], "unrecognized option --bogus"),
    (["--n-trian", "3"], "unrecognized option --n-trian for 'string-pe train'; did you mean --n-train?"),
    (["--quiet", "1"], "unexpected argument '1' after --quiet"),
    (["--epochs", "2", "--epochs", "3"], "--epochs given more than once"),
    (["--epochs"], "--epochs needs a value (an integer)"),
    ("whole", ["trian"], "unknown command 'trian': expected one of train, evaluate"),
    ("whole", [], "missing command: expected one of train, evaluate"),
]


@pytest.mark.parametrize("case", _PARSE_CASES, ids=lambda c: " ".join(c[-2]) or "no-args")
def test_parse_errors_are_one_line_naming_the_flag(case, tmp_path):
    cli = pytest.importorskip("string_pe.cli")
    out = tmp_path / "never"
    argv = case[1] if case[0] == "whole" else ["train", "--out", str(out), *case[0]]
    res = run_cli(cli.main, argv)
    _one_error_line(res, "string-pe", case[-1])
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_missing_required_option_is_one_line():
    from dataclasses import dataclass
    from types import SimpleNamespace

    from icml25.cli_helpers import method_main

    @dataclass(frozen=True)
    class Needs:
        run: str
        """A run folder."""

    @dataclass(frozen=True)
    class Other:
        k: int = 1

    method = SimpleNamespace(name="toy", cli="toy", title="T", venue="V", url="u")
    main_ = lambda argv: method_main(method, {"a": (Needs, lambda c: 0), "b": (Other, lambda c: 0)}, argv=argv)  # noqa: E731
    _one_error_line(run_cli(main_, ["a"]), "toy", "missing required option --run")
    assert run_cli(main_, ["a", "--run", "x"]).returncode == 0


def test_new_says_to_lock_before_uv_run(tmp_path):
    res = run_cli(main, ["new", "my-method", "--root", str(tmp_path)])
    assert res.returncode == 0, res.stderr
    assert "next: uv lock && uv sync --all-packages" in res.stdout
