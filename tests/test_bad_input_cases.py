"""The bad inputs a new user tried on the first eight CLIs (issue 17), one by one.

Each case runs the package's ``main(argv)`` in this process (fast: the imports are shared) and asserts exit status
2, an ``error:`` line that names the field or the file, no traceback, and nothing written under the test folder
except the fixtures. Function-level checks cover inputs that need a fitted model.
"""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

GPT2_CONFIG = {"model_type": "gpt2", "n_layer": 1, "n_head": 1, "n_embd": 8, "vocab_size": 16, "n_positions": 8}


def _fixtures(tmp: Path) -> None:
    (tmp / "a-file").write_text("not a folder")
    (tmp / "full").mkdir()
    (tmp / "full" / "keep.txt").write_text("an earlier run")
    (tmp / "text.h5ad").write_text("not hdf5")
    (tmp / "text.hdf5").write_text("not hdf5")
    (tmp / "text.npz").write_text("not an npz")
    (tmp / "bad.jsonl").write_text("{bad json\n")
    (tmp / "nan-prompt.jsonl").write_text('{"prompt": NaN, "chosen": "a", "rejected": "b"}\n')
    (tmp / "nan-chosen.jsonl").write_text('{"prompt": "1+1=", "chosen": NaN, "rejected": "b"}\n')
    (tmp / "no-fields.jsonl").write_text('{"prompt": "1+1=", "answer": "2"}\n')
    run = tmp / "run-missing-keys"
    run.mkdir()
    (run / "model_config.json").write_text('{"foo": 1}')
    (run / "model.safetensors").write_text("junk")
    kea = tmp / "kea-run" / "model"
    kea.mkdir(parents=True)
    (kea / "model_config.json").write_text('{"foo": 1}')
    kea_bad = tmp / "kea-badjson" / "model"
    kea_bad.mkdir(parents=True)
    (kea_bad / "model_config.json").write_text("{bad")
    lift = tmp / "lift-corrupt" / "model"
    lift.mkdir(parents=True)
    (lift / "config.json").write_text(json.dumps(GPT2_CONFIG))
    (lift / "model.safetensors").write_bytes(b"\x00garbage" * 8)
    pipa = tmp / "pipa-corrupt" / "lm"
    pipa.mkdir(parents=True)
    (pipa / "config.json").write_text(json.dumps(GPT2_CONFIG))
    (pipa / "model.safetensors").write_bytes(b"\x00garbage" * 8)
    (tmp / "fake.safetensors").write_text("text, not weights")
    (tmp / "fake.pt").write_text("text, not weights")


def _cases(t: Path) -> list[tuple[str, str, list[str], str]]:
    never = str(t / "never")
    return [
        # tracebacks before
        ("relgnn", "config lacks keys", ["evaluate", "--run", str(t / "run-missing-keys")], "lacks the key"),
        ("string-pe", "config lacks keys", ["evaluate", "--run", str(t / "run-missing-keys")], "lacks the key"),
        ("kea", "config lacks env", ["evaluate", "--run", str(t / "kea-run")], "env"),
        ("suica", "text as .h5ad (fit)", ["fit", "--data", str(t / "text.h5ad"), "--out", never], "text.h5ad"),
        ("suica", "not a suica model (predict)", ["predict", "--model", str(t / "run-missing-keys"), "--output",
                                                  str(t / "never.h5ad")], "lacks the key"),
        ("habi", "text as .hdf5", ["train-planner", "--data", str(t / "text.hdf5"), "--out", never], "text.hdf5"),
        ("suica", "output under a file", ["simulate", "--output", str(t / "a-file" / "x.h5ad")], "a-file"),
        ("kea", "negative width", ["train", "--hidden", "-1", "--out", never], "--hidden"),
        ("lift", "corrupt safetensors", ["evaluate", "--model", str(t / "lift-corrupt"), "--out", never],
         "lift-corrupt"),
        ("pipa", "corrupt safetensors", ["evaluate", "--model", str(t / "pipa-corrupt"), "--out", never],
         "pipa-corrupt"),
        ("lift", "out is a file (evaluate)", ["evaluate", "--out", str(t / "a-file")], "a-file"),
        # silent before
        ("string-pe", "zero tokens", ["benchmark", "--tokens", "0"], "--tokens"),
        ("string-pe", "zero repeats", ["benchmark", "--repeats", "0"], "--repeats"),
        ("kea", "zero width", ["train", "--hidden", "0", "--out", never], "--hidden"),
        ("pipa", "zero steps", ["train", "--steps", "0", "--data", str(t / "bad.jsonl"), "--out", never], "--steps"),
        ("pipa", "zero prompts", ["evaluate", "--n-prompts", "0", "--model", str(t / "pipa-corrupt"), "--out", never],
         "--n-prompts"),
        ("lift", "out not empty (evaluate)", ["evaluate", "--out", str(t / "full")], "not empty"),
        # unclear before
        ("kea", "config is not JSON", ["evaluate", "--run", str(t / "kea-badjson")], "model_config.json"),
        ("pipa", "data is not JSONL", ["train", "--data", str(t / "bad.jsonl"), "--out", never], "line 1"),
        ("pipa", "NaN prompt in a row", ["train", "--data", str(t / "nan-prompt.jsonl"), "--out", never], "'prompt'"),
        ("pipa", "NaN completion in a row", ["train", "--data", str(t / "nan-chosen.jsonl"), "--out", never],
         "'chosen'"),
        ("pipa", "row without a known format", ["train", "--data", str(t / "no-fields.jsonl"), "--out", never],
         "line 1"),
        ("habi", "text as .npz", ["train-planner", "--data", str(t / "text.npz"), "--out", never], "text.npz"),
        # NaN sizes and rates, unknown names
        ("kea", "NaN entropy coefficient", ["train", "--alpha", "nan", "--out", never], "--alpha"),
        ("pipa", "NaN learning rate", ["train", "--lr", "nan", "--data", str(t / "bad.jsonl"), "--out", never], "--lr"),
        ("relgnn", "NaN learning rate", ["train", "--lr", "nan", "--out", never], "--lr"),
        ("relgnn", "unknown task", ["train", "--task", "nope", "--out", never], "--task"),
        ("suica", "NaN noise", ["simulate", "--noise", "nan", "--output", str(t / "never.h5ad")], "--noise"),
        ("focoop", "text as a .pt clip checkpoint", ["run", "--clip-model", "ViT-B-32", "--clip-checkpoint",
                                                     str(t / "fake.pt"), "--out", never], "fake.pt"),
        ("focoop", "text as the clip folder", ["run", "--clip-model", "local-dir:" + str(t / "run-missing-keys"),
                                                    "--out", never], "open_clip_config.json"),
    ]


def _snapshot(tmp: Path) -> list[str]:
    return sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*"))


CASES = _cases(Path("/placeholder"))


@pytest.mark.parametrize("i", range(len(CASES)), ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_bad_input_case(i, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)  # a default --out (runs/...) would land here and be caught by the snapshot
    _fixtures(tmp_path)
    pkg, label, argv, needle = _cases(tmp_path)[i]
    before = _snapshot(tmp_path)
    main = importlib.import_module(pkg.replace("-", "_") + ".cli").main
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, f"{pkg}: {label}: exit {rc}\n{err[-2000:]}"
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    assert len(lines) == 1 and needle in lines[0], f"{pkg}: {label}: {err[-2000:]}"
    assert "Traceback" not in err
    assert _snapshot(tmp_path) == before, f"{pkg}: {label}: something was written"


# ---------------------------------------------------------------- inputs that need a fitted model: function level
def test_suica_coords_files(tmp_path):
    from suica.cli import _load_coords
    from suica.errors import SUICAInputError

    ok = tmp_path / "c.csv"
    ok.write_text("x,y\n1,2\n3,4\n")
    np.testing.assert_array_equal(_load_coords(ok), [[1, 2], [3, 4]])  # one header row is allowed
    bad = tmp_path / "bad.csv"
    bad.write_text("x,y\nfoo,bar\n")
    with pytest.raises(SUICAInputError, match="--coords"):
        _load_coords(bad)
    txt = tmp_path / "t.npy"
    txt.write_text("not npy")
    with pytest.raises(SUICAInputError, match="--coords"):
        _load_coords(txt)
    nan = tmp_path / "nan.npy"
    np.save(nan, np.array([[0.0, math.nan]]))
    with pytest.raises(SUICAInputError, match="finite"):
        _load_coords(nan)
    h5 = tmp_path / "t.h5ad"
    h5.write_text("text")
    with pytest.raises(Exception, match="--coords"):
        _load_coords(h5)


def test_suica_fit_refuses_a_nan_coordinate_on_a_held_out_spot(tmp_path, capsys):
    from suica.cli import main
    from suica.data import write_h5ad
    from suica.synthetic import make_tissue

    a = make_tissue(n_spots=60, n_genes=12, n_domains=2, layout="random", dim=2, zero_frac=0.5, seed=0)
    split = np.array(["train"] * a.n_obs, dtype=object)
    split[:5] = "test"
    a.obs["split"] = split.astype(str)
    a.obsm["spatial"] = np.asarray(a.obsm["spatial"], dtype=np.float64)
    a.obsm["spatial"][2, 0] = math.nan  # a held-out spot
    write_h5ad(a, tmp_path / "nan.h5ad")
    rc = main(["fit", "--data", str(tmp_path / "nan.h5ad"), "--out", str(tmp_path / "never")])
    err = capsys.readouterr().err
    assert rc == 2 and "non-finite" in err and "obsm" in err, err
    assert not (tmp_path / "never").exists()


def test_lift_offline_hub_id_fails_fast(monkeypatch):
    import time

    import torch  # noqa: F401  (imports are not what is timed)
    from lift.models import load_model
    from transformers import AutoModelForCausalLM  # noqa: F401

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    with pytest.raises(Exception, match="gpt2-not-cached"):
        load_model("gpt2-not-cached")
    assert time.perf_counter() - t0 < 5.0


def test_interrupted_command_leaves_nothing_and_keeps_the_old_run(tmp_path, monkeypatch, capsys):
    """Ctrl-C inside a command: exit 130, one line, the staged run is removed and an old run stays intact."""
    from dataclasses import dataclass

    from icml25.cli_helpers import CommonOptions, method_main, open_run_dir

    @dataclass(frozen=True)
    class Cmd(CommonOptions):
        pass

    def fn(cfg):
        rd = open_run_dir("demo", cfg)
        rd.write_json("config.json", {"new": True})
        raise KeyboardInterrupt

    class M:
        name = cli = "demo"
        title, venue, url = "Demo", "", ""

    out = tmp_path / "run"
    out.mkdir()
    (out / "results.json").write_text('{"old": true}')
    rc = method_main(M, {"go": (Cmd, fn)}, argv=["go", "--out", str(out), "--overwrite"])
    err = capsys.readouterr().err
    assert rc == 130 and "interrupted" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert sorted(p.name for p in out.iterdir()) == ["results.json"]
    # positive control: the same command without the interrupt replaces the run
    def ok(cfg):
        open_run_dir("demo", cfg).write_json("config.json", {"new": True})
        return 0

    assert method_main(M, {"go": (Cmd, ok)}, argv=["go", "--out", str(out), "--overwrite"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["config.json"]
