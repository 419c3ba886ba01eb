"""reproduce's experimental design: the validation split is disjoint from the test split, tuning is alike."""

from dataclasses import replace

import numpy as np
import pytest
from icml25.experiment import seeds_for
from kea import reproduce as R
from kea.config import ABLATION, BUDGETS, CONTINUOUS, LARGE
from kea.envs import DeepSea
from kea.reproduce import lr_tuning, sparse_control


@pytest.mark.parametrize("mode", [dict(quick=False, smoke=False), dict(quick=True, smoke=False),
                                  dict(quick=False, smoke=True)])
def test_validation_split_is_disjoint_from_the_test_split(mode):
    cfg = BUDGETS.pick(**mode)
    seeds = seeds_for(cfg, 0)
    split = R.validation_split(cfg, seeds)
    val, test = split["validation"], split["test"]
    assert not set(val["seeds"]) & set(test["seeds"])
    assert val["mapping_seed"] != test["mapping_seed"] == 42
    # the two DeepSea instances really differ (another per-cell action mapping), so tuning never sees the test task
    n = cfg.sizes[0]
    assert not np.array_equal(DeepSea(size=n, mapping_seed=val["mapping_seed"]).action_mapping,
                              DeepSea(size=n, mapping_seed=test["mapping_seed"]).action_mapping)
    job = R.ds_job(cfg, "SAC", val["seeds"][0], 1e-3, size=val["size"], episodes=cfg.val_episodes,
                   mapping_seed=val["mapping_seed"])
    assert job["mapping_seed"] == 7 and job["num_envs"] == cfg.num_envs


def test_overlapping_split_is_refused():
    cfg = BUDGETS.pick(quick=True)
    with pytest.raises(ValueError, match="also test seeds"):
        R.validation_split(cfg, [R.VAL_SEED_OFFSET])


def test_full_run_uses_the_released_regime_and_enough_seeds():
    full = BUDGETS.pick()
    assert full.seeds >= 5 and full.num_envs == 4 and (full.train_freq, full.gradient_steps) == (16, 8)
    assert 10 in full.sizes and set(full.cost_sizes) == {10, 14, 20}
    assert set(LARGE.pick().sizes) == {14, 20} and LARGE.pick().seeds >= 5
    kw = R.agent_kwargs(full, 10, 1e-3, full.episodes)
    assert kw["learning_starts"] == 200 * 10 and kw["per_beta_steps"] == full.episodes * 10


def test_tuning_is_alike_and_picks_the_best_validation_score(monkeypatch):
    """Every agent gets the same grid; the choice is the lr with the fewest episodes to solve on validation."""
    cfg = replace(BUDGETS.pick(quick=True), val_seeds=2, lr_grid=(3e-4, 1e-3, 3e-3), workers=1)
    best = {"SAC": 3e-4, "RND-SAC": 1e-3, "KEA-RND": 3e-3}
    seen = []

    def fake_run(job):
        seen.append((job["variant"], job["agent_kwargs"]["lr"], job["seed"], job["mapping_seed"]))
        v, lr = job["variant"], job["agent_kwargs"]["lr"]
        solved = 20 if lr == best[v] else (None if lr == 3e-3 else 80)
        return {"solved_episode": solved}

    monkeypatch.setattr(lr_tuning, "_run", fake_run)  # tune -> tune_lr looks _run up in kea.reproduce.lr_tuning
    pool = R.ForkPool(1)  # inline: the monkeypatched _run is called here
    sel = R.tune(cfg, [0, 1, 2], pool, variants=tuple(best))
    assert {v: s.params["lr"] for v, s in sel.items()} == best
    assert {m for *_, m in seen} == {R.VAL_MAPPING_SEED} and {s for _, _, s, _ in seen} == {10_000, 10_001}
    assert len(seen) == len(best) * len(cfg.lr_grid) * 2
    assert sel["SAC"].at_edge and not sel["RND-SAC"].at_edge


def test_solve_episode_and_coverage_readout():
    assert R.solve_episode({"solved_episode": None}, 400) == 400.0
    assert R.solve_episode({"solved_episode": 30}, 400) == 30.0
    r = {"coverage": [[20, 5, 0], [40, 9, 3], [60, 12, 7]]}  # (episode, all states, after the warm-up)
    assert R.coverage_at(r, 45) == 3.0 and R.coverage_at(r, 1000) == 7.0 and R.coverage_at(r, 10) == 0.0
    assert R.coverage_at(r, 45, after_warmup=False) == 9.0 and R.coverage_at(r, 1000, after_warmup=False) == 12.0


def test_declared_module_and_competence_gate():
    from kea.experiment import declared_module

    assert declared_module("KEA-RND") == "standard" and declared_module("KEA-NovelD", "sac") == "sac"
    assert all(declared_module(v) == "sac" for v in ("SAC", "RND-SAC", "NovelD-SAC"))
    with pytest.raises(ValueError, match="kea_eval_module"):
        declared_module("KEA-RND", "either")
    ctrl = R.deepsea_controls(10)
    solved = [{"declared_module": "standard", "final_return_declared": 0.99, "solved_episode": 300}] * 5
    unsolved = [{"declared_module": "sac", "final_return_declared": -0.005, "solved_episode": None}] * 5
    assert R.competence_gate("DeepSea N=10", "KEA-RND", solved, optimum=0.99, controls=ctrl).verdict == "holds"
    assert R.competence_gate("DeepSea N=10", "SAC", unsolved, optimum=0.99, controls=ctrl).verdict == "fails"


def test_ablation_uses_new_seeds_and_passes_its_options_to_the_agent():
    full = ABLATION.pick()
    ab_seeds, main_seeds = seeds_for(full, 0), seeds_for(BUDGETS.pick(), 0)
    assert len(ab_seeds) >= 10 and not set(ab_seeds) & set(main_seeds)  # a replication on new seeds
    assert not set(ab_seeds) & set(R.validation_split(BUDGETS.pick(), main_seeds)["validation"]["seeds"])
    assert full.sizes == (10,) and full.episodes == BUDGETS.pick().episodes  # the main run's instance and budget
    labels = [lab for lab, *_ in R.OPTION_ROWS]
    assert any("never" in lab for lab in labels)
    for _lab, v, opts in R.OPTION_ROWS:
        job = R.ds_job(full, v, 5, 3e-3, size=10, episodes=10, mapping_seed=42, options=opts)
        assert all(job["agent_kwargs"][k] == val for k, val in opts.items())
    # negative control: without options the agent gets the defaults (no standard_update / σ override)
    plain = R.ds_job(full, "KEA-RND", 5, 3e-3, size=10, episodes=10, mapping_seed=42)["agent_kwargs"]
    assert "standard_update" not in plain and "switch_threshold" not in plain


def test_every_tuning_grid_has_at_least_three_points_and_may_extend():
    for cfg in (BUDGETS.pick(), LARGE.pick()):
        assert len(cfg.lr_grid) >= 3 and cfg.extend >= 1


def test_grid_edge_extension_submits_the_new_point_in_both_tasks(monkeypatch, tmp_path):
    """A choice at a grid edge is extended by one grid ratio and the new point is actually run (continuous task: it
    used to be looked up among the pre-submitted points only, a KeyError); the extended lr wins where it is better."""
    cfg = replace(CONTINUOUS.pick(smoke=True), lr_grid=(1e-3, 3e-3, 1e-2), extend=1)
    best = {"SAC": 1e-3 / 3, "RND-SAC": 3e-3}  # SAC's optimum lies beyond the low edge; RND-SAC's is interior
    seen = []

    def fake_run(job):
        v, lr = job["variant"], job["agent_kwargs"]["lr"]
        seen.append((v, lr))
        good = v in best and abs(lr - best[v]) < 1e-12
        edge = v == "SAC" and abs(lr - 1e-3) < 1e-12
        solved = 2 if good else (4 if edge else None)
        return {"variant": v, "seed": job["seed"], "solved_episode": solved,
                "first_success_episode": None, "switch_fraction": 0.0, "steps_per_s": 1.0,
                "declared_module": "standard" if v.startswith("KEA") else "sac",
                "final_return_declared": 1.0 if solved else 0.0}

    # continuous (kea.reproduce.sparse_control) submits _run itself and through tune_lr (kea.reproduce.lr_tuning)
    monkeypatch.setattr(lr_tuning, "_run", fake_run)
    monkeypatch.setattr(sparse_control, "_run", fake_run)
    monkeypatch.setattr(sparse_control, "_pool", lambda workers: R.ForkPool(1))  # inline: fake_run is called here
    sec = R.continuous(cfg, [0], tmp_path)
    _cols, rows = next(t for name, t in sec.tables.items() if "learning rate chosen" in name)
    chosen = {row[0]: row[1] for row in rows}
    assert chosen["SAC"] == "lr=0.000333" and chosen["RND-SAC"] == "lr=0.003"
    assert ("SAC", pytest.approx(1e-3 / 3)) in seen  # the extended point was run
    assert not any(v == "RND-SAC" and lr < 1e-3 for v, lr in seen)  # control: an interior choice is not extended
