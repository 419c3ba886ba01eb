import json

import pytest

torch = pytest.importorskip("torch")

from icml25.checkpoint import CheckpointError, load_model, save_model  # noqa: E402
from icml25.seeding import seed_everything  # noqa: E402


def _build(cfg):
    return torch.nn.Sequential(torch.nn.Linear(cfg["d_in"], cfg["d_hidden"]), torch.nn.Tanh(), torch.nn.Linear(cfg["d_hidden"], 1))


def test_safetensors_roundtrip_bit_identical(tmp_path):
    seed_everything(0)
    cfg = {"d_in": 3, "d_hidden": 5}
    m = _build(cfg)
    save_model(tmp_path / "ck", m, cfg)
    m2 = load_model(tmp_path / "ck", _build)
    for (k, v), (k2, v2) in zip(m.state_dict().items(), m2.state_dict().items()):
        assert k == k2 and torch.equal(v, v2)
    assert json.loads((tmp_path / "ck" / "model_config.json").read_text()) == cfg


def test_mismatched_config_is_a_clear_error_and_nothing_loaded(tmp_path):
    cfg = {"d_in": 3, "d_hidden": 5}
    save_model(tmp_path / "ck", _build(cfg), cfg)
    (tmp_path / "ck" / "model_config.json").write_text(json.dumps({"d_in": 3, "d_hidden": 7}))
    with pytest.raises(CheckpointError, match="shape"):
        load_model(tmp_path / "ck", _build)


def test_corrupted_weights(tmp_path):
    cfg = {"d_in": 2, "d_hidden": 2}
    save_model(tmp_path / "ck", _build(cfg), cfg)
    (tmp_path / "ck" / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="corrupted"):
        load_model(tmp_path / "ck", _build)
    with pytest.raises(CheckpointError, match="does not exist"):
        load_model(tmp_path / "nowhere", _build)


def test_seed_everything_determinism_and_validation():
    seed_everything(3)
    a = torch.randn(4)
    seed_everything(3)
    assert torch.equal(a, torch.randn(4))
    with pytest.raises(ValueError, match="seed"):
        seed_everything(-1)
    with pytest.raises(ValueError, match="seed"):
        seed_everything(1.5)


def test_resolve_device():
    from icml25.device import resolve_device

    assert resolve_device("cpu").type == "cpu"
    assert resolve_device("auto").type in ("cpu", "cuda", "mps")
    with pytest.raises(ValueError, match="device"):
        resolve_device("tpu")


def test_plots_write_png(tmp_path):
    import numpy as np
    from icml25.plots import grouped_bars, learning_curves

    p = learning_curves({"a": np.random.rand(3, 10), "b": np.random.rand(10)}, tmp_path / "c.png")
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    p = grouped_bars({"g1": {"a": [1, 2], "b": 3}, "g2": {"a": 2}}, tmp_path / "b.png")
    assert p.stat().st_size > 1000
    with pytest.raises(ValueError, match="shape"):
        learning_curves({"a": np.zeros((2, 2, 2))}, tmp_path / "x.png")
