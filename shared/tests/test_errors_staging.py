"""Bad input ends in one `error:` line (exit 2), Ctrl-C in exit 130, and staged runs never mix two runs."""

import json
import os
import stat
from dataclasses import dataclass
from types import SimpleNamespace

import pytest
from icml25.claims import Claim, Report
from icml25.cli_helpers import ReproduceOptions, method_main, reproduce_command, run_reproduce
from icml25.errors import ConfigKeyError, UserInputError, read_json, user_message
from icml25.io import atomic_write_text
from icml25.registry import Method
from icml25.rundir import RunDir


def _method(reproduce):
    return SimpleNamespace(name="demo", title="Demo", venue="ICML 2025", url="u", cli="demo", reproduce=reproduce)


def _ok(*, quick, smoke, out, seed):
    (out / "fig.png").write_bytes(b"png")
    r = Report(method="demo", seeds=[seed])
    r.add(Claim.compare(claim="c", metric="m", ours=[1.0, 1.1, 1.2], baseline=[0.0, 0.1, 0.2], baseline_name="b",
                        paper="p"))
    return r


def test_read_json_names_file_and_missing_key(tmp_path):
    bad = tmp_path / "model_config.json"
    bad.write_text("not json")
    with pytest.raises(UserInputError, match="model_config.json.*not valid JSON"):
        read_json(bad, what="run config")
    bad.write_text(json.dumps({"task": "x"}))
    with pytest.raises(ConfigKeyError, match=r"lacks the key\(s\) \['gnn'\]"):
        read_json(bad, what="run config", required=("task", "gnn"))
    assert read_json(bad, required=("task",)) == {"task": "x"}
    with pytest.raises(UserInputError, match="no such file"):
        read_json(tmp_path / "missing.json")


def test_user_message_translates_library_errors_and_keeps_bugs():
    safetensors = pytest.importorskip("safetensors.numpy")
    try:
        safetensors.load(b"garbage")
    except Exception as exc:  # SafetensorError
        assert "safetensors" in user_message(exc)
    assert "h.h5ad" in user_message(OSError(5, "Unable to open file", "h.h5ad"))
    assert user_message(KeyError("x")) is None and user_message(RuntimeError("bug")) is None


@pytest.mark.parametrize("exc, code, text", [
    (UserInputError("--hidden must be >= 1, got 0"), 2, "demo: error: --hidden must be >= 1, got 0"),
    (OSError(5, "Unable to open file (file signature not found)", "x.h5ad"), 2, "demo: error: x.h5ad: Unable"),
    (KeyboardInterrupt(), 130, "demo: interrupted"),
])
def test_method_main_exit_codes(exc, code, text, capsys):
    @dataclass(frozen=True)
    class Cmd:
        n: int = 0

    def boom(cfg):
        raise exc

    rc = method_main(_method(None), {"run": (Cmd, boom)}, argv=["run"])
    err = capsys.readouterr().err
    assert rc == code and text in err and "Traceback" not in err


@dataclass(frozen=True)
class _Inner:
    steps: int = 3

    def __post_init__(self):
        if self.steps <= 0:
            raise ValueError(f"steps must be a positive integer, got {self.steps}")


@dataclass(frozen=True)
class _Outer:
    config: _Inner = _Inner()


@pytest.mark.parametrize("argv, refused", [
    (["run", "--config.steps", "0"], True),
    (["run", "--config.steps", "2"], False),  # negative control: a valid value runs the command
])
def test_config_refusal_is_one_error_line_not_a_box(argv, refused, capsys):
    ran = []
    rc = method_main(_method(None), {"run": (_Outer, lambda cfg: ran.append(cfg.config.steps))}, argv=argv)
    err = capsys.readouterr().err
    if refused:
        assert rc == 2 and not ran
        assert err.strip() == "demo: error: steps must be a positive integer, got 0"
        assert "╭" not in err and "tyro-dummy" not in err
    else:
        assert rc == 0 and ran == [2] and err == ""


def test_method_main_keeps_traceback_for_bugs():
    @dataclass(frozen=True)
    class Cmd:
        n: int = 0

    def bug(cfg):
        raise RuntimeError("a genuine bug")

    with pytest.raises(RuntimeError):
        method_main(_method(None), {"run": (Cmd, bug)}, argv=["run"])


def test_staged_run_appears_whole_and_overwrite_replaces_it(tmp_path):
    out = tmp_path / "run"
    run_reproduce(_method(_ok), quick=True, smoke=False, out=out, seed=0, quiet=True)
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "env.json", "fig.png", "results.json", "results.md"]
    (out / "stale-from-old-run.txt").write_text("old")
    run_reproduce(_method(_ok), quick=True, smoke=False, out=out, seed=1, overwrite=True, quiet=True)
    assert not (out / "stale-from-old-run.txt").exists()  # replaced whole, not mixed
    assert json.loads((out / "results.json").read_text())["seeds"] == [1]
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # no hidden partial or old folders left


def test_interrupted_overwrite_leaves_old_run_intact(tmp_path):
    out = tmp_path / "run"
    run_reproduce(_method(_ok), quick=True, smoke=False, out=out, seed=0, quiet=True)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def interrupted(*, quick, smoke, out, seed):
        (out / "half.txt").write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_reproduce(_method(interrupted), quick=True, smoke=False, out=out, seed=5, overwrite=True, quiet=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_bad_out_refused_before_anything_runs(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    called = []
    with pytest.raises(ValueError, match="not a directory"):
        run_reproduce(_method(lambda **k: called.append(1)), quick=True, smoke=False, out=f, seed=0, quiet=True)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "a").write_text("x")
    with pytest.raises(ValueError, match="not empty"):
        RunDir(tmp_path / "full", staged=True)
    assert not called


def test_atomic_files_get_the_users_umask(tmp_path):
    old = os.umask(0o022)
    try:
        p = atomic_write_text(tmp_path / "a.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(p.stat().st_mode) == 0o644
    assert not [q for q in tmp_path.iterdir() if q.name.startswith(".")]


def test_reproduce_options_have_threads():
    assert ReproduceOptions().threads is None


@dataclass(frozen=True)
class _TaskOptions(ReproduceOptions):
    task: str = "main"


def _by_task(*, task, quick, smoke, out, seed):
    r = _ok(quick=quick, smoke=smoke, out=out, seed=seed)
    r.title = f"task {task}"
    return r


@pytest.mark.parametrize("as_string", [False, True])
def test_reproduce_command_runs_the_named_task(tmp_path, as_string, monkeypatch):
    import sys
    import types

    mod = types.ModuleType("_icml25_by_task_demo")
    mod.run = _by_task
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    by_task = f"{mod.__name__}:run" if as_string else _by_task
    for method in (_method(_ok), Method(name="demo", title="Demo", venue="ICML 2025", url="u", reproduce=_ok)):
        out = tmp_path / f"{as_string}-{type(method).__name__}"
        cmd = reproduce_command(method, by_task=by_task)
        assert cmd(_TaskOptions(out=out, quick=True, seed=3, quiet=True, task="hard")) == 0
        assert json.loads((out / "results.json").read_text())["title"] == "task hard"
        assert method.reproduce is _ok  # the method itself is left as it was
        # negative control: without by_task the task field is not read and the method's own reproduce runs
        plain = tmp_path / f"plain-{as_string}-{type(method).__name__}"
        reproduce_command(method)(_TaskOptions(out=plain, quick=True, seed=3, quiet=True, task="hard"))
        assert json.loads((plain / "results.json").read_text())["title"] == "Demo"


def test_rundir_carry_rules(tmp_path):
    """RunDir.carry copies finished sub-runs of the run being replaced into the staged run, and nothing else."""
    target = tmp_path / "full"
    (target / "scale").mkdir(parents=True)
    (target / "notes").mkdir()
    (target / "notes" / "x.txt").write_text("no results.json")
    assert RunDir(tmp_path / "fresh", staged=True).carry(["scale"]) == []  # nothing to replace
    assert RunDir(target, overwrite=True).carry(["scale"]) == []  # unstaged: writes in place, nothing to copy
    rd = RunDir(target, overwrite=True, staged=True)
    assert rd.carry(["scale", "notes"]) == []  # no results.json: unfinished, not carried
    (target / "scale" / "results.json").write_text('{"m": 1}')
    (rd.path / "scale").mkdir()
    assert rd.carry(["scale"]) == []  # the new run has its own scale/
    (rd.path / "scale").rmdir()
    assert rd.carry(["scale"]) == ["scale"] and (rd.path / "scale" / "results.json").read_text() == '{"m": 1}'
    rd.commit()
    assert (target / "scale" / "results.json").exists() and not (target / "notes").exists()


def test_rundir_carry_all_finished_subruns_by_default(tmp_path):
    target = tmp_path / "full"
    for name, done in (("sub", True), ("ablation", True), ("partial", False)):
        (target / name).mkdir(parents=True)
        if done:
            (target / name / "results.json").write_text("{}")
    (target / "figure.png").write_text("old")
    rd = RunDir(target, overwrite=True, staged=True)
    assert rd.carry() == ["ablation", "sub"]  # finished sub-runs only, not the unfinished one nor plain files
    assert rd.carry([]) == []  # explicit empty list: nothing (negative control)
    rd.commit()
    assert sorted(p.name for p in target.iterdir()) == ["ablation", "sub"]


class _PkgError(UserInputError):
    pass


def test_read_npy_and_npz_name_the_flag_and_the_file(tmp_path):
    import numpy as np
    from icml25.errors import read_npy, read_npz

    good = tmp_path / "a.npy"
    np.save(good, np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(read_npy(good, what="--input"), np.arange(6.0).reshape(2, 3))
    arch = tmp_path / "d.npz"
    np.savez(arch, x=np.ones((2, 2)), z=np.zeros(2))
    assert set(read_npz(arch, what="--data")) == {"x", "z"}
    assert list(read_npz(arch, what="--data", keys=("z",))) == ["z"]
    text = tmp_path / "t.npy"
    text.write_text("1 2 3\n")
    trunc = tmp_path / "tr.npy"
    trunc.write_bytes(good.read_bytes()[:-8])
    obj = tmp_path / "o.npy"
    np.save(obj, np.array(["a", "b"]))
    cases = [
        (lambda: read_npy(tmp_path / "none.npy", what="--input", error=_PkgError), "no such file"),
        (lambda: read_npy(text, what="--input", error=_PkgError), "no NumPy header"),
        (lambda: read_npy(trunc, what="--input", error=_PkgError), "truncated or corrupt"),
        (lambda: read_npy(obj, what="--input", error=_PkgError), "numeric"),
        (lambda: read_npz(text, what="--data", error=_PkgError, hint="the data.npz of simulate"), "simulate"),
        (lambda: read_npz(arch, what="--data", keys=("x", "w"), error=_PkgError), "['w']"),
        (lambda: read_npz(tmp_path, what="--data", error=_PkgError), "is not a file"),
    ]
    for call, needle in cases:
        with pytest.raises(_PkgError) as info:
            call()
        msg = str(info.value)
        assert needle in msg and ("--input" in msg or "--data" in msg), msg
    trunc_z = tmp_path / "tr.npz"
    trunc_z.write_bytes(arch.read_bytes()[:40])
    with pytest.raises(_PkgError, match="truncated or corrupt .npz"):
        read_npz(trunc_z, what="--data", error=_PkgError)


def test_run_cli_fresh_reports_imported_modules_and_exit_codes():
    from icml25.testing import run_cli_fresh

    results, imported = run_cli_fresh("icml25.cli", [["list"], ["report", "--package", "/no/such/pkg"]],
                                      watch=("json", "no_such_module_xyz"))
    assert imported == {"json"}  # detects what was imported, and only that
    assert results[0].returncode == 0 and results[1].returncode == 2 and "error" in results[1].stderr
