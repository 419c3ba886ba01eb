"""DeepSea closed forms (bsuite semantics) and the grid task."""

import gymnasium as gym
import numpy as np
import pytest
from kea.envs import DeepSea, GridNav


def _rollout(env, actions):
    obs, _ = env.reset()
    total, obs_list, n = 0.0, [obs], 0
    for a in actions:
        obs, r, term, trunc, _ = env.step(a)
        total += r
        n += 1
        obs_list.append(obs)
        if term or trunc:
            break
    return total, obs_list, n, term


@pytest.mark.parametrize("n", [2, 5, 10, 30])
def test_optimal_return_is_099_and_length_n(n):
    env = DeepSea(size=n)
    ret, obs, length, term = _rollout(env, env.optimal_actions())
    assert ret == pytest.approx(0.99, abs=1e-12)
    assert length == n and term
    assert env.optimal_return == pytest.approx(0.99, abs=1e-12)
    for o in obs[:-1]:
        assert o.shape == (n * n,) and o.sum() == 1.0 and set(np.unique(o)) == {0.0, 1.0}
    assert not obs[-1].any()


def test_bsuite_fixture_mapping():
    assert "".join(map(str, DeepSea(size=10).optimal_actions())) == "0101010010"
    assert "".join(map(str, DeepSea(size=30).optimal_actions())) == "001100111100010010100100001010"


@pytest.mark.parametrize("n", [3, 8])
def test_always_left_zero_and_column_le_row(n):
    env = DeepSea(size=n)
    env.reset()
    total = 0.0
    rng = np.random.default_rng(0)
    for _ in range(n):
        left = 1 - env.right_action(env.row, env.column)
        _, r, term, _, info = env.step(left)
        total += r
        assert info["column"] <= info["row"]
    assert total == 0.0 and term
    for _ in range(50):  # random episodes: column <= row, reward +1 only on the last step
        env.reset()
        for t in range(n):
            _, r, term, _, info = env.step(int(rng.integers(2)))
            assert info["column"] <= info["row"]
            if r > 0.5:
                assert t == n - 1


def test_random_policy_success_is_2_pow_minus_n():
    n, episodes = 4, 8000
    env = DeepSea(size=n)
    rng = np.random.default_rng(1)
    succ = 0
    for _ in range(episodes):
        ret, *_ = _rollout(env, rng.integers(0, 2, size=n))
        succ += ret > 0.5
    p = 2.0 ** -n
    assert abs(succ / episodes - p) < 4 * np.sqrt(p * (1 - p) / episodes)


def test_bad_inputs():
    with pytest.raises(ValueError, match="size"):
        DeepSea(size=1)
    env = DeepSea(size=3)
    env.reset()
    with pytest.raises(ValueError, match="action"):
        env.step(2)


def test_gym_make_registration_and_gridnav():
    env = gym.make("kea.envs:kea/DeepSea-v0", size=6)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (36,)
    g = GridNav(size=5)
    obs, _ = g.reset()
    assert obs.sum() == 1 and obs[0] == 1
    # the shortest path reaches the goal in 2(size-1) steps, terminated (not truncated), reward 1
    g2 = GridNav(size=5, max_steps=100)
    total, _, n, term = _rollout(g2, [1, 2] * 4)
    assert (total, n, term) == (1.0, 8, True)
    g3 = GridNav(size=5, max_steps=3)
    g3.reset()
    for _ in range(3):
        _, r, term, trunc, _ = g3.step(0)
    assert r == 0.0 and not term and trunc


def test_sparse_mountaincar_rewards_only_the_flag():
    from kea.envs import SparseMountainCar

    env = SparseMountainCar(max_episode_steps=300)
    env.reset(seed=0)
    total, info, done = 0.0, {}, False
    while not done:  # full throttle to the left: never reaches the flag, so every reward is 0 (no action cost)
        _, r, term, trunc, info = env.step(np.array([-1.0], np.float32))
        total += r
        done = term or trunc
    assert total == 0.0 and trunc and not info["is_success"]
    # a bang-bang policy (push along the velocity) reaches the flag: reward 1 exactly once, success, terminated
    obs, _ = env.reset(seed=0)
    rewards = []
    for _ in range(300):
        obs, r, term, trunc, info = env.step(np.array([1.0 if obs[1] >= 0 else -1.0], np.float32))
        rewards.append(r)
        if term or trunc:
            break
    assert term and rewards[-1] == 1.0 and sum(rewards) == 1.0 and info["is_success"]
    with pytest.raises(ValueError, match="max_episode_steps"):
        SparseMountainCar(max_episode_steps=0)


def test_sparse_reacher_reward_is_the_radius_indicator():
    pytest.importorskip("mujoco")
    from kea.envs import SparseReacher

    env = SparseReacher(radius=0.02)
    env.reset(seed=0)
    hit = False
    for _ in range(50):
        _, r, term, trunc, info = env.step(env.action_space.sample())
        assert r == float(info["distance"] < 0.02)
        hit = hit or r == 1.0
        assert info["is_success"] == hit
        if term or trunc:
            break
    # a huge radius makes every step a success (control)
    big = SparseReacher(radius=10.0)
    big.reset(seed=0)
    _, r, *_ = big.step(big.action_space.sample())
    assert r == 1.0
