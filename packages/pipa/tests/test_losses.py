"""The mathematics of the PIPA losses: closed forms, reductions (DPO, SFT, answer = one-step), gradients, stability."""

import math

import pytest
import torch
import torch.nn.functional as F
from pipa.losses import (
    PIPAError,
    dpo_sigmoid_loss,
    log1mexp,
    pipa_m_loss,
    pipa_m_paired_loss,
    pipa_m_step_loss,
    pipa_n_loss,
    pipa_n_paired_loss,
    pipa_n_step_loss,
    posterior_logit,
)

D = torch.float64


def _rand(n, seed=0, scale=5.0):
    g = torch.Generator().manual_seed(seed)
    pol = -scale * torch.rand(n, generator=g, dtype=D) - 0.1
    ref = -scale * torch.rand(n, generator=g, dtype=D) - 0.1
    val = torch.randn(n, generator=g, dtype=D)
    lab = (torch.rand(n, generator=g) < 0.5).to(D)
    return pol, ref, val, lab


def test_log1mexp_matches_naive():
    s = torch.linspace(-30, -1e-4, 500, dtype=D)
    torch.testing.assert_close(log1mexp(s), torch.log(1 - torch.exp(s)), rtol=1e-10, atol=1e-12)


def test_paired_pipa_n_equals_trl_dpo_sigmoid_beta1_for_any_value_head():
    cw, cr, rw, rr = (torch.randn(64, dtype=D) * 10 for _ in range(4))
    expected = -F.logsigmoid((cw - cr) - (rw - rr)).mean()
    for v in (None, torch.randn(64, dtype=D) * 100, torch.full((64,), -7.0, dtype=D)):
        torch.testing.assert_close(pipa_n_paired_loss(cw, cr, rw, rr, v), expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(dpo_sigmoid_loss(cw, cr, rw, rr, beta=1.0), expected)


def test_paired_pipa_n_matches_trl_dpo_trainer_formula():
    """The exact per-sequence expression trl 1.16's DPOTrainer uses for loss_type='sigmoid' at beta=1."""
    cw, cr, rw, rr = (torch.randn(16, dtype=D) * 3 for _ in range(4))
    beta = 1.0
    trl_loss = -F.logsigmoid(beta * ((cw - cr) - (rw - rr)))
    torch.testing.assert_close(pipa_n_paired_loss(cw, cr, rw, rr, reduction="none"), trl_loss)


def test_at_init_posterior_equals_value_head():
    """policy == prior  =>  p(c=1|x,y) = g(x) for both variants."""
    pol, _, val, _ = _rand(50)
    for variant in ("M", "N"):
        p1 = torch.sigmoid(posterior_logit(pol, pol.clone(), val, variant=variant))
        torch.testing.assert_close(p1, torch.sigmoid(val), rtol=1e-9, atol=1e-12)


def test_pipa_n_closed_form_direct_probabilities():
    f = torch.tensor([0.2, 0.01, 0.5], dtype=D)
    p0 = torch.tensor([0.3, 0.02, 0.1], dtype=D)
    g = torch.tensor([0.4, 0.7, 0.9], dtype=D)
    direct = f * g / (f * g + p0 * (1 - g))
    logit = posterior_logit(f.log(), p0.log(), torch.logit(g), variant="N")
    torch.testing.assert_close(torch.sigmoid(logit), direct)
    lab = torch.tensor([1.0, 0.0, 1.0], dtype=D)
    nll = -(lab * direct.log() + (1 - lab) * (1 - direct).log()).mean()
    torch.testing.assert_close(pipa_n_loss(f.log(), p0.log(), torch.logit(g), lab), nll)


def test_pipa_m_closed_form_direct_probabilities():
    f = torch.tensor([0.2, 0.01, 0.05], dtype=D)
    p0 = torch.tensor([0.3, 0.02, 0.1], dtype=D)
    g = torch.tensor([0.4, 0.7, 0.9], dtype=D)
    p1 = f * g / p0
    lab = torch.tensor([1.0, 0.0, 0.0], dtype=D)
    nll = -(lab * p1.log() + (1 - lab) * (1 - p1).log()).mean()
    torch.testing.assert_close(pipa_m_loss(f.log(), p0.log(), torch.logit(g), lab), nll)


def test_gradients_wrt_log_f():
    pol, ref, val, lab = _rand(40, seed=1)
    pol = pol - 3.0  # keep s < 0 for PIPA-M
    # PIPA-N: dL/dlogf = -(c - p1) per example (sum reduction)
    x = pol.clone().requires_grad_(True)
    pipa_n_loss(x, ref, val, lab, reduction="sum").backward()
    p1 = torch.sigmoid(pol - ref + val)
    torch.testing.assert_close(x.grad, -(lab - p1))
    # PIPA-M: -1 for positives, p1/(1-p1) for negatives
    x = pol.clone().requires_grad_(True)
    pipa_m_loss(x, ref, val, lab, reduction="sum").backward()
    s = pol + F.logsigmoid(val) - ref
    assert (s < 0).all()
    p1 = s.exp()
    torch.testing.assert_close(x.grad, torch.where(lab == 1, -torch.ones_like(p1), p1 / (1 - p1)))


def test_pipa_m_on_positives_is_sft():
    """On positives only, the PIPA-M gradient w.r.t. the LM parameters equals the SFT NLL gradient."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 7).double()
    x = torch.randn(5, 4, dtype=D)
    y = torch.randint(0, 7, (5,))
    ref = torch.full((5,), -0.5, dtype=D)  # large prior so that s < 0
    val = torch.randn(5, dtype=D)

    def logf():
        return torch.log_softmax(lin(x), -1).gather(1, y[:, None]).squeeze(1) - 5.0

    lin.zero_grad()
    pipa_m_loss(logf(), ref, val, torch.ones(5, dtype=D), reduction="sum").backward()
    g_pipa = [p.grad.clone() for p in lin.parameters()]
    lin.zero_grad()
    (-logf()).sum().backward()
    for a, b in zip(g_pipa, [p.grad for p in lin.parameters()]):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("variant", ["M", "N"])
def test_single_step_equals_answer_level(variant):
    pol, ref, val, lab = _rand(12, seed=2)
    pol = pol - 3.0
    answer = (pipa_m_loss if variant == "M" else pipa_n_loss)(pol, ref, val, lab)
    step = (pipa_m_step_loss if variant == "M" else pipa_n_step_loss)(pol[:, None], ref[:, None], val[:, None], lab[:, None])
    torch.testing.assert_close(step, answer)


def test_step_level_sums_steps_and_ignores_padding():
    pol, ref, val, lab = (t.reshape(4, 3) for t in _rand(12, seed=3))
    pol = pol - 3.0
    mask = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 0, 0], [1, 1, 1]], dtype=torch.bool)
    per = pipa_n_step_loss(pol, ref, val, lab, mask, reduction="none")
    manual = torch.stack([pipa_n_loss(pol[i][mask[i]], ref[i][mask[i]], val[i][mask[i]], lab[i][mask[i]], reduction="sum")
                          for i in range(4)])
    torch.testing.assert_close(per, manual)
    # garbage in the padded slots changes nothing
    pol2 = pol.clone()
    pol2[~mask] = 1e6
    torch.testing.assert_close(pipa_m_step_loss(pol2, ref, val, lab, mask), pipa_m_step_loss(pol, ref, val, lab, mask))


def test_finite_for_very_negative_logps_and_guard():
    pol = torch.tensor([-200.0, -500.0, -1.0], dtype=D, requires_grad=True)
    ref = torch.tensor([-300.0, -100.0, -400.0], dtype=D)
    val = torch.tensor([0.0, 30.0, -30.0], dtype=D)
    lab = torch.tensor([1.0, 0.0, 0.0], dtype=D)
    for fn in (pipa_m_loss, pipa_n_loss):
        loss = fn(pol, ref, val, lab)
        loss.backward()
        assert torch.isfinite(loss) and torch.isfinite(pol.grad).all()
        pol.grad = None
    with pytest.raises(PIPAError, match="f·g ≤ p⁰"):
        pipa_m_loss(pol, ref, val, lab, guard="raise")


def test_pipa_n_monotone_in_log_f():
    ref, val = torch.zeros(1, dtype=D), torch.zeros(1, dtype=D)
    grid = torch.linspace(-10, 10, 50, dtype=D)
    pos = torch.stack([pipa_n_loss(g[None], ref, val, torch.ones(1, dtype=D)) for g in grid])
    neg = torch.stack([pipa_n_loss(g[None], ref, val, torch.zeros(1, dtype=D)) for g in grid])
    assert (pos.diff() < 0).all() and (neg.diff() > 0).all()


def test_paired_m_reduces_to_unpaired_likelihood_ratio():
    pol, ref, val, _ = _rand(6, seed=4)
    pol = pol - 4
    rw, rr = pol.flip(0), ref.flip(0)
    lw = posterior_logit(pol, ref, val, variant="M")
    ll = posterior_logit(rw, rr, val, variant="M")
    pw, pl = torch.sigmoid(lw), torch.sigmoid(ll)
    direct = -(pw * (1 - pl) / (pw * (1 - pl) + (1 - pw) * pl)).log().mean()
    torch.testing.assert_close(pipa_m_paired_loss(pol, ref, rw, rr, val), direct)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(labels=torch.tensor([0.0, 2.0])), "labels must be 0 or 1"),
        (dict(ref=torch.zeros(3)), "differ in shape"),
        (dict(pol=torch.tensor([float("nan"), 0.0])), "non-finite"),
    ],
)
def test_bad_inputs(kw, match):
    pol = kw.get("pol", torch.tensor([-1.0, -2.0]))
    ref = kw.get("ref", torch.tensor([-1.0, -2.0]))
    lab = kw.get("labels", torch.tensor([0.0, 1.0]))
    with pytest.raises(PIPAError, match=match):
        pipa_n_loss(pol, ref, torch.zeros(2), lab)


def test_math_constant():
    assert math.isclose(float(log1mexp(torch.tensor(-math.log(2.0), dtype=D))), math.log(0.5))
