"""Bad inputs fail fast with clear errors; the CLI works."""

import pytest
import torch
from icml25.testing import python_module, run_cli
from string_pe import (
    Attention,
    CayleySTRING,
    CirculantSTRING,
    PointSetClassifier,
    PositionEncodingError,
    RoPEAxial,
    RoPEMixed,
    ViT,
)
from string_pe.cli import main
from string_pe.data import make_shapes_2d, make_shapes_3d

ALL = [RoPEAxial, RoPEMixed, CayleySTRING, CirculantSTRING]


@pytest.mark.parametrize("cls", ALL)
def test_bad_inputs(cls):
    with pytest.raises(PositionEncodingError, match="head_dim must be even"):
        cls(head_dim=7, coord_dim=2, num_heads=1)
    with pytest.raises(PositionEncodingError, match="coord_dim"):
        cls(head_dim=8, coord_dim=0, num_heads=1)
    m = cls(head_dim=8, coord_dim=2, num_heads=2)
    q, k, pos = torch.randn(1, 2, 3, 8), torch.randn(1, 2, 3, 8), torch.randn(1, 3, 2)
    with pytest.raises(PositionEncodingError, match="coord_dim=2"):
        m(q, k, torch.randn(1, 3, 3))
    with pytest.raises(PositionEncodingError, match="finite"):
        m(q, k, torch.tensor([[[0.0, float("nan")], [0, 0], [0, 0]]]))
    with pytest.raises(PositionEncodingError, match="finite"):
        m(q, k, torch.full((1, 3, 2), float("inf")))
    with pytest.raises(PositionEncodingError, match="same shape"):
        m(q, torch.randn(1, 2, 4, 8), pos)
    with pytest.raises(PositionEncodingError, match="head_dim=8"):
        m(torch.randn(1, 2, 3, 6), torch.randn(1, 2, 3, 6), pos)
    with pytest.raises(PositionEncodingError, match="num_heads=2"):
        m(torch.randn(1, 3, 3, 8), torch.randn(1, 3, 3, 8), pos)
    with pytest.raises(PositionEncodingError, match="floating dtype"):
        m(q.long(), k.long(), pos)
    with pytest.raises(PositionEncodingError, match="floating dtype"):
        m(q.to(torch.complex64), k.to(torch.complex64), pos)
    with pytest.raises(PositionEncodingError, match="floating dtype"):
        m(q, k, pos.long())
    with pytest.raises(PositionEncodingError, match="tokens"):
        m(q, k, torch.randn(1, 4, 2))
    with pytest.raises(PositionEncodingError, match="num_unrotated"):
        m(q, k, pos, num_unrotated=4)
    assert issubclass(PositionEncodingError, ValueError)


def test_bad_cayley_and_circulant_parameters():
    cay = CayleySTRING(head_dim=8, num_heads=2)
    with pytest.raises(PositionEncodingError, match="S must have shape"):
        cay.set_skew(torch.zeros(2, 6, 6))
    with pytest.raises(PositionEncodingError, match="skew-symmetric"):
        cay.set_skew(torch.ones(2, 8, 8))
    with pytest.raises(PositionEncodingError, match="sparsity"):
        CayleySTRING(head_dim=8, sparsity=0.0)
    with pytest.raises(PositionEncodingError, match="coeffs"):
        CirculantSTRING(head_dim=8, num_heads=2, coeffs=torch.zeros(2, 2, 6))
    with pytest.raises(PositionEncodingError, match="block_size"):
        CirculantSTRING(head_dim=8, block_size=3)
    with pytest.raises(PositionEncodingError, match="freqs"):
        RoPEMixed(head_dim=8, num_heads=2, freqs=torch.zeros(2, 3, 2))
    with pytest.raises(PositionEncodingError, match="init"):
        CirculantSTRING(head_dim=8, init="zeros")


def test_bad_model_inputs():
    with pytest.raises(PositionEncodingError, match="pe must be one of"):
        ViT(pe="alibi")
    with pytest.raises(PositionEncodingError, match="divisible"):
        Attention(dim=10, num_heads=3)
    vit3 = ViT(image_size=(4, 4), patch_size=2, dim=8, depth=1, num_heads=2, coord_dim=3)
    with pytest.raises(PositionEncodingError, match="depth is required"):
        vit3(torch.rand(1, 1, 4, 4))
    with pytest.raises(PositionEncodingError, match="images must have shape"):
        vit3(torch.rand(1, 3, 4, 4), torch.rand(1, 1, 4, 4))
    m = PointSetClassifier(feature_dim=2, coord_dim=2, num_classes=2, dim=8, depth=1, num_heads=2)
    with pytest.raises(PositionEncodingError, match="coord_dim=2"):
        m(torch.randn(1, 3, 2), torch.randn(1, 3, 3))
    with pytest.raises(PositionEncodingError, match="extent"):
        make_shapes_2d(4, extent=-1.0)


def test_generated_data_ground_truth():
    d2 = make_shapes_2d(40, extent=8.0, seed=0)
    assert d2.positions.min() >= -0.5 and d2.positions.max() <= 8.5
    assert torch.bincount(d2.labels).tolist() == [10, 10, 10, 10]
    ring = d2.positions[d2.labels == 0]
    for pts in ring.double():  # least-squares circle fit (x² + y² = 2ax + 2by + c): points of a ring lie on it
        A = torch.cat([2 * pts, torch.ones(len(pts), 1, dtype=pts.dtype)], dim=1)
        sol = torch.linalg.lstsq(A, (pts**2).sum(1, keepdim=True)).solution.squeeze(1)
        radius = (sol[2] + sol[0] ** 2 + sol[1] ** 2).sqrt()
        assert 0.5 * 0.6 * 8 - 0.2 < radius < 0.5 * 0.9 * 8 + 0.2
        assert ((pts - sol[:2]).norm(dim=1) - radius).abs().max() < 0.3
    line = d2.positions[d2.labels == 2].double()
    for pts in line:  # a segment: the second principal value is noise only
        assert torch.linalg.svdvals(pts - pts.mean(0))[1] < 0.5
    d3 = make_shapes_3d(400, seed=0)
    xy = [d3.positions[d3.labels == c][..., :2].reshape(-1, 2) for c in range(4)]
    for c in range(1, 4):  # the (x, y) footprints of all classes have the same distribution
        assert (xy[c].mean(0) - xy[0].mean(0)).abs().max() < 0.1
        assert (xy[c].std(0) - xy[0].std(0)).abs().max() < 0.1
    assert d3.positions[d3.labels == 0][..., 2].std(dim=1).max() < 0.2  # flat plane


def test_cli_help_and_errors(tmp_path):
    r = run_cli(main, ["--help"])
    assert r.returncode == 0 and "reproduce" in r.stdout and "train" in r.stdout
    r = run_cli(main, ["train", "--epochs", "0", "--out", str(tmp_path / "x")])
    assert r.returncode == 2 and "epochs" in r.stderr
    r = run_cli(main, ["evaluate", "--run", str(tmp_path / "missing")])
    assert r.returncode == 2 and "run" in r.stderr


def test_cli_train_evaluate_roundtrip(tmp_path):
    out = tmp_path / "run"
    r = run_cli(main, ["train", "--task", "shapes2d", "--pe", "circulant", "--epochs", "1", "--n-train", "32",
                       "--dim", "8", "--heads", "2", "--depth", "1", "--out", str(out), "--quiet"])
    assert r.returncode == 0, r.stderr
    assert (out / "model.safetensors").exists() and (out / "metrics.jsonl").exists()
    r = run_cli(main, ["evaluate", "--run", str(out), "--out", str(tmp_path / "ev")])
    assert r.returncode == 0, r.stderr
    import json

    res = json.loads(r.stdout.strip().splitlines()[0])
    assert res["test_accuracy"] == res["translated_accuracy"]  # rotary: exactly translation invariant
    assert json.loads((tmp_path / "ev" / "evaluation.json").read_text()) == res  # --out holds what was printed
    assert {"config.json", "env.json"} <= {p.name for p in (tmp_path / "ev").iterdir()}


@pytest.mark.slow
def test_python_m_help():
    r = python_module("string_pe", "--help")
    assert r.returncode == 0 and "reproduce" in r.stdout


def test_image_folder_loader(tmp_path):
    import numpy as np
    from PIL import Image
    from string_pe.data import load_image_folder

    with pytest.raises(FileNotFoundError, match="never downloads"):
        load_image_folder(tmp_path / "nope")
    for c in ("cat", "dog"):
        (tmp_path / c).mkdir()
        Image.fromarray((np.random.rand(10, 12, 3) * 255).astype("uint8")).save(tmp_path / c / "a.png")
    x, y, classes = load_image_folder(tmp_path, image_size=(8, 8))
    assert x.shape == (2, 3, 8, 8) and y.tolist() == [0, 1] and classes == ["cat", "dog"]
    assert 0 <= float(x.min()) and float(x.max()) <= 1


@pytest.mark.slow
def test_reproduce_smoke_writes_valid_results(tmp_path):
    import json

    from icml25.claims import validate_results
    from icml25.cli_helpers import run_reproduce
    from string_pe.registry import METHOD

    rep = run_reproduce(METHOD, quick=False, smoke=True, out=tmp_path / "r", seed=0, quiet=True)
    data = json.loads((tmp_path / "r" / "results.json").read_text())
    validate_results(data)
    assert len(rep.claims) >= 15
    for f in rep.figures:
        assert (tmp_path / "r" / f).exists()


def test_cli_make_images_train_on_image_folder_and_evaluate(tmp_path):
    import json

    data = tmp_path / "scenes"
    r = run_cli(main, ["make-images", "--n-train", "24", "--n-test", "8", "--out", str(data), "--quiet"])
    assert r.returncode == 0, r.stderr
    assert (data / "train" / "disk").is_dir() and (data / "test" / "cross").is_dir()
    for depth_input, pe in (("coords", "circulant"), ("channel", "cayley"), ("none", "ape")):
        out = tmp_path / f"run-{depth_input}"
        r = run_cli(main, ["train", "--data", str(data), "--depth-input", depth_input, "--pe", pe, "--epochs", "1",
                           "--dim", "8", "--heads", "2", "--depth", "1", "--out", str(out), "--quiet"])
        assert r.returncode == 0, r.stderr
        assert (out / "model.safetensors").exists()
        acc = json.loads((out / "eval.json").read_text())["test_accuracy"]
        r = run_cli(main, ["evaluate", "--run", str(out), "--data", str(data), "--out", str(out / "ev"), "--quiet"])
        assert r.returncode == 0, r.stderr
        assert json.loads((out / "ev" / "evaluation.json").read_text())["test_accuracy"] == pytest.approx(acc)


def test_cli_image_bad_inputs_write_nothing(tmp_path):
    out = tmp_path / "x"
    r = run_cli(main, ["train", "--data", str(tmp_path / "missing"), "--out", str(out)])
    assert r.returncode == 2 and "data" in r.stderr and not out.exists()
    (tmp_path / "d").mkdir()
    r = run_cli(main, ["train", "--data", str(tmp_path / "d"), "--depth-input", "coords", "--pe", "ape",
                       "--out", str(out)])
    assert r.returncode == 2 and "depth_input" in r.stderr and not out.exists()
    r = run_cli(main, ["train", "--data", str(tmp_path / "d"), "--patch-size", "5", "--out", str(out)])
    assert r.returncode == 2 and "patch_size" in r.stderr and not out.exists()
    r = run_cli(main, ["make-images", "--n-train", "0", "--out", str(out)])
    assert r.returncode == 2 and "n_train" in r.stderr and not out.exists()
    r = run_cli(main, ["train", "--data", str(tmp_path / "d"), "--attn", "linear", "--out", str(out)])
    assert r.returncode == 2 and "attn" in r.stderr and not out.exists()


def test_cli_linear_attention_and_relation_scenes(tmp_path):
    import json

    out = tmp_path / "lin"
    r = run_cli(main, ["train", "--task", "shapes2d", "--attn", "linear", "--pe", "circulant", "--epochs", "1",
                       "--n-train", "32", "--dim", "8", "--heads", "2", "--depth", "1", "--out", str(out), "--quiet"])
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "model_config.json").read_text())["attn"] == "linear"
    r = run_cli(main, ["evaluate", "--run", str(out), "--out", str(out / "ev")])
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[0])
    assert res["translated_accuracy"] == pytest.approx(res["test_accuracy"], abs=0.01)  # invariance survives loading
    data = tmp_path / "rel"
    r = run_cli(main, ["make-images", "--task", "relation", "--n-train", "8", "--n-test", "4", "--out", str(data),
                       "--quiet"])
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (data / "train").iterdir()) == ["above", "below", "left", "right"]


def test_evaluate_refuses_an_image_folder_with_other_classes(tmp_path):
    """`evaluate --data` checks the folder's class list against the one the run was trained on (issue 61)."""
    import shutil

    data = tmp_path / "scenes"
    assert run_cli(main, ["make-images", "--n-train", "12", "--n-test", "8", "--out", str(data), "--quiet"]).returncode == 0
    out = tmp_path / "run"
    r = run_cli(main, ["train", "--data", str(data), "--pe", "cayley", "--epochs", "1", "--dim", "8", "--heads", "2",
                       "--depth", "1", "--out", str(out), "--quiet"])
    assert r.returncode == 0, r.stderr
    other = tmp_path / "other"
    shutil.copytree(data / "test", other / "test")
    (other / "test" / "cross").rename(other / "test" / "star")  # same number of classes, one name differs
    r = run_cli(main, ["evaluate", "--run", str(out), "--data", str(other), "--out", str(tmp_path / "ev")])
    assert r.returncode == 2 and "class" in r.stderr and "star" in r.stderr and not (tmp_path / "ev").exists()
    shutil.rmtree(other / "test" / "star")  # a class missing
    r = run_cli(main, ["evaluate", "--run", str(out), "--data", str(other), "--out", str(tmp_path / "ev")])
    assert r.returncode == 2 and "class" in r.stderr


def test_streaming_image_dataset_matches_the_in_memory_loader(tmp_path):
    from string_pe.cli import _image_batches
    from string_pe.images import (
        image_folder_dataset,
        load_image_folder_rgbd,
        render_scenes,
        write_image_folder,
    )
    from string_pe.train import TrainSettings, fit, fit_batches

    x, d, y = render_scenes(10, size=16, seed=3)
    write_image_folder(tmp_path / "f", x, d, y)
    ds = image_folder_dataset(tmp_path / "f", depth=True)
    assert not any(isinstance(v, torch.Tensor) for v in vars(ds).values())  # only the file list is held
    xs, ds_, ys, classes = load_image_folder_rgbd(tmp_path / "f", depth=True)
    item, label = ds[0]
    assert item.shape == (4, 16, 16) and torch.equal(item[:3], xs[0]) and torch.equal(item[3:], ds_[0])
    assert label == ys[0] and classes == list(ds.classes)
    batches, steps = _image_batches(ds, "rgbd-channel", batch_size=4)
    got = list(batches())
    assert steps == 3 and [b[1].shape[0] for b in got] == [4, 4, 2]
    assert torch.equal(got[0][0][0], torch.cat([xs[:4] - 0.5, ds_[:4] - 0.5], dim=1))
    # fit() is fit_batches() over a seeded in-memory permutation: the same stream gives the same model
    s = TrainSettings(epochs=2, batch_size=4, lr=1e-2, seed=0)
    torch.manual_seed(0)
    m1 = ViT(image_size=(16, 16), patch_size=8, in_chans=3, num_classes=4, dim=8, depth=1, num_heads=2, pe="cayley")
    m2 = ViT(image_size=(16, 16), patch_size=8, in_chans=3, num_classes=4, dim=8, depth=1, num_heads=2, pe="cayley")
    m2.load_state_dict(m1.state_dict())
    l1 = fit(m1, (xs,), ys, s)
    g = torch.Generator().manual_seed(0)

    def stream(epoch):
        perm = torch.randperm(10, generator=g)
        for i in range(0, 10, 4):
            yield (xs[perm[i:i + 4]],), ys[perm[i:i + 4]]

    l2 = fit_batches(m2, stream, 3, s)
    assert l1 == l2
    for p1, p2 in zip(m1.parameters(), m2.parameters(), strict=True):
        assert torch.equal(p1, p2)
