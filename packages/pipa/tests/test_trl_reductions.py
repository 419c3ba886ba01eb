"""DPO and KTO as special cases of PIPA, checked against trl's own loss code (not a formula typed here), and the
PIPA-M guard's gradient.

trl 1.16 computes its losses inside ``DPOTrainer._compute_loss`` / ``KTOTrainer._compute_loss`` from the model's
per-token log-probs. We call those methods on a stand-in trainer whose "model" returns the log-probs we choose, so
trl's code computes its loss from exactly the log-probs that go into ours.
"""

import types
from collections import defaultdict

import pytest
import torch
from pipa.losses import kto_value_loss, pipa_loss, pipa_m_loss, pipa_n_paired_loss

D = torch.float64


class _Accel:
    device = torch.device("cpu")

    @staticmethod
    def gather_for_metrics(x):
        return x

    gather = gather_for_metrics


def _stub(**kw):
    base = dict(model=types.SimpleNamespace(training=True), accelerator=_Accel(), aux_loss_enabled=False,
                ld_alpha=None, precompute_ref_logps=True, use_weighting=False, label_smoothing=0.0,
                _metrics=defaultdict(lambda: defaultdict(list)), _total_train_tokens=0, _tp_size=1)
    base.update(kw)
    return types.SimpleNamespace(**base)


def _fake_model(table):
    """A "model" whose per-token log-prob of row ``input_ids[:, 0]`` is ``table[row]`` (one completion token)."""
    def model(**kw):
        lp = table[kw["input_ids"][:, 0]][:, None]
        z = torch.zeros_like(lp)
        return types.SimpleNamespace(log_probs=lp, entropy=z, mean_logits=z, is_top1=z.bool())
    return model


def trl_dpo_loss(cw, cr, rw, rr, *, beta, loss_type="sigmoid"):
    from trl import DPOTrainer

    B = cw.shape[0]
    ids = torch.stack([torch.arange(2 * B), torch.zeros(2 * B, dtype=torch.long)], 1)
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "completion_mask": torch.ones_like(ids),
              "ref_chosen_logps": cr, "ref_rejected_logps": rr}
    me = _stub(f_divergence_type="reverse_kl", loss_types=[loss_type], loss_weights=[1.0], beta=beta)
    return DPOTrainer._compute_loss(me, _fake_model(torch.cat([cw, rw])), inputs, False)


def trl_kto_loss(pol, ref, labels, kl_pol, kl_ref, *, beta, wd, wu):
    from trl import KTOTrainer

    n = pol.shape[0]
    ids = torch.stack([torch.arange(n), torch.zeros(n, dtype=torch.long)], 1)
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "completion_mask": torch.ones_like(ids),
              "KL_input_ids": ids + n, "KL_attention_mask": torch.ones_like(ids),
              "KL_completion_mask": torch.ones_like(ids), "label": labels.bool(), "ref_logps": ref,
              "ref_KL_logps": kl_ref}
    me = _stub(calculate_KL=True, loss_type="kto", beta=beta, desirable_weight=wd, undesirable_weight=wu)
    me._compute_kl_logps = types.MethodType(KTOTrainer._compute_kl_logps, me)
    return KTOTrainer._compute_loss(me, _fake_model(torch.cat([pol, kl_pol])), inputs, False)


def _logps(n, seed):
    g = torch.Generator().manual_seed(seed)
    return [-(torch.rand(n, generator=g, dtype=D) * 20 + 0.5) for _ in range(4)]


def test_one_positive_pipa_n_is_trls_dpo_loss_at_beta_1_for_any_value_head():
    cw, cr, rw, rr = _logps(16, 0)
    v = torch.randn(16, dtype=D) * 3
    ours = pipa_n_paired_loss(cw, cr, rw, rr, v)
    torch.testing.assert_close(ours, trl_dpo_loss(cw, cr, rw, rr, beta=1.0))
    # negative controls: trl at another beta, and the paper's default (independent) pairing, differ
    assert not torch.isclose(ours, trl_dpo_loss(cw, cr, rw, rr, beta=0.1))
    labels = torch.cat([torch.ones(16), torch.zeros(16)]).to(D)
    indep = pipa_loss("N", torch.cat([cw, rw]), torch.cat([cr, rr]), torch.cat([v, v]), labels)
    assert not torch.isclose(indep, ours, rtol=1e-3)


def test_ipo_baseline_is_trls_ipo_loss():
    cw, cr, rw, rr = _logps(8, 1)
    beta = 0.3
    # one completion token per row: trl's length normalisation divides by the completion mask's row sums (2 here)
    got = trl_dpo_loss(cw, cr, rw, rr, beta=beta, loss_type="ipo")
    want = ((((cw - cr) - (rw - rr)) / 2 - 1 / (2 * beta)) ** 2).mean()
    torch.testing.assert_close(got, want)
    assert not torch.isclose(got, trl_dpo_loss(cw, cr, rw, rr, beta=beta))


@pytest.mark.parametrize("beta,wd,wu", [(0.1, 1.0, 1.0), (1.0, 1.0, 0.5), (3.0, 1.33, 1.0)])
def test_kto_is_pipa_n_with_a_fixed_reference_point_and_the_one_minus_sigma_loss(beta, wd, wu):
    pol, ref, kl_pol, kl_ref = _logps(12, 2)
    kl_pol = kl_pol + 3.0  # make the batch KL estimate positive (trl clamps it at 0)
    labels = torch.tensor([1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1], dtype=D)
    z = (kl_pol - kl_ref).mean().clamp(min=0)
    assert z > 0
    want = trl_kto_loss(pol, ref, labels, kl_pol, kl_ref, beta=beta, wd=wd, wu=wu)
    got = kto_value_loss(pol, ref, labels, reference_point=z, beta=beta, desirable_weight=wd, undesirable_weight=wu)
    torch.testing.assert_close(got, want)
    # negative controls: without the reference point, or with PIPA-N's log-loss in place of "1 − σ", it differs
    assert not torch.isclose(kto_value_loss(pol, ref, labels, reference_point=0.0, beta=beta, desirable_weight=wd,
                                            undesirable_weight=wu), want)
    logloss = torch.nn.functional.binary_cross_entropy_with_logits(beta * (pol - ref - z), labels)
    assert not torch.isclose(logloss, want)


@pytest.mark.parametrize("label", [0.0, 1.0])
def test_pipa_m_barrier_pushes_infeasible_points_back_and_clamp_does_not(label):
    # s = log f + log g − log p⁰ = 0.5 > 0: f·g > p⁰, outside the marginal prior's feasible set
    ref = torch.tensor([-5.0], dtype=D)
    val = torch.tensor([2.0], dtype=D)
    s_target = 0.5
    pol0 = ref + s_target - torch.nn.functional.logsigmoid(val)
    lab = torch.tensor([label], dtype=D)
    grads = {}
    for guard in ("barrier", "clamp"):
        pol = pol0.clone().requires_grad_(True)
        v = val.clone().requires_grad_(True)
        loss = pipa_m_loss(pol, ref, v, lab, guard=guard)
        loss.backward()
        assert torch.isfinite(loss)
        grads[guard] = (pol.grad.item(), v.grad.item())
    # barrier: ∂L/∂log f > 0 and ∂L/∂v > 0, so gradient descent lowers f·g/p⁰ back towards the feasible set
    assert grads["barrier"][0] > 1.0 and grads["barrier"][1] > 0
    # negative control: the old clamp leaves the point with zero gradient (a constant loss)
    assert grads["clamp"] == (0.0, 0.0)


def test_pipa_m_barrier_is_exact_inside_and_continuous_at_the_boundary():
    ref, val = torch.zeros(3, dtype=D), torch.zeros(3, dtype=D) + 10.0
    lab = torch.zeros(3, dtype=D)
    eps = 1e-3
    shift = torch.nn.functional.logsigmoid(val)
    s = torch.tensor([-0.5, -eps - 1e-9, -eps + 1e-9], dtype=D)
    a = pipa_m_loss(s - shift, ref, val, lab, guard="barrier", eps=eps, reduction="none")
    b = pipa_m_loss(s - shift, ref, val, lab, guard="clamp", eps=eps, reduction="none")
    torch.testing.assert_close(a[:2], b[:2])  # identical inside the feasible set
    torch.testing.assert_close(a[1], a[2], atol=1e-5, rtol=0)  # no jump at −eps
