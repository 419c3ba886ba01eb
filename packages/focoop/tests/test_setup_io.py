"""A federation setup is saved as safetensors + JSON (no pickle) and reads back to exactly the same setup."""

import json

import pytest
import torch


def _same(a, b):
    from focoop.setup import CLIENT_FIELDS

    assert a.classnames == b.classnames and a.neg_words == b.neg_words and a.meta == b.meta
    assert a.logit_scale == b.logit_scale and a.width == b.width and a.n_ctx == b.n_ctx
    for name in ("zeroshot_text", "ood_x", "ood_kind", "neg_text"):
        torch.testing.assert_close(getattr(a, name), getattr(b, name), rtol=0, atol=0)
    for ca, cb in zip(a.clients, b.clients, strict=True):
        for f in CLIENT_FIELDS:
            torch.testing.assert_close(getattr(ca, f), getattr(cb, f), rtol=0, atol=0)
    for bank in ("id_bank", "ood_bank"):
        ba, bb = getattr(a, bank), getattr(b, bank)
        assert ba.texts == bb.texts and ba.n_ctx == bb.n_ctx
        for k in ("prefix", "suffix", "eot", "ids"):
            torch.testing.assert_close(getattr(ba, k), getattr(bb, k), rtol=0, atol=0)


def test_setup_round_trip_is_exact_and_the_tower_computes_the_same(syn_setup, tmp_path):
    from focoop.setup import FederationSetup

    path = syn_setup.save(tmp_path / "fed.safetensors")
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])  # a safetensors header: plain JSON, then raw tensor bytes
    assert "__metadata__" in header and b"\x80\x04" not in raw[:2]
    back = FederationSetup.load(path)
    _same(syn_setup, back)
    ctx = torch.randn(1, syn_setup.n_ctx, syn_setup.width, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(syn_setup.id_bank.encode(syn_setup.tower, ctx),
                                   back.id_bank.encode(back.tower, ctx), rtol=0, atol=1e-6)
    # negative control: a different context gives different features (the comparison can fail)
    with torch.no_grad():
        other = back.id_bank.encode(back.tower, torch.randn(ctx.shape, generator=torch.Generator().manual_seed(1)))
    assert not torch.allclose(other, syn_setup.id_bank.encode(syn_setup.tower, ctx), atol=1e-3)


def test_setup_load_refuses_foreign_files(syn_setup, tmp_path):
    from focoop.setup import FederationSetup
    from icml25.errors import UserInputError

    txt = tmp_path / "fed.safetensors"
    txt.write_text("not a setup")
    with pytest.raises(UserInputError, match="not a federation setup"):
        FederationSetup.load(txt)
    from icml25.checkpoint import save_tensors

    other = save_tensors(tmp_path / "plain.safetensors", {"x": torch.zeros(2)})
    with pytest.raises(UserInputError, match="not a federation setup"):
        FederationSetup.load(other)
    with pytest.raises(Exception, match="safetensors"):
        syn_setup.save(tmp_path / "fed.pt")


def test_flower_result_round_trip(tmp_path):
    from focoop.flower import load_result, save_result

    res = {"history": [{"round": 1, "acc": 0.5}], "round_seconds": [0.1], "per_client": {0: {"acc": 0.5}, 3: {}},
           "global_state": {"ctx": torch.arange(6.0).reshape(2, 3)}}
    back = load_result(save_result(res, tmp_path / "r.safetensors"))
    assert back["history"] == res["history"] and back["per_client"] == res["per_client"]
    torch.testing.assert_close(back["global_state"]["ctx"], res["global_state"]["ctx"], rtol=0, atol=0)
