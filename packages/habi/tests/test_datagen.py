"""Locally generated offline data: medium and medium-replay files in the D4RL layout, also on MuJoCo (slow)."""

from __future__ import annotations

import numpy as np
import pytest
from habi.data import load_offline, qlearning_dataset
from habi.datagen import DataGenConfig, load_generated, make_offline_data


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
    pytest.importorskip("mujoco")
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
