"""PIPA-M's guard keeps a continuous, non-zero gradient (the old clamp and the old linear barrier as negative
controls), and the plateau machinery trains ≥ 1 epoch, stops on patience, and restores the best weights."""

import math

import pytest
import torch
from pipa.losses import pipa_m_loss, pipa_m_paired_loss
from pipa.plateau import PlateauCallback, PlateauPlan, plan_for

D = torch.float64
EPS = 1e-3
# the bound this package states for the barrier: across the boundary s = −eps the gradient ∂L/∂s moves by at most
# JUMP_BOUND · (1 + |∂L/∂s|) between s = −eps − δ and s = −eps + δ (δ = 1e-9); the exact value is 0 (C¹ loss)
JUMP_BOUND = 1e-3
DELTA = 1e-9


def _grad_s(s: float, label: float, *, guard="barrier", old_linear=False) -> float:
    """∂L/∂s of the unpaired PIPA-M loss at s = log f + log σ(v) − log p⁰ (moved through log f)."""
    ref = torch.tensor([-7.0], dtype=D)
    val = torch.tensor([1.5], dtype=D)
    pol = (ref + s - torch.nn.functional.logsigmoid(val)).clone().requires_grad_(True)
    lab = torch.tensor([label], dtype=D)
    if old_linear:  # the previous barrier: s capped for both terms + a linear barrier of slope 1/expm1(eps)
        from pipa.losses import log1mexp

        st = pol + torch.nn.functional.logsigmoid(val) - ref
        s_in = st.clamp(max=-EPS)
        loss = (-(lab * s_in + (1 - lab) * log1mexp(s_in)) + torch.relu(st + EPS) / math.expm1(EPS)).sum()
    else:
        loss = pipa_m_loss(pol, ref, val, lab, guard=guard, eps=EPS)
    loss.backward()
    return pol.grad.item()


@pytest.mark.parametrize("label", [0.0, 1.0])
def test_gradient_non_zero_where_the_clamp_was_zero(label):
    for s in [-EPS / 2, 1e-4, 0.01, 0.5, 3.0]:
        g = _grad_s(s, label)
        assert math.isfinite(g) and g != 0, (s, g)
        if s > 0 or label == 0.0:
            assert g > 0, (s, g)  # pushes s (f·g/p⁰) back into the feasible set, for both labels
        assert _grad_s(s, label, guard="clamp") == 0.0  # negative control: the old clamp
    if label == 1.0:  # the positive term's minimum is at the edge of the feasible set, s = 0 (f g = p⁰)
        assert _grad_s(0.0, 1.0) == pytest.approx(0.0, abs=1e-12)
        assert _grad_s(-0.01, 1.0) == pytest.approx(-1.0)  # pure SFT inside


@pytest.mark.parametrize("label", [0.0, 1.0])
def test_no_gradient_jump_at_the_boundary(label):
    below, above = _grad_s(-EPS - DELTA, label), _grad_s(-EPS + DELTA, label)
    assert abs(above - below) <= JUMP_BOUND * (1 + abs(below)), (below, above)
    # the gradient inside is the exact one: −1 (c=1) or 1/expm1(−s) (c=0)
    want = -1.0 if label else 1.0 / math.expm1(EPS + DELTA)
    assert below == pytest.approx(want, rel=1e-6)
    if label == 1.0:  # negative control: the old linear barrier jumped from −1 to ≈ 1/expm1(eps) ≈ 1000
        old_b, old_a = _grad_s(-EPS - DELTA, 1.0, old_linear=True), _grad_s(-EPS + DELTA, 1.0, old_linear=True)
        assert abs(old_a - old_b) > 900


def test_paired_one_positive_m_loss_has_a_continuous_non_zero_gradient():
    ref = torch.tensor([-6.0], dtype=D)
    v = torch.tensor([0.3], dtype=D)
    rej = torch.tensor([-9.0], dtype=D)

    def grad(s, guard="barrier"):
        cw = (ref + s - torch.nn.functional.logsigmoid(v)).clone().requires_grad_(True)
        pipa_m_paired_loss(cw, ref, rej, ref, v, guard=guard, eps=EPS).backward()
        return cw.grad.item()

    for s in (0.01, 0.5, 2.0):
        assert grad(s) > 0 and grad(s, "clamp") == 0.0  # the barrier pushes the chosen s back; the clamp does not
    assert grad(-0.5) < 0  # inside: raise the chosen completion
    b, a = grad(-EPS - DELTA), grad(-EPS + DELTA)
    assert abs(a - b) <= JUMP_BOUND * (1 + abs(b))


def test_barrier_is_exact_inside_the_feasible_set():
    ref, val = torch.zeros(4, dtype=D), torch.full((4,), 2.0, dtype=D)
    s = torch.tensor([-3.0, -0.5, -0.01, -EPS - 1e-6], dtype=D)
    pol = s - torch.nn.functional.logsigmoid(val)
    for lab in (torch.zeros(4, dtype=D), torch.ones(4, dtype=D)):
        exact = -(lab * s + (1 - lab) * torch.log(-torch.expm1(s)))
        torch.testing.assert_close(pipa_m_loss(pol, ref, val, lab, reduction="none"), exact)


# ------------------------------------------------------------------------------------------------ plateau machinery
class _State:
    def __init__(self, step):
        self.global_step = step


class _Control:
    should_training_stop = False


def test_plan_covers_at_least_one_epoch():
    p = plan_for(107, batch_size=32, max_epochs=12, max_steps_cap=48)
    assert (p.min_steps, p.max_steps, p.eval_every) == (4, 48, 2)
    p = plan_for(1224, batch_size=32, max_epochs=12, max_steps_cap=20)
    assert p.min_steps == 39 and p.max_steps == 39  # the cap never cuts the first epoch
    with pytest.raises(ValueError):
        PlateauPlan(min_steps=5, max_steps=4, eval_every=1)


def test_callback_stops_on_patience_only_after_one_epoch_and_keeps_the_best_weights():
    plan = PlateauPlan(min_steps=6, max_steps=100, eval_every=1, patience=2, rel_delta=0.0)
    cb = PlateauCallback(plan)
    model = torch.nn.Linear(1, 1)
    values = [1.0, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]  # best at step 1, then worse
    stops = []
    for step, v in enumerate(values):
        with torch.no_grad():
            model.weight.fill_(float(step))
        c = _Control()
        cb.on_evaluate(None, _State(step), c, metrics={"eval_val_loss": v}, model=model)
        stops.append(c.should_training_stop)
    # patience is reached at step 3, but the first epoch (6 steps) must be completed first
    assert stops == [False, False, False, False, False, False, True]
    assert cb.best_step == 1 and cb.best == 0.5 and cb.best_state["weight"].item() == 1.0
    curve = cb.curve()
    assert curve.stopped_by == "plateau" and curve.values == values and not curve.higher_is_better
    with pytest.raises(FloatingPointError):
        cb.on_evaluate(None, _State(7), _Control(), metrics={"eval_val_loss": float("nan")}, model=model)


def test_fit_to_plateau_with_pipa_trainer_restores_the_best_checkpoint(tmp_path):
    import copy

    from icml25.testbeds import lm
    from pipa.data import noisy_samples, unpaired_rows
    from pipa.plateau import fit_to_plateau
    from pipa.trainer import PIPAConfig, PIPATrainer

    tok = lm.build_tokenizer()
    prior = lm.build_tiny_lm(tok, hidden_size=32, num_layers=1, num_heads=2, seed=0)
    prompts = [e.prompt for e in lm.make_examples("add_scratchpad", 12, seed=0, split="train")]
    rows = unpaired_rows(noisy_samples(prompts, k=2, seed=0))  # 24 rows
    val = unpaired_rows(noisy_samples(prompts[:4], k=2, seed=1))
    test = unpaired_rows(noisy_samples(prompts[4:8], k=2, seed=2))
    plan = plan_for(len(rows), batch_size=8, max_epochs=3, evals_per_epoch=3, patience=2)
    assert (plan.min_steps, plan.max_steps, plan.eval_every) == (3, 9, 1)
    args = PIPAConfig(output_dir=str(tmp_path), max_steps=plan.max_steps, learning_rate=3e-3,
                      per_device_train_batch_size=8, per_device_eval_batch_size=16, use_cpu=True, disable_tqdm=True,
                      logging_steps=100, seed=0, eval_strategy="steps", eval_steps=plan.eval_every, variant="N")
    tr = PIPATrainer(model=copy.deepcopy(prior), ref_model=copy.deepcopy(prior), args=args, train_dataset=rows,
                     eval_dataset={"val": val, "test": test}, processing_class=tok)
    info = fit_to_plateau(tr, plan)
    c = info["curve"]
    assert c.steps[0] == 0 and info["steps"] >= plan.min_steps and info["epochs"] >= 1
    assert info["val_prior"] == c.values[0] and info["val_best"] == min(c.values)
    # the restored weights are the best checkpoint's: re-evaluating gives the best validation loss
    again = tr.evaluate(eval_dataset=val, metric_key_prefix="again")["again_loss"]
    assert again == pytest.approx(info["val_best"], rel=1e-5)
    assert math.isfinite(info["test_prior"]) and math.isfinite(info["test_best"])
    assert info["seconds_per_step"] > 0 and info["loss_seconds_per_step"] > 0
