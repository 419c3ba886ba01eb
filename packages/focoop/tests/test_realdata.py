"""``focoop run --data``: an ImageFolder tree and a negative-word file, end to end on a user's open_clip weights."""

import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("open_clip")
pytestmark = pytest.mark.filterwarnings("ignore:The image decoding:DeprecationWarning")  # torchvision.io in the fixture


def _write_tree(root, rng):
    import torch
    from torchvision.io import write_jpeg, write_png

    def chw(a):
        return torch.from_numpy(np.ascontiguousarray(a.transpose(2, 0, 1)))  # (H, W, 3) -> (3, H, W)

    for part, n in (("train", 6), ("test", 3)):
        for c, colour in (("red_ball", (220, 30, 30)), ("blue_box", (30, 30, 220))):
            d = root / part / c
            d.mkdir(parents=True)
            for i in range(n):
                a = np.clip(rng.normal(colour, 25, size=(20, 24, 3)), 0, 255).astype(np.uint8)
                write_png(chw(a), str(d / f"{i}.png"))
    for s in ("noise", "stripes"):
        d = root / "ood" / s
        d.mkdir(parents=True)
        for i in range(3):
            write_jpeg(chw(rng.integers(0, 255, size=(16, 16, 3), dtype=np.uint8)), str(d / f"{i}.jpg"))


def test_builtin_word_list_has_over_a_thousand_nouns():
    from focoop.realdata import read_words

    words = read_words()
    assert len(words) >= 1000 and len(set(words)) == len(words)
    assert all(w and not w.startswith("#") for w in words)


def test_run_on_an_image_folder_with_a_word_file(tmp_path):
    from focoop.cli import main
    from icml25.testing import tiny_open_clip_checkpoint

    ckpt = tiny_open_clip_checkpoint(tmp_path / "clip", "focoop-data-ViT")
    _write_tree(tmp_path / "imgs", np.random.default_rng(0))
    words = tmp_path / "words.txt"
    words.write_text("# my words\ntable\nriver\nball\nviolin\npepper\nladder\n\ncandle\n")
    out = tmp_path / "run"
    rc = main(["run", "--data", str(tmp_path / "imgs"), "--neg-words", str(words), "--clip-model", "focoop-data-ViT",
               "--clip-checkpoint", str(ckpt), "--clients", "2", "--num-shot", "2", "--n-ood", "3", "--rounds", "1",
               "--local-epochs", "1", "--out", str(out), "--quiet"])
    assert rc == 0
    res = json.loads((out / "results.json").read_text())
    assert res["data"] == str(tmp_path / "imgs") and len(res["per_client"]) == 2
    assert len(res["neg_words"]) == 3 and "ball" not in res["neg_words"]  # overlaps the class "red ball"
    assert set(res["neg_words"]) <= {"table", "river", "violin", "pepper", "ladder", "candle"}
    assert 0.0 <= res["summary"]["auroc"] <= 1.0


@pytest.mark.parametrize("case,argv,needle", [
    ("missing folder", ["--data", "{t}/nope"], "--data"),
    ("no ood folder", ["--data", "{t}/partial"], "ood/"),
    ("word file missing", ["--data", "{t}/imgs", "--neg-words", "{t}/none.txt"], "--neg-words"),
    ("domain split with data", ["--data", "{t}/imgs", "--split", "domain"], "--split"),
])
def test_bad_data_arguments(tmp_path, capsys, case, argv, needle):
    from focoop.cli import main

    _write_tree(tmp_path / "imgs", np.random.default_rng(1))
    (tmp_path / "partial" / "train" / "a").mkdir(parents=True)
    (tmp_path / "partial" / "test").mkdir(parents=True)
    rc = main(["run", *[a.format(t=tmp_path) for a in argv], "--out", str(tmp_path / "never")])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    assert rc == 2 and len(lines) == 1 and needle in lines[0], err
    assert not (tmp_path / "never").exists()


def test_bad_arguments_fail_before_torch_is_imported(tmp_path):
    code = ("import sys; from focoop.cli import main; rc = main(sys.argv[1:]); "
            "assert 'torch' not in sys.modules, 'torch was imported'; sys.exit(rc)")
    for args in (["--data", str(tmp_path / "nope")], ["--alpha", "0"]):
        res = subprocess.run([sys.executable, "-c", code, "run", *args, "--out", str(tmp_path / "never")],
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 2 and "error:" in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert not (tmp_path / "never").exists()
