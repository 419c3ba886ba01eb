"""Your own preference pairs: trl-format loading, randomized response on a `datasets.Dataset`, `privatize-pairs`."""

import json
import math

import numpy as np
import pytest
from private_robust_align.cli import main
from private_robust_align.dpo import load_pairs, rr_swap_dataset, rr_swap_pairs
from private_robust_align.errors import PrivateRobustAlignError
from private_robust_align.mechanism import flip_rate

ROWS = [{"prompt": f"q{i}", "chosen": f"good{i}", "rejected": f"bad{i}", "id": i} for i in range(400)]


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_dataset_swap_equals_list_swap_and_rate():
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_list(ROWS)
    released, z = rr_swap_dataset(ds, epsilon=1.0, seed=3)
    ref, z_ref = rr_swap_pairs(ROWS, epsilon=1.0, rng=np.random.default_rng(3))
    assert np.array_equal(z, z_ref)
    assert released.to_list() == ref and all("id" in r for r in ref)  # same rows, other columns kept
    for row, zi in zip(released.to_list(), z):  # z = 1 exactly where the released order is the true one
        assert (row["chosen"].startswith("good")) == bool(zi)
    # the swap rate is rho(eps) within 4 binomial sd
    rho, n = flip_rate(1.0), len(ROWS)
    assert abs((1 - z).mean() - rho) < 4 * math.sqrt(rho * (1 - rho) / n)
    _, z_other = rr_swap_dataset(ds, epsilon=1.0, seed=4)
    assert not np.array_equal(z, z_other)  # negative control: another seed, other draws
    same, z_inf = rr_swap_dataset(ds, epsilon=math.inf, seed=3)
    assert z_inf.all() and same.to_list() == ROWS  # eps = inf releases the pairs unchanged
    with pytest.raises(PrivateRobustAlignError, match="missing column"):
        rr_swap_dataset(ds.remove_columns("rejected"), epsilon=1.0)


def test_load_pairs_names_line_and_field(tmp_path):
    good = _write_jsonl(tmp_path / "p.jsonl", ROWS[:3])
    assert load_pairs(good) == ROWS[:3]
    (tmp_path / "p.json").write_text(json.dumps(ROWS[:2]))
    assert load_pairs(tmp_path / "p.json") == ROWS[:2]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(ROWS[0]) + "\n\n" + json.dumps({"prompt": "x", "chosen": 3, "rejected": "y"}) + "\n")
    with pytest.raises(PrivateRobustAlignError, match=r"line 3: field 'chosen' must be a string"):
        load_pairs(bad)
    (tmp_path / "broken.jsonl").write_text("{not json\n")
    with pytest.raises(PrivateRobustAlignError, match="not valid JSON"):
        load_pairs(tmp_path / "broken.jsonl")
    with pytest.raises(PrivateRobustAlignError, match="no such file"):
        load_pairs(tmp_path / "missing.jsonl")
    (tmp_path / "p.csv").write_text("prompt,chosen,rejected\n")
    with pytest.raises(PrivateRobustAlignError, match=".jsonl or .json"):
        load_pairs(tmp_path / "p.csv")


def test_privatize_pairs_cli(tmp_path, capsys):
    data = _write_jsonl(tmp_path / "pairs.jsonl", ROWS[:50])
    out = tmp_path / "run"
    assert main(["privatize-pairs", "--data", str(data), "--epsilon", "0.5", "--seed", "7", "--out", str(out),
                 "--quiet"]) == 0
    released = [json.loads(ln) for ln in (out / "released.jsonl").read_text().splitlines()]
    ref, _ = rr_swap_pairs(ROWS[:50], epsilon=0.5, rng=np.random.default_rng(7))
    assert released == ref
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["n"] == 50 and abs(cfg["flip_rate"] - flip_rate(0.5)) < 1e-12
    # bad input: one error line naming the field, exit 2, nothing written
    for argv, needle in ((["--data", str(data), "--epsilon", "0"], "--epsilon"),
                         (["--data", str(tmp_path / "nope.jsonl")], "no such file")):  # each option given once
        target = tmp_path / f"bad{len(needle)}"
        args = ["privatize-pairs", "--out", str(target), "--quiet", *argv]
        assert main(args) == 2
        assert needle in capsys.readouterr().err
        assert not target.exists()
