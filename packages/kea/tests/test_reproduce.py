"""reproduce's experimental design: the validation split is disjoint from the test split, tuning is alike."""

from dataclasses import replace

import numpy as np
import pytest
from icml25.experiment import seeds_for
from kea import reproduce as R
from kea.config import BUDGETS, LARGE
from kea.envs import DeepSea


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

    monkeypatch.setattr(R, "_run", fake_run)
    pool = R._Pool.__new__(R._Pool)
    pool.ex = None
    sel = R.tune(cfg, [0, 1, 2], pool, variants=tuple(best))
    assert {v: s.params["lr"] for v, s in sel.items()} == best
    assert {m for *_, m in seen} == {R.VAL_MAPPING_SEED} and {s for _, _, s, _ in seen} == {10_000, 10_001}
    assert len(seen) == len(best) * len(cfg.lr_grid) * 2
    assert sel["SAC"].at_edge and not sel["RND-SAC"].at_edge


def test_solve_episode_and_coverage_readout():
    assert R.solve_episode({"solved_episode": None}, 400) == 400.0
    assert R.solve_episode({"solved_episode": 30}, 400) == 30.0
    r = {"coverage": [[20, 5], [40, 9], [60, 12]]}
    assert R.coverage_at(r, 45) == 9.0 and R.coverage_at(r, 1000) == 12.0 and R.coverage_at(r, 10) == 0.0
