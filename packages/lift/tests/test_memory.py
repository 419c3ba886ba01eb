"""Measured peak memory (allocation trace, fresh-process RSS), graded retention metric, validation split."""

from __future__ import annotations

import pytest
import torch
from icml25.testbeds.lm import build_tiny_lm, build_tokenizer, make_examples
from lift.finetune import MethodConfig, answer_token_accuracy, finetune
from lift.memory import AllocationTrace, MemorySpec, measure_training_memory, rss_peak_subprocess
from lift.reproduce import is_validation_prompt, target_splits


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer()


def test_allocation_trace_sees_a_known_tensor():
    with AllocationTrace() as tr:
        a = torch.empty(512, 1024)  # 2 MiB
        b = torch.empty(256, 1024)  # 1 MiB, alive together with a
        del a, b
        c = torch.empty(128, 1024)  # 0.5 MiB after the frees: does not raise the peak
        del c
    assert 3 * 2**20 <= tr.peak_bytes < 3 * 2**20 + 2**16
    assert tr.net_bytes == 0


def test_measured_peak_orders_full_ft_above_lift(tok):
    base = build_tiny_lm(tok, hidden_size=32, num_layers=2, seed=0)
    ex = make_examples("mul", 32, seed=0, split="train")
    cfg = MethodConfig(budget_rank=1, filter_rank=2, update_interval=2)
    got = {name: measure_training_memory(name, base, tok, ex, cfg=cfg, steps=2, batch_size=4)
           for name in ("full_ft", "lift")}
    counted = {n: sum(g["live"].values()) - g["live"]["total"] for n, g in got.items()}  # params + grads + state
    assert counted["full_ft"] > 1.5 * counted["lift"] > 0  # what the exact counts say
    assert got["full_ft"]["peak_bytes"] > got["lift"]["peak_bytes"]  # what the measurement says
    # params + grads + moments are alive together at the optimizer step: the measured peak covers them
    for n in got:
        assert got[n]["peak_bytes"] >= counted[n]


def test_sparse_gradients_keep_k_floats_and_lower_the_measured_peak(tok):
    from lift.optim import select_linear_weights

    # batch 1: the activations are small next to the dense gradients, which then decide the peak of the dense path
    base = build_tiny_lm(tok, hidden_size=128, num_layers=1, seed=0)
    ex = make_examples("mul", 16, seed=0, split="train")
    got = {sg: measure_training_memory("lift", base, tok, ex, steps=2, batch_size=1,
                                       cfg=MethodConfig(budget_rank=1, filter_rank=2, update_interval=2,
                                                        sparse_grads=sg)) for sg in (True, False)}
    shapes = [tuple(w.shape) for _, w in select_linear_weights(base)]
    k = sum(min(m + n, m * n) for m, n in shapes)
    dense = 4 * sum(m * n for m, n in shapes)
    assert got[True]["live"]["grads"] == 4 * k  # the (k,) buffers only
    assert got[False]["live"]["grads"] == dense  # negative control: the official path keeps every dense gradient
    assert got[False]["peak_bytes"] - got[True]["peak_bytes"] >= 0.5 * dense


@pytest.mark.slow
def test_forked_rss_peaks_order_full_ft_above_lift_above_lora_and_sparse_below_dense():
    from lift.memory import rss_peak_batch

    specs = [MemorySpec(method=m, hidden_size=256, num_layers=2, sparse_grads=sg)
             for m, sg in (("full_ft", True), ("lift", False), ("lift", True), ("lora", True))]
    full, dense, sparse, lora = (r["peak_increase_bytes"] for r in rss_peak_batch(specs))
    assert full > dense > sparse > 0 and lora > 0
    assert dense - sparse > 0.5 * 4 * 2 * (4 * 256 * 256 + 3 * 256 * 1024)  # about the dense gradients' bytes


@pytest.mark.slow
def test_rss_peak_in_a_fresh_process_orders_full_ft_above_lift():
    got = {m: rss_peak_subprocess(MemorySpec(method=m, hidden_size=256, num_layers=2))["peak_increase_bytes"]
           for m in ("full_ft", "lift")}
    assert got["full_ft"] > got["lift"] > 0


def test_answer_token_accuracy_is_batch_invariant_and_perfect_on_memorised_data(tok):
    model = build_tiny_lm(tok, hidden_size=32, num_layers=1, seed=0)
    ex = make_examples("add", 20, seed=3)
    a = answer_token_accuracy(model, tok, ex, batch_size=256)
    b = answer_token_accuracy(model, tok, ex, batch_size=3)  # different padding per batch
    assert a == pytest.approx(b, abs=1e-12) and 0.0 <= a <= 1.0
    # an untrained model is near chance; one example memorised gets every answer token right
    one = ex[:1] * 8
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    finetune(model, tok, one, optimizer=opt, steps=60, batch_size=8)
    assert answer_token_accuracy(model, tok, ex[:1]) == 1.0


def test_validation_split_is_disjoint_from_training_and_test():
    train, val = target_splits(400, 50, seed=0)
    assert len(train) == 400 and 0 < len(val) <= 50
    tr = {e.prompt for e in train}
    assert all(is_validation_prompt(e.prompt) for e in val) and not tr & {e.prompt for e in val}
    test = {e.prompt for e in make_examples("mul", 300, seed=1, split="test")}
    assert not test & ({e.prompt for e in val} | tr)


def test_lr_selection_is_alike_picks_the_best_validation_accuracy_skips_diverged_and_flags_edges(monkeypatch):
    from dataclasses import replace

    import lift.reproduce.runs as R
    from lift.config import BUDGETS
    from torch import nn

    def fake_run(method, params, seed, cfg, env, *, with_val, progress, filter_rank=None):
        lr = params["lr"]
        if method == "lift" and lr > 0.02:
            raise FloatingPointError("diverged")
        if method == "lift":
            score = {1e-3: 0.2, 3e-3: 0.5, 9e-3: 0.4}.get(round(lr, 6), 0.1)
            score += 0.01 * (params["update_interval"] == 10)
        else:  # lora: better and better up the lr grid, worse beyond it; alpha 4 r_b better than 2 r_b
            score = {1e-3: 0.1, 3e-3: 0.2, 9e-3: 0.3, 2.7e-2: 0.4}.get(round(lr, 6), 0.35)
            score += 0.01 * (params["lora_alpha"] == 8.0)
        return {"lr": lr, "params": dict(params), "seed": seed, "target": score, "val": score, "val_token": 0.0,
                "source": 0.0, "source_token": 0.0, "retention": 0.0, "retention_token": 0.0, "state_floats": 2,
                "trainable": 1, "bytes": 1, "step_s": 0.1, "losses": [1.0], "mask_updates": 0,
                "filter_rank": filter_rank or cfg.filter_rank, "curve": {"steps": [], "values": []}}

    monkeypatch.setattr(R, "_one_run", fake_run)
    monkeypatch.setattr(R, "_setup", lambda cfg: {"base": nn.Sequential(nn.Linear(4, 3)), "tok": None, "evals": {},
                                                  "befores": {"source": 1.0, "source_token": 1.0, "target": 0.0,
                                                              "source_generated": 1.0}})
    monkeypatch.setattr(R, "LR_CENTRES", {"lift": 3e-3, "lora": 3e-3})
    cfg = replace(BUDGETS.smoke, methods=("lift", "lora"), lr_grid=(1 / 3, 1.0, 3.0, 9.0), extend=1,
                  update_intervals=(10, 30), lora_alphas=(1.0, 2.0), budget_rank=4, workers=1)
    res = R.run_methods(cfg, [0, 1], progress=False)
    assert res["methods"]["lift"]["lr"] == [3e-3, 3e-3]  # chosen on seed 0, reused for seed 1
    assert res["methods"]["lift"]["params"][1] == {"lr": 3e-3, "update_interval": 10}
    assert res["methods"]["lift"]["seed"] == [0, 1]
    assert {(d["method"], d["lr"]) for d in res["diverged"]} == {("lift", 3e-3 * 9.0)}
    sel = res["selections"]
    assert sel["lift"].grid_size == sel["lora"].grid_size == 8  # 4 lr x 2 second-knob values each
    # lift: interior lr; its interval 10 was the lowest of 2, so the grid was extended once below it (10/3 scores
    # lower), which makes 10 interior
    assert sel["lift"].at_edge == [] and min(sel["lift"].grid["update_interval"]) == pytest.approx(10 / 3)
    # lora's best lr is the top of its grid: extended once (8.1e-2 scores lower); alpha at its top: extended to 16
    assert res["methods"]["lora"]["lr"][0] == pytest.approx(2.7e-2)
    assert res["methods"]["lora"]["params"][0]["lora_alpha"] == 8.0
    lrs = sorted({r["lr"] for r in res["grid"]["lora"]})
    assert lrs == pytest.approx([1e-3, 3e-3, 9e-3, 2.7e-2, 8.1e-2])
    assert sorted({r["params"]["lora_alpha"] for r in res["grid"]["lora"]}) == [4.0, 8.0, 16.0]
    assert sel["lora"].at_edge == [] and "+2 from extending" in sel["lora"].note()  # extensions scored lower


def test_lift_filter_rank_is_chosen_on_validation_not_on_test(monkeypatch):
    """r_f of the main LIFT row: the best *validation* score among cfg.filter_ranks below min(m, n), at LIFT's
    tuned lr and interval; every seed then runs at it. Negative controls: r_f=1 has the best *test* score and is
    not chosen; without candidates the preset r_f stays."""
    from dataclasses import replace

    import lift.reproduce.runs as R
    from lift.config import BUDGETS
    from torch import nn

    val_of = {1: 0.3, 2: 0.6, 4: 0.5, 8: 0.4}
    test_of = {1: 0.9, 2: 0.2, 4: 0.5, 8: 0.4}

    def fake_run(method, params, seed, cfg, env, *, with_val, progress, filter_rank=None):
        rf = filter_rank or cfg.filter_rank
        off = 0.0 if round(params["lr"], 6) == 3e-3 else 0.1  # an interior lr optimum
        val, test = (val_of[rf], test_of[rf]) if method == "lift" else (0.5, 0.5)
        return {"lr": params["lr"], "params": dict(params), "seed": seed, "target": test - off, "val": val - off,
                "val_token": 0.0, "source": 0.0, "source_token": 0.0, "retention": 0.0, "retention_token": 0.0,
                "state_floats": 2, "trainable": 1, "bytes": 1, "step_s": 0.1, "losses": [1.0], "mask_updates": 0,
                "filter_rank": rf, "curve": {"steps": [], "values": []}}

    calls = []
    monkeypatch.setattr(R, "_one_run", lambda *a, **k: calls.append(k.get("filter_rank")) or fake_run(*a, **k))
    monkeypatch.setattr(R, "_setup", lambda cfg: {"base": nn.Sequential(nn.Linear(16, 16)), "tok": None, "evals": {},
                                                  "befores": {"source": 1.0, "source_token": 1.0, "target": 0.0,
                                                              "source_generated": 1.0}})
    monkeypatch.setattr(R, "LR_CENTRES", {"lift": 3e-3, "lora": 3e-3, "lift_smallest": 3e-3})
    cfg = replace(BUDGETS.smoke, methods=("lift", "lora", "lift_smallest"), lr_grid=(1 / 3, 1.0, 3.0), extend=0,
                  update_intervals=(10, 30), lora_alphas=(1.0, 2.0), filter_rank=8, filter_ranks=(1, 2, 4, 16),
                  workers=1)
    res = R.run_methods(cfg, [0, 1], progress=False)
    assert res["filter_rank"] == 2  # best validation, although r_f=1 has the best test score
    assert sorted(x["filter_rank"] for x in res["rf_select"]) == [1, 2, 4, 8]  # 16 = min(m, n): full rank, left out
    assert res["methods"]["lift"]["filter_rank"] == [2, 2]  # every seed at the chosen r_f
    assert res["methods"]["lift"]["target"] == pytest.approx([0.2, 0.2])
    assert res["methods"]["lift"]["params"][0] == res["selections"]["lift"].params  # lr, T tuned at the preset
    assert all(r["filter_rank"] == 8 for r in res["grid"]["lift"])  # the tuning grid stays at the preset r_f
    assert 16 not in calls
    # the released selection (LIFT-smallest) gets the same r_f choice, tuned alike (its own validation scores)
    assert res["filter_ranks"] == {"lift": 2, "lift_smallest": 8}  # fake: every r_f scores 0.5 -> the preset
    assert res["methods"]["lift_smallest"]["filter_rank"] == [8, 8]
    assert res["methods"]["lora"]["filter_rank"] == [8, 8]  # LoRA has no r_f: the preset passes through
    # negative control: no candidates -> the preset r_f, no selection table
    res0 = R.run_methods(replace(cfg, filter_ranks=()), [0, 1], progress=False)
    assert res0["filter_rank"] == 8 and "rf_select" not in res0
    assert res0["methods"]["lift"]["target"] == pytest.approx([0.4, 0.4])


def test_tuning_grids_have_the_same_size_for_every_method():
    import lift.reproduce.runs as R
    from icml25.tuning import grid_size
    from lift.config import BUDGETS, TASK_BUDGETS

    for budgets in TASK_BUDGETS.values():
        for cfg in (budgets.full, budgets.quick, budgets.smoke):
            assert len({grid_size(R.tuning_grid(m, cfg)) for m in cfg.methods}) == 1
            assert "lift" in cfg.methods and "full_ft" in cfg.methods
    full = BUDGETS.full
    assert full.seeds >= 5 and BUDGETS.quick.seeds == 3 and TASK_BUDGETS["mul"].full.seeds >= 5
    assert len(full.lr_grid) >= 3 and full.extend >= 1  # bracketed: an interior optimum
    assert set(full.sweep_ranks) >= {1, 16, 0}  # plus the comparison's r_f (chosen on validation)
    # the methods, tuned alike: the released smallest selection and the static SHiRA baseline included
    assert set(full.methods) >= {"full_ft", "lora", "lift", "lift_smallest", "lift_static", "magnitude", "random"}
    # the harder target (multiplication) sub-run keeps the rank-reduction comparison (LIFT vs magnitude)
    assert TASK_BUDGETS["mul"].full.target_task == "mul" and "magnitude" in TASK_BUDGETS["mul"].full.methods
    assert set(full.filter_ranks) >= {1, 8, 32}  # the main LIFT row's r_f is chosen on validation
    assert 0.0 < full.warmup_ratio < 1.0 and full.warmup_ratio == BUDGETS.quick.warmup_ratio  # one schedule
    # LoRA's rank is fixed by the equal trainable count (r = r_b); its alpha is tuned with the lr, as LIFT's interval
    assert set(R.tuning_grid("lora", full)) == {"lr", "lora_alpha"}
    assert set(R.tuning_grid("lift", full)) == {"lr", "update_interval"}
    assert set(R.tuning_grid("full_ft", full)) == {"lr"}


def test_retention_at_matched_accuracy_interpolates_along_the_lr_curve():
    from lift.reproduce import retention_at

    runs = [{"lr": 3e-3, "target": 0.1, "retention_token": 0.9}, {"lr": 1e-3, "target": 0.0, "retention_token": 1.0},
            {"lr": 9e-3, "target": 0.3, "retention_token": 0.5}]
    assert retention_at(runs, 0.2) == pytest.approx(0.7)  # halfway between (0.1, 0.9) and (0.3, 0.5)
    assert retention_at(runs, 0.1) == pytest.approx(0.9)
    assert retention_at(runs, 0.4) is None  # never reached
    # negative control: reading the curve unsorted (by list order) would interpolate (0.0, 1.0)-(0.3, 0.5) instead
    assert retention_at(runs, 0.2) != pytest.approx(1.0 + (0.2 / 0.3) * (0.5 - 1.0))


def test_matched_retention_is_read_per_seed_at_the_level_every_method_reaches():
    from lift.reproduce import matched_retention

    def pt(lr, t, r):
        return {"lr": lr, "target": t, "retention_token": r}

    curves = {  # seed 0: a reaches 0.8, b only 0.4 -> level 0.4; seed 1: both reach 0.6 -> level 0.6
        "a": [[pt(1, 0.0, 1.0), pt(3, 0.8, 0.2)], [pt(1, 0.6, 0.6), pt(3, 0.9, 0.1)]],
        "b": [[pt(1, 0.2, 0.9), pt(3, 0.4, 0.5)], [pt(1, 0.3, 0.8), pt(3, 0.6, 0.4)]],
    }
    levels, per = matched_retention(curves)
    assert levels == pytest.approx([0.4, 0.6])
    assert per["a"] == pytest.approx([0.6, 0.6])  # seed 0: halfway (0.0,1.0)-(0.8,0.2); seed 1: first point
    assert per["b"] == pytest.approx([0.5, 0.4])  # the top of b's curve on both seeds
    # negative control: one level for all seeds (seed 0's 0.4) would read b on seed 1 at 0.667, not at 0.4
    from lift.reproduce import retention_at

    assert retention_at(curves["b"][1], 0.4) == pytest.approx(0.8 + (0.1 / 0.3) * (0.4 - 0.8))
    assert per["b"][1] != pytest.approx(retention_at(curves["b"][1], 0.4))


def test_teacher_forced_exact_match_equals_greedy_generation_exact_match(tok):
    from icml25.testbeds.lm import exact_match
    from lift.finetune import answer_scores

    model = build_tiny_lm(tok, hidden_size=48, num_layers=1, seed=0)
    train = make_examples("add", 32, seed=0, split="train")
    finetune(model, tok, train, optimizer=torch.optim.AdamW(model.parameters(), lr=1e-2), steps=200, batch_size=32)
    ex = train + make_examples("add", 32, seed=1, split="test")  # memorised + unseen: an accuracy inside (0, 1)
    sc = answer_scores(model, tok, ex)
    gen = exact_match(model, tok, ex)
    assert 0.0 < gen < 1.0  # partly trained: the comparison is not trivial
    assert sc["exact"] == gen
    assert sc["token"] > sc["exact"]  # negative control: the graded token accuracy is a different number


def test_parallel_runs_equal_sequential_runs():
    """run_many in 2 forked workers gives the same numbers as in this process (every run seeds itself and uses one
    thread); negative control: another seed gives other losses."""
    from dataclasses import replace

    import lift.reproduce.runs as R
    from lift.config import BUDGETS

    cfg = replace(BUDGETS.smoke, workers=1)
    jobs = [{"method": m, "params": {"lr": 3e-3}, "seed": s} for m, s in (("lift", 0), ("full_ft", 0), ("lift", 1))]
    try:
        seq = R.run_many(jobs, cfg)
        par = R.run_many(jobs, replace(cfg, workers=2))
    finally:
        R._CACHE.clear()
    for a, b in zip(seq, par):
        assert a["losses"] == b["losses"] and a["target"] == b["target"] and a["seed"] == b["seed"]
    assert seq[0]["losses"] != seq[2]["losses"]  # negative control: the seed matters
