"""The CLI's bad-input list: exit 2, one `error:` line naming the field or file, nothing written."""

import numpy as np
import pytest
from safediffcon.cli import main


def _cases(t):
    never = str(t / "never")
    np.savez(t / "nan.npz", u0=np.zeros((2, 16)), u_target=np.zeros((2, 16)), f=np.full((2, 10, 16), np.nan))
    np.savez(t / "short.npz", u0=np.zeros((2, 16)), u_target=np.zeros((2, 16)), f=np.zeros((2, 9, 16)))
    np.savez(t / "nokeys.npz", a=np.zeros(2))
    return [
        (["pretrain", "--config.alpha", "1.5", "--out", never], "alpha"),
        (["pretrain", "--config.alpha", "0", "--out", never], "alpha"),
        (["pretrain", "--config.n-cal", "10", "--out", never], "n_cal"),
        (["pretrain", "--config.u-bound", "0", "--out", never], "u_bound"),
        (["pretrain", "--config.weight-lambda", "-1", "--out", never], "weight_lambda"),
        (["pretrain", "--config.nu", "0", "--out", never], "nu"),
        (["pretrain", "--config.dt", "0", "--out", never], "dt"),
        (["pretrain", "--config.dt", "0.1", "--out", never], "unstable"),
        (["pretrain", "--config.nx", "2", "--out", never], "nx"),
        (["pretrain", "--config.ddim-steps", "500", "--out", never], "ddim_steps"),
        (["pretrain", "--data", str(t), "--out", never], "burgers_train.h5"),
        (["post-train", "--model", str(t / "nope"), "--out", never], "model_config.json"),
        (["evaluate", "--controls", str(t / "missing.npz")], "missing.npz"),
        (["evaluate", "--controls", str(t / "nan.npz"), "--config.nx", "16"], "finite"),
        (["evaluate", "--controls", str(t / "short.npz"), "--config.nx", "16"], "f must be"),
        (["evaluate", "--controls", str(t / "nokeys.npz")], "lacks"),
    ]


@pytest.mark.parametrize("i", range(16))
def test_bad_input_gives_one_error_line(i, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args, needle = _cases(tmp_path)[i]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    rc = main(args)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    assert rc == 2 and len(lines) == 1 and needle in lines[0], err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
