"""CLI bad-input battery (exit 2, one `error:` line naming the field, nothing written) and the README quickstart."""

import re
from pathlib import Path

import pytest
from sold.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"

BAD = [
    (["train", "--agent.gamma", "1.5"], "gamma"),
    (["train", "--agent.lam", "-0.1"], "lam"),
    (["train", "--ae.num-slots", "0"], "num_slots"),
    (["train", "--ae.slot-dim", "30", "--ae.heads", "4"], "divisible"),
    (["train", "--agent.token-dim", "66", "--agent.heads", "4"], "divisible"),
    (["train", "--agent.min-context", "4", "--agent.max-context", "3"], "min_context"),
    (["train", "--agent.num-bins", "1"], "num_bins"),
    (["train", "--env.task", "distinct", "--env.num-objects", "2"], "num_objects"),
    (["train", "--steps", "0"], "--steps"),
    (["train", "--representation", "pixels"], "--representation"),
    (["pretrain", "--ae.lr", "nan"], "lr"),
    (["evaluate", "--run", "NOPE"], "NOPE"),
]


@pytest.mark.parametrize("argv, needle", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_cli_input(argv, needle, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "never"
    args = [a.replace("NOPE", str(tmp_path / "nope")) for a in argv]
    rc = main([*args, "--out", str(out)])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    assert rc == 2, err
    assert len(lines) == 1 and needle.replace("NOPE", "nope") in lines[0], err
    assert "Traceback" not in err
    assert not out.exists() and not any(tmp_path.iterdir())


def test_readme_python_quickstart_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python block"
    code = blocks[0]
    assert not code.startswith("# no-run")
    exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})
