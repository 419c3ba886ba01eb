"""Locally generated offline data: medium and medium-replay files in the D4RL layout, also on MuJoCo (slow)."""

from __future__ import annotations

import numpy as np
import pytest
from habi.data import D4RL_REFERENCES, load_offline, normalized_score, qlearning_dataset
from habi.datagen import DataGenConfig, load_generated, make_offline_data
from habi.errors import HabiConfigError


def _check_generated(res, obs_dim, act_dim, n_medium):
    for name in ("medium", "medium-replay"):
        d = load_offline(res[name], obs_dim=obs_dim, act_dim=act_dim)
        assert d["observations"].shape[1] == obs_dim and d["actions"].shape[1] == act_dim
        assert np.all(np.abs(d["actions"]) <= 1.0)
        assert not np.any(d["terminals"] & d["timeouts"])
        assert d["terminals"][-1] or d["timeouts"][-1]  # the last row always ends a segment
        q = qlearning_dataset(d)
        assert len(q["observations"]) > 0
        np.testing.assert_array_equal(load_generated(res, name)["observations"], d["observations"])
    assert len(load_offline(res["medium"])["observations"]) == n_medium
    meta = res["meta"]
    assert meta["expert_return"] > meta["random_return"]
    assert 0 < meta["medium_step"] <= meta["config"]["sac_steps"]
    with pytest.raises(ValueError, match="dataset must be one of"):
        load_generated(res, "expert")


@pytest.mark.slow
def test_pendulum_medium_and_medium_replay(tmp_path, monkeypatch):
    monkeypatch.setenv("HABI_CACHE", str(tmp_path))
    cfg = DataGenConfig(sac_steps=300, checkpoint_every=150, n_transitions=500, eval_episodes=1,
                        require_improvement=False)
    res = make_offline_data(cfg, progress=False)
    _check_generated(res, 3, 1, 500)
    # the replay analogue is SAC's buffer up to the medium checkpoint
    assert len(load_offline(res["medium-replay"])["observations"]) == res["meta"]["medium_step"]
    assert make_offline_data(cfg, progress=False)["cached"]


@pytest.mark.slow
def test_hopper_v5_through_the_mujoco_wheel(tmp_path, monkeypatch):
    pytest.importorskip("mujoco", reason="needs the habi[mujoco] extra: uv sync --all-packages --extra mujoco")
    from habi.envs import env_dims, make_env

    assert env_dims("Hopper-v5") == (11, 3)
    env = make_env("Hopper-v5")
    obs, _ = env.reset(seed=0)
    assert obs.shape == (11,)
    env.close()
    monkeypatch.setenv("HABI_CACHE", str(tmp_path))
    cfg = DataGenConfig(env_id="Hopper-v5", sac_steps=200, checkpoint_every=100, n_transitions=300,
                        eval_episodes=1, require_improvement=False)
    _check_generated(make_offline_data(cfg, progress=False), 11, 3, 300)


def test_d4rl_references_normalise_random_to_0_and_expert_to_100():
    lo, hi = D4RL_REFERENCES["Hopper-v5"]
    assert (lo, hi) == (-20.272305, 3234.3)  # d4rl/infos.py REF_MIN_SCORE / REF_MAX_SCORE for hopper
    np.testing.assert_allclose(normalized_score([lo, hi, (lo + hi) / 2], random_return=lo, expert_return=hi),
                               [0.0, 100.0, 50.0])


def test_datagen_config_checks_and_cache_key():
    with pytest.raises(HabiConfigError, match="references"):
        DataGenConfig(references="paper")
    with pytest.raises(HabiConfigError, match="sac_gamma"):
        DataGenConfig(sac_gamma=1.5)
    # new fields at their defaults leave the key an older config had (sha1 of its fields without them) unchanged
    import hashlib
    import json
    from dataclasses import asdict

    from habi.config import _ADDED_FIELDS

    for cfg in (DataGenConfig(), DataGenConfig(env_id="Hopper-v5", sac_steps=1000, checkpoint_every=500)):
        old = {k: v for k, v in asdict(cfg).items() if k not in _ADDED_FIELDS}
        assert cfg.key() == hashlib.sha1(json.dumps(old, sort_keys=True).encode()).hexdigest()[:12]
    # negative control: a changed value of a new field changes the key
    base = DataGenConfig()
    assert base.key() != DataGenConfig(sac_gamma=0.99).key() != DataGenConfig(references="d4rl").key()


def test_d4rl_references_only_for_locomotion_tasks(tmp_path, monkeypatch):
    monkeypatch.setenv("HABI_CACHE", str(tmp_path))
    cfg = DataGenConfig(references="d4rl", sac_steps=10, checkpoint_every=10, n_transitions=10)
    with pytest.raises(HabiConfigError, match="references='d4rl' needs a D4RL locomotion task"):
        make_offline_data(cfg, progress=False)


def test_episode_return_mean_of_a_data_set():
    from habi.datagen import _episode_return_mean

    d = {"rewards": np.array([1, 2, 3, 4, 5, 6], np.float32),
         "terminals": np.array([0, 1, 0, 0, 0, 0], bool), "timeouts": np.array([0, 0, 0, 0, 0, 1], bool)}
    assert _episode_return_mean(d) == pytest.approx((3 + 18) / 2)  # episodes [1, 2] and [3, 4, 5, 6]


@pytest.mark.slow
def test_hopper_stops_at_the_medium_target_with_d4rl_references(tmp_path, monkeypatch):
    pytest.importorskip("mujoco", reason="needs the habi[mujoco] extra: uv sync --all-packages --extra mujoco")
    monkeypatch.setenv("HABI_CACHE", str(tmp_path))
    # a target every checkpoint reaches: SAC stops at the first one, which is 'medium'
    cfg = DataGenConfig(env_id="Hopper-v5", sac_steps=400, checkpoint_every=100, n_transitions=200,
                        eval_episodes=1, references="d4rl", stop_at_target=True, medium_target=-1e9)
    meta = make_offline_data(cfg, progress=False)["meta"]
    assert meta["sac_steps_run"] == meta["medium_step"] == 100 and len(meta["checkpoints"]) == 1
    assert (meta["random_return"], meta["expert_return"]) == D4RL_REFERENCES["Hopper-v5"]
    assert meta["own_random_return"] != meta["random_return"]
