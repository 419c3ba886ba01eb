import json
import os
import stat

import pytest
from icml25.io import atomic_write_json, atomic_write_text, to_jsonable
from icml25.rundir import RunDir, RunDirError


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path):
    p = tmp_path / "a" / "f.txt"
    atomic_write_text(p, "one")
    atomic_write_text(p, "two")
    assert p.read_text() == "two"
    assert [f.name for f in p.parent.iterdir()] == ["f.txt"]


def test_atomic_write_failure_keeps_old_file(tmp_path, monkeypatch):
    p = tmp_path / "f.json"
    atomic_write_json(p, {"x": 1})

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write_json(p, {"x": 2})
    assert json.loads(p.read_text()) == {"x": 1}
    assert [f.name for f in tmp_path.iterdir()] == ["f.json"]


def test_to_jsonable_numpy_and_nonfinite():
    np = pytest.importorskip("numpy")
    out = to_jsonable({"a": np.float32(1.5), "b": np.arange(3), "c": float("nan"), "d": (1, 2)})
    assert out == {"a": 1.5, "b": [0, 1, 2], "c": None, "d": [1, 2]}


def test_rundir_refuses_nonempty_unless_overwrite(tmp_path):
    rd = RunDir(tmp_path / "run")
    rd.write_json("config.json", {"a": 1})
    with pytest.raises(RunDirError, match="not empty"):
        RunDir(tmp_path / "run")
    RunDir(tmp_path / "run", overwrite=True)
    RunDir(tmp_path / "run", resume=True)


def test_rundir_rejects_file_and_unwritable(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(RunDirError, match="not a directory"):
        RunDir(f)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        if os.access(ro, os.W_OK):  # root ignores permissions
            pytest.skip("running as root: permission bits are not enforced")
        with pytest.raises(RunDirError, match="not writable"):
            RunDir(ro / "sub")
    finally:
        ro.chmod(stat.S_IRWXU)


def test_metrics_jsonl_appends_one_object_per_line(tmp_path):
    rd = RunDir(tmp_path / "r")
    for i in range(3):
        rd.log(i, loss=1.0 / (i + 1))
    assert [m["step"] for m in rd.metrics()] == [0, 1, 2]
    assert rd.metrics()[1]["loss"] == 0.5


def test_env_json_has_versions(tmp_path):
    rd = RunDir(tmp_path / "r")
    rd.write_env(device="cpu")
    env = rd.read_json("env.json")
    assert env["device"] == "cpu" and "icml25" in env["packages"] and env["python"]
