"""reproduce's experimental design: the validation split is disjoint from the test split, tuning is alike."""

import numpy as np
import pytest
from kea import reproduce as R
from kea.envs import DeepSea


@pytest.mark.parametrize("mode", [dict(quick=False, smoke=False), dict(quick=True, smoke=False),
                                  dict(quick=False, smoke=True)])
def test_validation_split_is_disjoint_from_the_test_split(mode):
    b = R.budget(**mode)
    split = R.validation_split(b)
    val, test = split["validation"], split["test"]
    assert not set(val["seeds"]) & set(test["seeds"])
    assert val["mapping_seed"] != test["mapping_seed"] == 42
    # the two DeepSea instances really differ (another per-cell action mapping), so tuning never sees the test task
    assert not np.array_equal(DeepSea(size=b.ds_size, mapping_seed=val["mapping_seed"]).action_mapping,
                              DeepSea(size=b.ds_size, mapping_seed=test["mapping_seed"]).action_mapping)
    # the jobs built for each split carry the split's instance
    assert R.ds_job(b, "SAC", val["seeds"][0], 1e-3, mapping_seed=val["mapping_seed"])["mapping_seed"] == 7
    assert R.ds_job(b, "SAC", test["seeds"][0], 1e-3, mapping_seed=42)["mapping_seed"] == 42


def test_overlapping_split_is_refused():
    b = R.budget(quick=True, smoke=False)
    bad = R.Budget(**{**b.__dict__, "val_seeds": (b.seeds[0],)})
    with pytest.raises(ValueError, match="also test seeds"):
        R.validation_split(bad)


def test_full_run_grid_and_seeds():
    b = R.budget(quick=False, smoke=False)
    assert len(b.seeds) >= 5 and len(b.lr_grid) == 3
    q = R.budget(quick=True, smoke=False)
    assert len(q.seeds) == 3


def test_tuning_is_alike_and_picks_the_best_validation_score(monkeypatch):
    """Every agent gets the same grid; the choice is the lr with the fewest episodes to solve on validation."""
    b = R.Budget(**{**R.budget(quick=True, smoke=False).__dict__, "val_seeds": (10_000, 10_001), "extend": 0,
                    "workers": 1})
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
    sel, runs = R.tune(b, pool, variants=tuple(best))
    assert {v: s.params["lr"] for v, s in sel.items()} == best
    assert all(s.grid_size == len(b.lr_grid) for s in sel.values())
    assert {m for *_, m in seen} == {R.VAL_MAPPING_SEED} and {s for _, _, s, _ in seen} == {10_000, 10_001}
    assert len(seen) == len(best) * len(b.lr_grid) * 2
    assert sel["SAC"].at_edge and not sel["RND-SAC"].at_edge


def test_solve_episode_counts_unsolved_as_the_budget():
    assert R.solve_episode({"solved_episode": None}, 400) == 400.0
    assert R.solve_episode({"solved_episode": 30}, 400) == 30.0
