"""focoop on a user's own open_clip checkpoint (BPE tokenizer, 77-token context, resized images), offline."""

import math

import pytest
import torch

pytest.importorskip("open_clip")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    from icml25.testing import tiny_open_clip_checkpoint

    return tiny_open_clip_checkpoint(tmp_path_factory.mktemp("focoop-realclip"), "focoop-test-ViT")


def test_federation_runs_on_a_real_open_clip_checkpoint(checkpoint, monkeypatch):
    import functools
    from dataclasses import replace

    import focoop.data
    from focoop.cli import _FED_DEFAULT, _FEDERATION_DEFAULT, RunOptions, _fed_config, _setup
    from focoop.engine import run_inprocess

    torch.set_num_threads(1)
    small = functools.partial(focoop.data.encode_benchmark, n_train_per_class=8, n_test_per_class=6, n_far=20,
                              n_near=20, corruptions=("noise",))
    monkeypatch.setattr(focoop.data, "encode_benchmark", small)
    opts = RunOptions(clip_model="focoop-test-ViT", clip_checkpoint=str(checkpoint),
                      federation=replace(_FEDERATION_DEFAULT, n_clients=2, num_shot=2, n_ood=4),
                      fed=replace(_FED_DEFAULT, rounds=1, local_epochs=1))
    setup = _setup(opts)
    assert setup.clients and len(setup.clients) == 2
    res = run_inprocess(setup, replace(_fed_config(opts), rounds=1))
    assert all(math.isfinite(h["loss"]) for h in res.history)


def test_clip_checkpoint_without_model_is_refused():
    from focoop.cli import RunOptions, _setup

    with pytest.raises(ValueError, match="clip_checkpoint needs clip_model"):
        _setup(RunOptions(clip_checkpoint="w.pt"))
