"""Tests of LCIA's mathematics (DEMA, grouping, metrics): each would fail if the method were wrong."""

import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from lcia.config import Config
from lcia.dema import DEMA, dema_alpha, dema_alpha_reason
from lcia.errors import LciaError
from lcia.grouping import InstructionRouter, tfidf_similarity
from lcia.metrics import average_accuracy, bwt, forgetting

# ------------------------------------------------------------------------------------------------ DEMA: α


def _t(values):
    return torch.tensor(values, dtype=torch.float64)


def test_alpha_closed_form_on_tensors_with_known_l1_norms():
    theta, ema = _t([1.0, 2.0, 3.0, 4.0]), _t([0.0, 2.0, 3.0, 0.0])  # a = 1 + 4 = 5
    grad, prev = _t([0.5, -0.5, 0.0, 0.0]), _t([-0.5, -1.5, 2.0, 0.0])  # b = 1, c = 1 + 1 + 2 = 4
    alpha, reason = dema_alpha_reason(theta, ema, grad, prev, fallback=0.01)
    assert reason == "formula"
    assert alpha == pytest.approx(2 * (1 + 1) / (5 * 4))  # 0.2
    # negative control: L2 norms instead of L1 would give a different number
    l2 = 2 * (1 + float(grad.norm())) / (float((theta - ema).norm()) * float((grad - prev).norm()))
    assert abs(alpha - l2) > 1e-3


@pytest.mark.parametrize("case, reason", [
    ("no_grad", "no_grad"), ("first", "first_step"), ("a_zero", "zero_product"), ("c_zero", "zero_product"),
    ("too_big", "out_of_range")])
def test_each_fallback(case, reason):
    theta, ema, grad, prev = _t([1.0, 1.0]), _t([0.0, 0.0]), _t([100.0, 0.0]), _t([0.0, 0.0])
    if case == "no_grad":
        grad = None
    elif case == "first":
        prev = None
    elif case == "a_zero":
        ema = theta.clone()
    elif case == "c_zero":
        prev = grad.clone()
    elif case == "too_big":  # a = 2, b = 0.01, c = 0.01 -> α = 2 · 1.01 / 0.02 ≫ 1
        grad, prev = _t([0.01, 0.0]), _t([0.0, 0.0])
    alpha, why = dema_alpha_reason(theta, ema, grad, prev, fallback=0.01)
    assert (alpha, why) == (0.01, reason)
    assert dema_alpha(theta, ema, grad, prev, fallback=0.05) == 0.05
    if case == "too_big":  # the non-official clip maps α ≥ 1 to full plasticity
        assert dema_alpha_reason(theta, ema, grad, prev, fallback=0.01, clip_alpha=True) == (1.0, "clipped")
    # control: the same tensors with a large gap use the formula
    assert dema_alpha_reason(_t([50.0, 50.0]), _t([0.0, 0.0]), _t([100.0, 0.0]), _t([0.0, 0.0]),
                             fallback=0.01)[1] == "formula"


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_fallback_alpha_outside_open_unit_interval_refused(bad):
    with pytest.raises(LciaError, match="fallback"):
        dema_alpha(_t([1.0]), _t([0.0]), None, None, fallback=bad)
    with pytest.raises(LciaError, match="fallback_alpha"):
        DEMA(torch.nn.Linear(2, 2), fallback_alpha=bad)


# ------------------------------------------------------------------------------------------- DEMA: updates


def _one_param(values):
    p = torch.nn.Parameter(torch.tensor(values, dtype=torch.float64))
    return p


def test_ema_stays_on_the_segment_and_alpha_one_gives_theta():
    torch.manual_seed(0)
    p = _one_param(torch.randn(20).tolist())
    d = DEMA(params=[("w", p)], fallback_alpha=0.01, ema_dtype="param")
    for step in range(30):
        old = d.ema["w"].double().clone()
        p.grad = torch.randn(20, dtype=torch.float64) * (step + 1)
        with torch.no_grad():
            p.add_(torch.randn(20, dtype=torch.float64) * 0.5)
        d.update()
        new, th = d.ema["w"].double(), p.detach()
        # θ*_t = (1-α)θ*_{t-1} + αθ_t with α in (0, 1]: the same α for every coordinate, within the box
        frac = (new - old) / (th - old)
        assert torch.allclose(frac, frac[0], atol=1e-5) and 0.0 < float(frac[0]) <= 1.0 + 1e-6
    assert d.counts["formula"] > 0  # the closed form was actually exercised
    # α = 1 (a fixed α just below 1 as the limit) puts θ* on θ; a tiny α leaves θ* where it was
    q = _one_param([0.0, 0.0])
    e = DEMA(params=[("q", q)], fixed_alpha=0.999999, ema_dtype="param")
    with torch.no_grad():
        q.copy_(torch.tensor([3.0, -4.0]))
    e.update()
    assert torch.allclose(e.ema["q"].double(), q.detach(), atol=1e-5)
    f = DEMA(params=[("q", q)], fixed_alpha=1e-9, ema_dtype="param")
    with torch.no_grad():
        q.copy_(torch.tensor([10.0, 10.0]))
    f.update()
    assert torch.allclose(f.ema["q"].double(), torch.tensor([3.0, -4.0], dtype=torch.float64), atol=1e-6)


def test_fixed_alpha_closed_form_0366():
    p = _one_param([2.0, -1.0, 0.5])
    d = DEMA(params=[("w", p)], fixed_alpha=0.01, ema_dtype="param")
    theta0 = p.detach().clone()
    with torch.no_grad():
        p.copy_(torch.tensor([1.0, 1.0, 1.0]))  # θ held fixed from now on
    for _ in range(100):
        d.update()
    ratio = (d.ema["w"].double() - p.detach()) / (theta0 - p.detach())
    assert torch.allclose(ratio, torch.full_like(ratio, 0.99 ** 100), atol=1e-6)
    assert abs(0.99 ** 100 - 0.366) < 1e-3
    # negative control: 99 updates would be visibly off
    assert abs(0.99 ** 99 - float(ratio[0])) > 1e-3


def test_zero_learning_rate_keeps_ema_equal_to_theta():
    torch.manual_seed(1)
    lin = torch.nn.Linear(8, 4)
    opt = torch.optim.SGD(lin.parameters(), lr=0.0)
    d = DEMA(lin)
    for _ in range(20):
        loss = lin(torch.randn(16, 8)).pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        d.update()
    for n, p in lin.named_parameters():
        torch.testing.assert_close(d.ema[n], p.detach(), rtol=0, atol=1e-6)  # float32 rounding only
    # control: with a positive learning rate θ* lags θ
    opt2 = torch.optim.SGD(lin.parameters(), lr=0.1)
    d2 = DEMA(lin)
    for _ in range(5):
        opt2.zero_grad()
        lin(torch.randn(16, 8)).pow(2).sum().backward()
        opt2.step()
        d2.update()
    assert (d2.ema["weight"] - lin.weight.detach()).abs().max() > 1e-4


def test_replace_writes_ema_into_trainable_and_leaves_frozen_bitwise():
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
    model[0].requires_grad_(False)
    frozen = {k: v.clone() for k, v in model[0].state_dict().items()}
    d = DEMA(model)
    assert set(d.ema) == {"1.weight", "1.bias"}
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.1)
    for _ in range(5):
        opt.zero_grad()
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
        d.update()
    assert not torch.equal(model[1].weight, d.ema["1.weight"])  # control: they differ before replace
    d.replace()
    assert torch.equal(model[1].weight.detach(), d.ema["1.weight"])
    assert torch.equal(model[1].bias.detach(), d.ema["1.bias"])
    for k, v in model[0].state_dict().items():
        assert torch.equal(v, frozen[k])
    # the extra memory is exactly two float32 copies of the trainable tensors
    assert d.extra_bytes == 2 * 4 * (4 * 2 + 2)


def test_non_finite_gradient_skips_with_a_warning():
    p = _one_param([1.0, 2.0])
    d = DEMA(params=[("w", p)])
    p.grad = torch.tensor([float("nan"), 1.0], dtype=torch.float64)
    before = d.ema["w"].clone()
    with pytest.warns(RuntimeWarning, match="non-finite"):
        d.update()
    assert torch.equal(d.ema["w"], before) and d.counts["nonfinite"] == 1


def test_one_update_per_optimizer_step_under_gradient_accumulation():
    from icml25.testbeds.lm import build_tiny_lm, build_tokenizer
    from lcia.continual import train_steps
    from lcia.data import make_task

    tok = build_tokenizer()
    model = build_tiny_lm(tok, hidden_size=16, num_layers=1, num_heads=2, seed=0)
    task = make_task("reverse", 16, seed=0, n_eval=2)
    d = DEMA(model)
    train_steps(model, tok, task.train, steps=3, lr=1e-3, batch_size=8, grad_accum=4, seed=0, dema=d)
    assert d.steps == 3  # not 12
    n_tensors = len(d.params)
    assert sum(d.counts.values()) == 3 * n_tensors
    assert d.counts["first_step"] == n_tensors  # the first step of every tensor has no previous gradient


def test_trainer_callback_updates_once_per_optimizer_step(tmp_path):
    from icml25.testbeds.lm import build_tiny_lm, build_tokenizer, encode_examples
    from lcia.data import make_task
    from lcia.dema import dema_callback
    from transformers import Trainer, TrainingArguments

    tok = build_tokenizer()
    model = build_tiny_lm(tok, hidden_size=16, num_layers=1, num_heads=2, seed=0)
    enc = encode_examples(tok, make_task("reverse", 16, seed=0, n_eval=2).train)
    rows = [{k: v[i] for k, v in enc.items()} for i in range(16)]
    d = DEMA(model)
    args = TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=4, gradient_accumulation_steps=2,
                             max_steps=2, max_grad_norm=0.0, report_to="none", save_strategy="no", use_cpu=True,
                             logging_strategy="no", disable_tqdm=True)
    Trainer(model=model, args=args, train_dataset=rows, callbacks=[dema_callback(d)]).train()
    assert d.steps == 2
    assert d.counts["no_grad"] == 0  # gradients still exist in on_optimizer_step
    name, p = d.params[0]
    assert torch.equal(p.detach(), d.ema[name].to(p.dtype))  # replaced at the end of training


# ------------------------------------------------------------------------------------------------ grouping


def test_tfidf_similarity_symmetric_bounded_identity_disjoint():
    a, b, c = "add the two numbers", "sum up the two numbers", "reverse the word"
    assert tfidf_similarity(a, b) == pytest.approx(tfidf_similarity(b, a))
    assert 0.0 < tfidf_similarity(a, b) < 1.0
    assert tfidf_similarity(a, a) == pytest.approx(1.0)
    assert tfidf_similarity(a, c) == 0.0
    # closed form for two 2-word bags sharing one word: 1 / (1 + idf_unique^2), idf_unique = ln(3/2) + 1
    assert tfidf_similarity(a, b) == pytest.approx(1.0 / (1.0 + (math.log(1.5) + 1.0) ** 2))


def test_tfidf_matches_sklearn_when_installed():
    text = pytest.importorskip("sklearn.feature_extraction.text")
    from lcia.stopwords import ENGLISH_STOP_WORDS

    assert ENGLISH_STOP_WORDS == text.ENGLISH_STOP_WORDS
    pairs = [("add the two numbers", "sum up the two numbers"), ("Sort the digits, then sort again", "sort digits"),
             ("count the letter", "count each letter twice"), ("take the difference", "reverse the word")]
    for x, y in pairs:
        m = text.TfidfVectorizer(stop_words="english").fit_transform([x, y])
        ref = float((m[0] @ m[1].T).toarray()[0, 0])
        assert tfidf_similarity(x, y) == pytest.approx(ref, abs=1e-12)


def test_grouping_rules_first_group_equal_tau_reuses_new_group_numbered_len_plus_one():
    s = tfidf_similarity("add the two numbers", "sum up the two numbers")
    r = InstructionRouter(tau=s)
    assert r.assign(["add the two numbers"]) == (1, "expand")  # the first task makes group 1
    assert r.assign(["reverse the word"]) == (2, "expand")
    assert r.assign(["sum up the two numbers"]) == (1, "retrain")  # sim == τ reuses (≥)
    assert r.groups[0].templates == ["add the two numbers", "sum up the two numbers"]
    assert r.assign(["take the difference"]) == (3, "expand")  # len(groups) + 1
    # control: τ just above the similarity expands instead
    r2 = InstructionRouter(tau=min(1.0, s + 1e-9))
    r2.assign(["add the two numbers"])
    assert r2.assign(["sum up the two numbers"]) == (2, "expand")
    # routing: best group if ≥ τ, else the latest group
    assert r.route("add the two numbers") == 1
    assert r.route("reverse the word") == 2
    assert r.route("count the letter") == 3  # similar to nothing: the latest


def test_default_stream_grouping_matches_the_designed_truth():
    from lcia.data import DEFAULT_STREAM, DESIGNED_DECISIONS, DESIGNED_GROUPS

    r = InstructionRouter(tau=0.3)
    got = [r.assign([tmpl]) for tmpl, _ in DEFAULT_STREAM.values()]
    assert [g for g, _ in got] == DESIGNED_GROUPS
    assert [d for _, d in got] == DESIGNED_DECISIONS
    # control: at τ = 0.9 (fixed-template setting) the paraphrase expands
    r9 = InstructionRouter(tau=0.9)
    assert [r9.assign([t])[1] for t, _ in DEFAULT_STREAM.values()].count("retrain") == 0


def test_router_saves_and_loads(tmp_path):
    r = InstructionRouter(tau=0.3)
    r.assign(["add the two numbers"])
    r.assign(["sum up the two numbers"])
    r.save(tmp_path / "codebook.json")
    r2 = InstructionRouter.load(tmp_path / "codebook.json")
    assert r2.to_dict() == r.to_dict() and r2.route("sum up the two numbers") == 1


@pytest.mark.parametrize("tau", [-0.1, 1.1, float("nan"), True])
def test_tau_outside_unit_interval_refused(tau):
    with pytest.raises(LciaError, match="tau"):
        InstructionRouter(tau=tau)


@pytest.mark.parametrize("templates", [[], [""], ["   "], ["the of and"], ["a b c"]])
def test_empty_or_stopword_only_templates_refused(templates):
    with pytest.raises(LciaError, match="template|instruction"):
        InstructionRouter(tau=0.3).assign(templates)


# ------------------------------------------------------------------------------------------------- metrics


def test_forgetting_and_bwt_on_a_hand_made_matrix():
    A = np.array([[0.9, np.nan, np.nan],
                  [0.7, 0.8, np.nan],
                  [0.5, 0.6, 1.0]])
    assert average_accuracy(A) == pytest.approx((0.5 + 0.6 + 1.0) / 3)
    # forgetting: task 0 best 0.9 -> 0.5 (0.4); task 1 best 0.8 -> 0.6 (0.2): mean 0.3
    assert forgetting(A) == pytest.approx(0.3)
    # BWT: (0.5 - 0.9 + 0.6 - 0.8) / 2 = -0.3
    assert bwt(A) == pytest.approx(-0.3)
    # forgetting uses the best earlier accuracy, BWT the just-learned one: they differ when accuracy rose first
    B = np.array([[0.5, np.nan, np.nan], [0.9, 0.8, np.nan], [0.6, 0.8, 0.7]])
    assert forgetting(B) == pytest.approx(0.15) and bwt(B) == pytest.approx(0.05)
    with pytest.raises(LciaError, match="square"):
        forgetting(np.zeros((2, 3)))


# ----------------------------------------------------------------------------------------- config, data, e2e


@pytest.mark.parametrize("field, value", [("tau", 1.5), ("fallback_alpha", 1.0), ("fixed_alpha", 0.0),
                                          ("steps", 0), ("lr", float("nan")), ("n_train", 0),
                                          ("alpha_grid", (0.01, 1.0)), ("fixed_lr_grid", (0.0,)),
                                          ("tune_tasks", -1), ("tune_extend", -1), ("tune_extend", 1.5),
                                          ("warmup", 1.0), ("schedule", "linear"), ("gate_share", 0.0),
                                          ("tune_on", ("bogus",)), ("tune_seeds", 0), ("gate_steps", 0),
                                          ("gate_loss_delta", 1.0), ("gate_loss_delta", -0.1)])
def test_bad_config_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        Config(**{field: value})


def test_tuning_grids_must_have_the_same_size():
    # fixed EMA: 2 lr × 2 α = 4 points, like the 4-point lr grid of every other method
    Config(lr_grid=(1e-3, 2e-3, 3e-3, 4e-3), fixed_lr_grid=(1e-3, 3e-3), alpha_grid=(0.01, 0.05))
    with pytest.raises(ValueError, match="as many points as lr_grid"):  # 1 × 2 != 4: not alike
        Config(lr_grid=(1e-3, 2e-3, 3e-3, 4e-3), fixed_lr_grid=(1e-3,), alpha_grid=(0.01, 0.05))


def test_fallback_counts_by_tensor_size():
    # a small tensor whose gap is tiny gets α ≥ 1 -> fallback; a large one with a large gap uses the closed form
    small = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    big = torch.nn.Parameter(torch.zeros(8, dtype=torch.float64))
    d = DEMA(params=[("s", small), ("b", big)], ema_dtype="param")
    for step in range(3):
        with torch.no_grad():
            small.add_(1e-3)
            big.add_(10.0)
        small.grad = torch.full_like(small, 0.1 * (step + 1))
        big.grad = torch.full_like(big, 0.1 * (step + 1))
        d.update()
    by = d.counts_by_numel()
    assert by[2] == {"first_step": 1, "out_of_range": 2}
    assert by[8] == {"first_step": 1, "formula": 2}
    assert len(d.formula_alphas) == 2 and all(0 < a < 1 for a in d.formula_alphas)
    assert d.fallback_share == pytest.approx(4 / 6)


def test_bad_streams_refused():
    from lcia.data import Task, check_stream, default_stream, make_task

    with pytest.raises(LciaError, match="empty"):
        check_stream([])
    with pytest.raises(LciaError, match="empty"):
        default_stream(10, seed=0, tasks=[])
    t = make_task("reverse", 4, seed=0, n_eval=2)
    with pytest.raises(LciaError, match="no training examples"):
        check_stream([Task(name="x", templates=["reverse"], test=t.test)])
    with pytest.raises(LciaError, match="no test examples"):
        check_stream([Task(name="x", templates=["reverse"], train=t.train)])
    with pytest.raises(LciaError, match="unique"):
        check_stream([t, t])
    with pytest.raises(LciaError, match="context"):
        check_stream([t], max_length=10)


def test_duplicate_adapter_names_refused():
    from icml25.testbeds.lm import build_tiny_lm, build_tokenizer
    from lcia.continual import ContinualLearner

    tok = build_tokenizer()
    base = build_tiny_lm(tok, hidden_size=16, num_layers=1, num_heads=2, seed=0)
    learner = ContinualLearner(base, tok, Config(), "lcia")
    learner._new_adapter("group1", 0)
    with pytest.raises(LciaError, match="unique"):
        learner._new_adapter("group1", 1)


def test_tiny_stream_runs_and_is_deterministic():
    from dataclasses import replace

    from icml25.testbeds.lm import build_tiny_lm, build_tokenizer
    from lcia.continual import run_stream
    from lcia.data import default_stream

    tok = build_tokenizer()
    base = build_tiny_lm(tok, hidden_size=16, num_layers=1, num_heads=2, seed=0)
    base_state = {k: v.clone() for k, v in base.state_dict().items()}
    cfg = replace(Config(), steps=2, batch_size=4, n_train=8, n_eval=4)
    tasks = default_stream(8, seed=0, n_eval=4, tasks=["reverse", "sort", "flip"])
    r1 = run_stream(base, tok, tasks, cfg, method="lcia", seed=3)
    r2 = run_stream(base, tok, tasks, cfg, method="lcia", seed=3)
    np.testing.assert_array_equal(r1["acc"], r2["acc"])
    assert [s.decision for s in r1["stages"]] == ["expand", "expand", "retrain"]
    assert r1["stages"][2].dema is not None and r1["stages"][0].dema is None  # DEMA only on retrain
    l1, l2 = r1["learner"], r2["learner"]
    for (n, p), (_, q) in zip(l1.model.named_parameters(), l2.model.named_parameters()):
        assert torch.equal(p, q), n
    for k, v in base.state_dict().items():  # the base model is never modified
        assert torch.equal(v, base_state[k])
    # control: another seed gives other adapter weights
    r3 = run_stream(base, tok, tasks, cfg, method="lcia", seed=4)
    diff = [not torch.equal(p, q) for (n, p), (_, q) in zip(l1.model.named_parameters(),
                                                             r3["learner"].model.named_parameters()) if "lora" in n]
    assert any(diff)


def test_readme_python_quickstart_runs():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert blocks, "README has no python block"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(blocks[0], "README.md", "exec"), {"__name__": "__readme__"})


def test_encoding_cache_returns_the_same_tensors_and_keys_on_the_text():
    from icml25.testbeds.lm import build_tokenizer, encode_examples
    from lcia.continual import _encoded
    from lcia.data import make_task

    tok = build_tokenizer()
    a = make_task("sort", 16, seed=0, n_eval=2).train
    b = make_task("reverse", 16, seed=0, n_eval=2).train
    ref = encode_examples(tok, list(a))
    first = _encoded(tok, a)
    assert _encoded(tok, list(a)) is first  # a copy of the same examples hits the cache
    for k, v in ref.items():
        assert torch.equal(first[k], v), k
    other = _encoded(tok, b)  # control: other examples are encoded anew, not served from the cache
    assert other is not first and not torch.equal(other["input_ids"][:, :4], first["input_ids"][:, :4])


def test_reproduce_tasks_and_budgets():
    from lcia.config import BUDGETS, LARGER_BUDGETS
    from lcia.reproduce import reproduce

    assert LARGER_BUDGETS.full.hidden_size > BUDGETS.full.hidden_size
    full = BUDGETS.full
    assert full.tune_seeds >= 2 and full.seeds >= 5 and full.schedule == "cosine"  # the protocol
    assert set(full.tune_on) <= set(full.tasks)
    for b in (full, LARGER_BUDGETS.full):  # the gate's long run is never shorter than the stream's budget
        assert b.gate_steps >= b.steps and b.tune_seeds >= 2
    # larger: every row on the same lr grid of 3 points (an interior optimum is possible), the fixed EMA at 0.99
    lg = LARGER_BUDGETS.full
    assert len(lg.lr_grid) == 3 and not lg.fixed_lr_grid and not lg.alpha_grid and lg.fixed_alpha == 0.01
    with pytest.raises(LciaError, match="task must be one of"):
        reproduce(quick=False, smoke=True, out=Path("unused"), seed=0, task="bogus")


def test_stream_job_in_a_forked_worker_matches_inline_and_depends_on_its_seed():
    from icml25.parallel import fork_map
    from lcia.config import BUDGETS
    from lcia.continual import tiny_base
    from lcia.reproduce import common
    from lcia.reproduce import jobs as J

    cfg = BUDGETS.smoke
    base, tok = tiny_base(cfg)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        common.JOB.update(base=base, tok=tok, stream_cfg=cfg, cfgs={m: cfg for m in common.BASE_LABEL})
        jobs = [(0, "lcia"), (1, "lcia"), (0, "oracle")]
        inline = [J.stream_job(j) for j in jobs]
        forked = fork_map(J.stream_job, jobs, 2)
    finally:
        torch.set_num_threads(threads)
        common.JOB.clear()
    for a, b in zip(inline[:2], forked[:2]):
        np.testing.assert_array_equal(a["acc"], b["acc"])
        assert a["alphas"] == b["alphas"] and a["by_numel"] == b["by_numel"] and a["decisions"] == b["decisions"]
        np.testing.assert_array_equal(a["terms"], b["terms"])
        assert a["decisions_ok"] == 1.0 and a["routing_acc"] == 1.0
    # the oracle at LCIA's lr trains only the retrained stage (flip, stage 2); the rest are LCIA's expand stages
    assert inline[2]["alone"] == forked[2]["alone"] and list(inline[2]["alone"]) == [2]
    final = J.oracle_final(inline[0], inline[2], 3)
    assert final[2] == inline[2]["alone"][2] and final[:2] == [inline[0]["acc"][0, 0], inline[0]["acc"][1, 1]]
    # control: the job depends on its seed
    assert inline[0]["alphas"] != inline[1]["alphas"] or not np.array_equal(inline[0]["terms"], inline[1]["terms"])
    from icml25.errors import UserInputError

    with pytest.raises(UserInputError, match="workers"):
        Config(workers=0)


def test_oracle_stage_is_lcias_expand_stage_and_runs_every_stage_at_another_lr():
    """The reuse behind the oracle reference: a fresh adapter trained on stage j alone (same init and batch seeds)
    ends with bitwise the tensors of LCIA's expand adapter for stage j; at another lr every stage is trained."""
    from dataclasses import replace as dc_replace

    from lcia.config import BUDGETS
    from lcia.continual import ContinualLearner, run_stream, tiny_base
    from lcia.data import default_stream, designed_truth
    from lcia.reproduce.jobs import oracle_tasks

    cfg = dc_replace(BUDGETS.smoke, steps=3)
    base, tok = tiny_base(cfg)
    tasks = default_stream(cfg.n_train, seed=0, n_eval=cfg.n_eval, tasks=cfg.tasks)
    r = run_stream(base, tok, tasks, cfg, method="lcia", seed=0)
    lcia = dict(r["learner"].model.named_parameters())
    alone = ContinualLearner(base, tok, cfg, "sequential", seed=0)
    alone.learn(tasks[1], 1)  # 'sort', stage 1: group 2, never retrained
    own = {n: p for n, p in alone.model.named_parameters() if p.requires_grad}
    assert own
    for n, p in own.items():
        torch.testing.assert_close(lcia[n.replace(".default.", ".group2.")], p, rtol=0, atol=0)
    # control: stage 0's adapter (group 1) was retrained on flip, so it no longer equals a fresh stage-0 run
    first = ContinualLearner(base, tok, cfg, "sequential", seed=0)
    first.learn(tasks[0], 0)
    assert any(not torch.equal(lcia[n.replace(".default.", ".group1.")], p)
               for n, p in first.model.named_parameters() if p.requires_grad)
    decisions = designed_truth(cfg.tasks)[1]
    assert oracle_tasks(cfg, cfg, decisions) == [2]
    assert oracle_tasks(cfg, dc_replace(cfg, lr=cfg.lr * 2), decisions) == [0, 1, 2]


# ------------------------------------------------------------------------------- competence gate: the long run


def _scripted_long_run(accs, losses, **kw):
    """:func:`lcia.continual.train_until_learned` on scripted validation values (one per evaluation, every 20
    steps); returns the curve, the losses and how many steps were trained."""
    from lcia.continual import train_until_learned

    done = []
    k = {"i": -1}

    def ev():
        k["i"] += 1
        return accs[k["i"]]

    curve, ls = train_until_learned(done.append, ev, lambda: losses[k["i"]], max_steps=20 * len(accs),
                                    eval_every=20, **kw)
    return curve, ls, len(done)


def test_long_run_flat_in_accuracy_but_falling_in_loss_waits_for_the_late_jump():
    # the wider model's reverse: exact match 0 for 160 steps while the loss falls 5 % per evaluation, then 1.0
    accs = [0.0] * 8 + [1.0] * 10
    losses = [2.0 * 0.95 ** i for i in range(18)]
    curve, ls, steps = _scripted_long_run(accs, losses, patience=4, min_delta=0.02, loss_delta=0.02)
    assert curve.best == 1.0 and curve.stopped_by == "plateau"
    # at the ceiling the loss no longer counts: stopped 4 evaluations after the jump (step 180), not at the budget
    assert steps == 20 * (9 + 4) and curve.steps[-1] == steps and ls == losses[:13]
    # negative control: the same accuracies with a flat loss stop after 4 flat evaluations, before the jump (the
    # exact-match plateau rule the gate used before)
    curve, _, steps = _scripted_long_run(accs, [2.0] * 18, patience=4, min_delta=0.02, loss_delta=0.02)
    assert steps == 20 * 5 and curve.best == 0.0 and curve.stopped_by == "plateau"
    # a loss falling by less than loss_delta per evaluation still counts once the fall adds up to loss_delta
    slow = [2.0 * 0.99 ** i for i in range(18)]
    curve, _, steps = _scripted_long_run(accs, slow, patience=4, min_delta=0.02, loss_delta=0.02)
    assert curve.best == 1.0
    curve, _, steps = _scripted_long_run(accs, slow, patience=4, min_delta=0.02, loss_delta=0.05)  # control
    assert steps == 20 * 5 and curve.best == 0.0


def test_long_run_never_stops_before_min_steps_and_ignores_the_loss_at_the_ceiling():
    flat = [0.0] * 18
    _, _, steps = _scripted_long_run(flat, [1.0] * 18, patience=4, min_steps=200)
    assert steps == 200  # flat everywhere: the earliest stop allowed (would be 100 without min_steps)
    _, _, steps = _scripted_long_run(flat, [1.0] * 18, patience=4, min_steps=0)
    assert steps == 100
    # accuracy at its ceiling from the start: the falling loss does not keep the run going
    curve, _, steps = _scripted_long_run([1.0] * 18, [0.5 * 0.9 ** i for i in range(18)], patience=4)
    assert steps == 100 and curve.stopped_by == "plateau"
    # budget: still progressing at the end
    curve, _, steps = _scripted_long_run([0.0] * 6, [1.0 * 0.9 ** i for i in range(6)], patience=4)
    assert steps == 120 and curve.stopped_by == "budget" and curve.ceiling == 1.0
    with pytest.raises(LciaError, match="diverged"):
        _scripted_long_run([0.0, float("nan")], [1.0, 1.0])


def test_validation_loss_is_the_answer_token_cross_entropy():
    from icml25.testbeds.lm import build_tiny_lm, build_tokenizer
    from lcia.continual import validation_loss
    from lcia.data import make_task

    tok = build_tokenizer()
    model = build_tiny_lm(tok, hidden_size=16, num_layers=1, num_heads=2, seed=0)
    exs = make_task("reverse", 8, seed=0, n_eval=4).val
    v = validation_loss(model, tok, exs)
    # by hand: log-softmax at the answer positions only (prompt and padding masked)
    from icml25.testbeds.lm import encode_examples

    d = encode_examples(tok, exs)
    with torch.no_grad():
        logits = model(input_ids=d["input_ids"], attention_mask=d["attention_mask"]).logits[:, :-1]
    lab = d["labels"][:, 1:]
    mask = lab != -100
    lp = torch.log_softmax(logits.float(), -1).gather(-1, lab.clamp(min=0)[..., None])[..., 0]
    assert v == pytest.approx(float(-(lp[mask]).mean()), rel=1e-5)
    assert validation_loss(model, tok, exs[:2]) != pytest.approx(v)  # control: other examples, another value
