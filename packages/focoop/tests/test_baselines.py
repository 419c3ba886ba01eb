"""FedOTP's partial OT and logits, FedPGP's low-rank personalisation and contrastive loss, FOCoOp −OOD prompts."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from focoop.baselines import otp_logits, partial_ot_plan, pgp_contrastive_loss
from focoop.config import FedConfig


@pytest.mark.parametrize("mass", [0.5, 0.8])
def test_partial_plan_matches_pot_entropic_partial_wasserstein(mass):
    import ot

    rng = np.random.default_rng(0)
    for _ in range(3):
        cost = rng.uniform(0, 2, size=(6, 2))
        a, b = np.full(6, 1 / 6), np.full(2, 1 / 2)
        ref = ot.partial.entropic_partial_wasserstein(a, b, cost, reg=0.1, m=mass, numItermax=200, stopThr=1e-14)
        ours = partial_ot_plan(torch.as_tensor(cost), eps=0.1, mass=mass, n_iter=200).numpy()
        np.testing.assert_allclose(ours, ref, atol=1e-8)
        assert ours.sum() == pytest.approx(mass, abs=1e-10)
        assert (ours.sum(1) <= a + 1e-9).all() and (ours.sum(0) <= b + 1e-9).all()
        other = partial_ot_plan(torch.as_tensor(cost), eps=0.1, mass=mass / 2, n_iter=200).numpy()
        assert np.abs(other - ref).max() > 1e-3  # negative control: another mass, another plan


def test_full_mass_plan_is_balanced_sinkhorn():
    import ot

    cost = np.random.default_rng(1).uniform(0, 2, size=(5, 2))
    ref = ot.sinkhorn(np.full(5, 0.2), np.full(2, 0.5), cost, reg=0.1, numItermax=5000, stopThr=1e-14)
    ours = partial_ot_plan(torch.as_tensor(cost), eps=0.1, mass=1.0, n_iter=2000).numpy()
    np.testing.assert_allclose(ours, ref, atol=1e-6)


def test_otp_logits_reduce_to_coop_with_one_patch_and_equal_prompts():
    g = torch.Generator().manual_seed(0)
    f = F.normalize(torch.randn(4, 8, generator=g), dim=-1)
    t = F.normalize(torch.randn(3, 8, generator=g), dim=-1)
    same = torch.stack([t, t], dim=1)  # (C, 2, e)
    out = otp_logits(f[:, None, :], same, scale=10.0, mass=0.8)
    torch.testing.assert_close(out, 10.0 * f @ t.T, rtol=1e-5, atol=1e-5)
    other = torch.stack([t, F.normalize(torch.randn(3, 8, generator=g), dim=-1)], dim=1)
    assert not torch.allclose(otp_logits(f[:, None, :], other, scale=10.0), 10.0 * f @ t.T, atol=1e-3)


def test_otp_gradient_reaches_both_prompts_not_the_plan():
    g = torch.Generator().manual_seed(1)
    tok = F.normalize(torch.randn(2, 5, 8, generator=g), dim=-1)
    p = F.normalize(torch.randn(3, 2, 8, generator=g), dim=-1).requires_grad_(True)
    otp_logits(tok, p, scale=5.0).sum().backward()
    assert p.grad[:, 0].abs().sum() > 0 and p.grad[:, 1].abs().sum() > 0


def test_pgp_contrastive_loss_closed_form_and_gradient_sign():
    g = torch.Generator().manual_seed(2)
    tg, tc, tp = (F.normalize(torch.randn(4, 8, generator=g), dim=-1) for _ in range(3))
    pos = (tg * tc).sum(-1) / 0.5
    neg = (tg * tp).sum(-1) / 0.5
    ref = F.softplus(neg - pos).mean()
    torch.testing.assert_close(pgp_contrastive_loss(tg, tc, tp, temperature=0.5), ref)
    # moving the personalised features towards the anchor raises the loss (it pushes them apart)
    closer = F.normalize(tp + 2 * tg, dim=-1)
    assert pgp_contrastive_loss(tg, tc, closer) > pgp_contrastive_loss(tg, tc, tp)


def test_pgp_starts_at_the_global_prompt_and_personalises(syn_setup):
    from focoop.client import client_fit
    from focoop.prompts import init_global_state, init_local_state, personal_context, text_features

    cfg = FedConfig(method="fedpgp", n_clients=2, rounds=1, local_epochs=2, n_ood=4, lr=0.05)
    state = init_global_state(syn_setup, cfg)
    loc = init_local_state(syn_setup, cfg, state)
    assert torch.equal(personal_context(state["ctx_global"], loc["pgp_u"], loc["pgp_v"]), state["ctx_global"])
    t_p, _ = text_features(syn_setup, cfg, state | loc)
    t_g = syn_setup.id_bank.encode(syn_setup.tower, state["ctx_global"])
    torch.testing.assert_close(t_p, t_g)
    res = client_fit(syn_setup, cfg, cid=0, server_round=1, global_state=state, local_state=None, dro_state=None)
    assert set(res.upload) == {"ctx_global"} and set(res.local) == {"pgp_u", "pgp_v"}
    assert res.local["pgp_u"].abs().sum() > 0 and not torch.equal(res.local["pgp_v"], loc["pgp_v"])
    assert not torch.equal(res.upload["ctx_global"], state["ctx_global"])


@pytest.mark.parametrize("method", ["fedotp", "focoop_no_oodp"])
def test_new_methods_train_privately_and_deterministically(syn_setup, method):
    from focoop.engine import run_inprocess

    cfg = FedConfig(method=method, n_clients=2, rounds=2, local_epochs=1, n_ood=4, lr=0.05)
    a, b = run_inprocess(syn_setup, cfg), run_inprocess(syn_setup, cfg)
    assert set(a.global_state) == {"ctx_global"}
    assert all(set(s) == {"ctx_local"} for s in a.local_states)
    assert a.per_client == b.per_client and all(math.isfinite(h["loss"]) for h in a.history)
    assert not torch.equal(a.local_states[0]["ctx_local"], a.local_states[1]["ctx_local"])


def test_dro_without_ood_prompts_reduces_to_kl_dro_of_ce():
    from focoop.dro import DROState, bidro_loss, kl_dro_loss, update_multipliers

    g = torch.Generator().manual_seed(3)
    f = F.normalize(torch.randn(6, 8, generator=g), dim=-1)
    t_id = F.normalize(torch.randn(3, 8, generator=g), dim=-1)
    y = torch.tensor([0, 1, 2, 0, 1, 2])
    st = DROState(10.0, 10.0)
    empty = t_id.new_zeros(0, 8)
    loss, d_id, d_ood, _ = bidro_loss(f, y, t_id, empty, scale=10.0, state=st, n_iter=0)
    ref = kl_dro_loss(F.cross_entropy(10.0 * f @ t_id.T, y, reduction="none"), temperature=1.0)
    torch.testing.assert_close(loss, ref)
    assert d_ood.shape == (0, 8)
    loss4, d4, _, _ = bidro_loss(f, y, t_id, empty, scale=10.0, state=st, n_iter=4, adv_step=1e-2)
    assert math.isfinite(float(loss4)) and d4.abs().sum() > 0
    new = update_multipliers(st, d_id, d_ood)
    assert new.gamma_ood == pytest.approx(10.0 - 0.005 * 10.0)


@pytest.mark.parametrize("method", ["promptfl", "fedotp"])
def test_one_pass_scorings_equal_separate_evaluations(syn_setup, method):
    from focoop.engine import evaluate_result, evaluate_variants, run_inprocess

    cfg = FedConfig(method=method, n_clients=2, rounds=1, local_epochs=1, n_ood=4, lr=0.05)
    r = run_inprocess(syn_setup, cfg)
    variants = {"msp": cfg.with_(score="msp"), "energy": cfg.with_(score="energy"),
                "neg": cfg.with_(score="neglabel", neg_columns=True)}
    ev = evaluate_variants(syn_setup, cfg, r, variants)
    for k, v in variants.items():
        assert ev[k].per_client == evaluate_result(syn_setup, v, r).per_client
    assert ev["msp"].per_client != ev["neg"].per_client  # control: the scorings differ
