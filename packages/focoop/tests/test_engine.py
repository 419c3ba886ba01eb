import math

import pytest
import torch
from focoop.config import FedConfig
from focoop.engine import run_inprocess
from focoop.errors import FOCoOpConfigError


def _cfg(**kw):
    base = dict(method="focoop", n_clients=2, rounds=2, local_epochs=1, n_ood=6, lr=0.05)
    base.update(kw)
    return FedConfig(**base)


def test_inprocess_deterministic_and_finite(syn_setup):
    a = run_inprocess(syn_setup, _cfg())
    b = run_inprocess(syn_setup, _cfg())
    for k in a.global_state:
        assert torch.equal(a.global_state[k], b.global_state[k])
    assert a.per_client == b.per_client
    assert all(math.isfinite(h["loss"]) for h in a.history)
    c = run_inprocess(syn_setup, _cfg(seed=1))
    assert not torch.equal(a.global_state["ctx_global"], c.global_state["ctx_global"])


def test_flower_apps_match_inprocess(syn_setup):
    from focoop.flower import run_flower_local

    cfg = _cfg()
    a = run_inprocess(syn_setup, cfg)
    b = run_flower_local(syn_setup, cfg)
    for k in a.global_state:
        torch.testing.assert_close(a.global_state[k], b.global_state[k], atol=1e-6, rtol=0)
    for ra, rb in zip(a.per_client, b.per_client):
        assert ra.keys() == rb.keys()
        for k in ra:
            assert ra[k] == pytest.approx(rb[k], abs=1e-6)


def test_private_prompts_stay_local_and_baselines_run(syn_setup):
    from focoop.client import client_fit
    from focoop.prompts import init_global_state

    cfg = _cfg(method="promptfolio")
    state = init_global_state(syn_setup, cfg)
    res = client_fit(syn_setup, cfg, cid=0, server_round=1, global_state=state, local_state=None, dro_state=None)
    assert set(res.upload) == {"ctx_global"} and set(res.local) == {"ctx_local"}
    assert not torch.equal(res.upload["ctx_global"], state["ctx_global"])  # trained
    for m in ("zeroshot", "promptfl"):
        out = run_inprocess(syn_setup, _cfg(method=m, rounds=1))
        assert 0.0 <= out.summary()["acc"] <= 1.0


@pytest.mark.parametrize("kw,field", [({"frac": 1.5}, "frac"), ({"tau": 0.0}, "tau"),
                                      ({"reg_m": 0.0}, "reg_m"), ({"reg_m": float("inf")}, "reg_m"),
                                      ({"score": "maxlogit"}, "score"), ({"method": "fedavg"}, "method"),
                                      ({"n_ood": 0}, "n_ood"), ({"ema": -0.1}, "ema"), ({"rounds": 0}, "rounds")])
def test_bad_config(kw, field):
    with pytest.raises(FOCoOpConfigError, match=field):
        _cfg(**kw).validate()


@pytest.mark.parametrize("kw,field", [({"alpha": 0.0}, "alpha"), ({"alpha": float("nan")}, "alpha"),
                                      ({"n_clients": 0}, "n_clients"), ({"split": "iid"}, "split"),
                                      ({"classes_per_client": 0}, "classes_per_client")])
def test_bad_federation(kw, field):
    from focoop.config import Federation

    assert Federation().validate() == Federation()  # negative control: the defaults pass
    with pytest.raises(FOCoOpConfigError, match=field):
        Federation(**kw).validate()


def test_too_many_ood_prompts_and_overlapping_words(syn_setup):
    from focoop.neglabel import select_negative_words
    from focoop.setup import check_words

    with pytest.raises(ValueError, match="n_ood"):
        run_inprocess(syn_setup, _cfg(n_ood=1000))
    with pytest.raises(FOCoOpConfigError, match="overlap"):
        check_words(["table", "red circle"], ["circle", "square"])

    def enc(texts):
        g = torch.Generator().manual_seed(len(texts))
        return torch.randn(len(texts), 8, generator=g)

    with pytest.raises(FOCoOpConfigError, match="n_ood"):
        select_negative_words(enc, ["circle"], nouns=["table", "river"], k=3)
    words = select_negative_words(enc, ["circle", "square"], nouns=["table", "river", "cloud"],
                                  adjectives=["shiny"], k=2)
    assert len(words) == 2 and len(set(words)) == 2


def test_neg_columns_change_the_ood_scores_not_the_accuracy(syn_setup):
    from focoop.engine import evaluate_result
    from focoop.scores import ood_score

    cfg = _cfg(method="promptfolio", rounds=1)
    r = run_inprocess(syn_setup, cfg)
    again = evaluate_result(syn_setup, cfg, r)
    assert again.per_client == r.per_client  # re-evaluation reproduces the run's own numbers
    neg = evaluate_result(syn_setup, cfg.with_(neg_columns=True), r)
    for a, b in zip(r.per_client, neg.per_client):
        assert a["acc"] == b["acc"] and a["cacc"] == b["cacc"]  # argmax over the ID columns either way
    assert [a["fpr95"] for a in r.per_client] != [b["fpr95"] for b in neg.per_client]
    # zero-shot + NegLabel columns: MSP over the ID columns of the softmax over [ID | negative-word] columns
    zs = _cfg(method="zeroshot", neg_columns=True)
    out = run_inprocess(syn_setup, zs).per_client[0]
    cols = torch.cat([syn_setup.zeroshot_text, syn_setup.neg_text[:zs.n_ood]])
    s_id = ood_score(syn_setup.logit_scale * syn_setup.clients[0].test_x @ cols.T, n_id=syn_setup.n_classes)
    s_ood = ood_score(syn_setup.logit_scale * syn_setup.ood_x @ cols.T, n_id=syn_setup.n_classes)
    from focoop.metrics import fpr_at_95_tpr

    assert out["fpr95"] == pytest.approx(fpr_at_95_tpr(s_id.numpy(), s_ood.numpy()))
    with pytest.raises(FOCoOpConfigError, match="neg_columns"):
        _cfg(neg_columns=True).validate()  # FOCoOp has learned OOD prompts


def test_validation_accuracy_never_reads_the_test_split(syn_setup):
    import copy

    from focoop.engine import validation_accuracy

    cfg = _cfg(method="promptfl", rounds=1)
    r = run_inprocess(syn_setup, cfg)
    v = validation_accuracy(syn_setup, cfg, r)
    assert 0.0 <= v <= 1.0
    scrambled = copy.copy(syn_setup)
    scrambled.clients = [copy.copy(c) for c in syn_setup.clients]
    for c in scrambled.clients:
        c.test_x, c.test_c_x = torch.randn_like(c.test_x), torch.randn_like(c.test_c_x)
    scrambled.ood_x = torch.randn_like(syn_setup.ood_x)
    assert validation_accuracy(scrambled, cfg, r) == v


def test_device_copy_of_the_setup_gives_the_same_run(syn_setup):
    """``run_inprocess(device=...)`` trains on a copy of the setup (``FederationSetup.to``) and keeps the server side
    on the CPU; on the CPU the numbers equal the plain run's (the GPU smoke test runs the same path on CUDA)."""
    a = run_inprocess(syn_setup, _cfg())
    b = run_inprocess(syn_setup, _cfg(), device="cpu")
    assert a.summary() == b.summary()
    moved = syn_setup.to("cpu")
    assert moved is not syn_setup and moved.tower is not syn_setup.tower and moved.device.type == "cpu"
    assert all(v.device.type == "cpu" for v in b.global_state.values())


def test_adversary_perturbation_norm_is_logged_and_grows_with_the_step(syn_setup):
    """The history reports ‖δ‖ (mean row L2 norm): 4 normalised steps move it by at most 4·step (+ the 1e-4 start),
    so the default 1e-3 barely moves the unit-norm text features and the official 1.0 moves them far."""
    small = run_inprocess(syn_setup, _cfg(adv_step=1e-3))
    big = run_inprocess(syn_setup, _cfg(adv_step=1.0))
    for h in small.history:
        assert 0.0 < h["delta_id_norm"] <= 4 * 1e-3 + 1e-3 and 0.0 < h["delta_ood_norm"] <= 4 * 1e-3 + 1e-3
    assert all(h["delta_id_norm"] > 0.3 for h in big.history)  # ≥ 100x the default's perturbation
    no_oodp = run_inprocess(syn_setup, _cfg(method="focoop_no_oodp", adv_step=1.0))
    assert all(h["delta_ood_norm"] == 0.0 and h["delta_id_norm"] > 0.3 for h in no_oodp.history)
    assert "delta_id_norm" not in run_inprocess(syn_setup, _cfg(method="focoop_no_dro")).history[0]
