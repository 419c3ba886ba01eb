"""Competence gates of ``lift reproduce``: the validation curve recorded during fine-tuning, the per-method gate
(plateaued + beats the prior model) and the retention gate (the source skill survives somewhere), and that a claim
depending on a failed gate is reported ``untested``."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from icml25.claims import Claim, Report
from icml25.experiment import Section
from icml25.testbeds.lm import build_tiny_lm, build_tokenizer, make_examples
from lift.config import BUDGETS
from lift.errors import LiftConfigError
from lift.finetune import answer_scores, finetune


def _train(eval_fn=None, eval_every=0):
    tok = build_tokenizer()
    model = build_tiny_lm(tok, hidden_size=32, num_layers=1, seed=0)
    ex = make_examples("add", 32, seed=0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    fn = (lambda: eval_fn(model, tok, ex)) if eval_fn else None
    return finetune(model, tok, ex, optimizer=opt, steps=5, batch_size=8, eval_fn=fn, eval_every=eval_every)


def test_validation_curve_is_measured_every_k_steps_and_after_the_last_without_changing_training():
    calls = []

    def score(model, tok, ex):
        calls.append(model.training)
        return answer_scores(model, tok, ex)["token"]

    with_curve = _train(score, eval_every=2)
    plain = _train()
    assert with_curve["curve"]["steps"] == [2, 4, 5]  # every 2 steps, and after the last
    assert len(with_curve["curve"]["values"]) == 3 and calls == [False, False, False]  # eval mode
    assert with_curve["losses"] == plain["losses"]  # evaluating does not change the training run
    assert plain["curve"] == {"steps": [], "values": []}
    with pytest.raises(LiftConfigError, match="eval_every"):
        _train(score, eval_every=0)


def _M(target, curves, source=None):
    return {"target": target, "curve": [{"steps": [25 * (i + 1) for i in range(len(c))], "values": c}
                                        for c in curves], "source": source or [0.0] * len(target)}


def test_method_gate_holds_when_plateaued_and_above_the_prior_and_fails_otherwise():
    from lift.reproduce import method_gates

    cfg = replace(BUDGETS.full, target_task="sub")
    flat = [0.2, 0.6, 0.8, 0.85, 0.86, 0.86, 0.86, 0.86]
    rising = [0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6]  # still learning when the budget stops it
    M = {"good": _M([0.85, 0.86, 0.84, 0.87, 0.85], [flat] * 5),
         "rising": _M([0.6, 0.61, 0.59, 0.6, 0.62], [rising] * 5),
         "weak": _M([0.04, 0.05, 0.03, 0.06, 0.05], [[0.0, 0.02, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05]] * 5)}
    sec = Section("x")
    names = method_gates(sec, M, cfg, target_before=0.0)
    v = {c.claim: c.verdict for c in sec.claims}
    assert v[names["good"]] == "holds"
    assert v[names["rising"]] == "fails"  # negative control: not plateaued, although far above the prior
    assert v[names["weak"]] == "fails"  # negative control: plateaued but within the margin of the prior model


def test_a_comparison_whose_gate_fails_is_untested_and_retention_needs_a_surviving_source_skill():
    from lift.reproduce import method_gates, retention_gate

    cfg = BUDGETS.full
    flat = [0.5, 0.8, 0.85, 0.86, 0.86, 0.86, 0.86, 0.86]
    erased = {"lift": _M([0.86] * 5, [flat] * 5, source=[0.0] * 5),
              "full_ft": _M([0.85, 0.86, 0.84, 0.87, 0.85], [flat] * 5, source=[0.0] * 5)}
    sec = Section("x")
    gates = method_gates(sec, erased, cfg, target_before=0.0)
    ret = retention_gate(sec, erased, cfg, source_before=1.0)
    claim = Claim.compare(claim="LIFT retains more", metric="m", ours=[0.1, 0.2, 0.1, 0.2, 0.1],
                          baseline=[0.0] * 5, baseline_name="full_ft", kind="paper", paired=True,
                          paper="p", gates=[gates["lift"], gates["full_ft"], ret])
    rep = Report(method="lift", claims=sec.claims + [claim])
    rep.resolve_gates()
    assert {c.claim: c.verdict for c in sec.claims}[ret] == "fails"
    assert claim.verdict == "untested" and claim.measured_verdict == "holds"  # the measured win is not reported
    # positive control: one method keeps the source skill on every seed -> the retention gate holds
    kept = {**erased, "lora": _M([0.85] * 5, [flat] * 5, source=[0.6, 0.7, 0.5, 0.6, 0.65])}
    sec2 = Section("y")
    assert {c.claim: c.verdict for c in sec2.claims} == {}
    retention_gate(sec2, kept, cfg, source_before=1.0)
    assert sec2.claims[0].verdict == "holds"
