"""KEA agent: switching, reduction to RND-SAC, reward separation, delayed update, determinism, bad input."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from kea import KEA
from kea.envs import DeepSea, GridNav
from kea.sac import KEAConfigError
from kea.variants import make_agent

SMALL = dict(hidden=(16, 16), batch_size=16, learning_starts=32, train_freq=4, gradient_steps=1, buffer_size=2000)


def _params(module):
    return [p.detach().clone() for p in module.parameters()]


def _same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b))


def test_infinite_threshold_reduces_to_rnd_sac_exactly():
    n = 4
    kea = make_agent("KEA-RND", DeepSea(size=n), switch_threshold=math.inf, standard_update="always", beta_e=n,
                     seed=3, **SMALL)
    rnd = make_agent("RND-SAC", DeepSea(size=n), beta_e=n, seed=3, **SMALL)
    kea.learn(160)
    rnd.learn(160)
    assert kea.n_critic_updates > 30 and not any(kea.trace.switched)
    # the standard module was trained (so the equivalence is not vacuous) ...
    assert "standard/critic" in kea.last_losses
    # ... yet actions, stored data, losses and A^SAC's weights are identical to RND-SAC's
    np.testing.assert_array_equal(kea.buffer.actions[:160], rnd.buffer.actions[:160])
    np.testing.assert_array_equal(kea.buffer.rewards[:160], rnd.buffer.rewards[:160])
    assert kea.last_losses["sac/critic"] == rnd.last_losses["sac/critic"]
    assert kea.last_losses["sac/actor"] == rnd.last_losses["sac/actor"]
    assert _same(kea.sac.parameters(), rnd.sac.parameters())


def test_minus_infinite_threshold_always_uses_standard():
    ag = make_agent("KEA-RND", DeepSea(size=4), switch_threshold=-math.inf, seed=0, **SMALL)
    ag.learn(100)
    learn = ag.trace.switched[SMALL["learning_starts"]:]
    assert len(learn) == 68 and all(learn)


def test_behaviour_action_comes_from_the_flagged_module():
    ag = make_agent("KEA-RND", DeepSea(size=5), seed=0, **SMALL)
    obs = np.zeros(25, np.float32)
    obs[0] = 1
    for flag, module in ((True, ag.standard), (False, ag.sac)):
        for _ in range(20):
            ag._flag = flag
            state = module.generator.get_state()
            a, _ = ag._behaviour(obs)
            module.generator.set_state(state)
            expect, _ = module.act(torch.as_tensor(obs)[None])
            assert a == int(expect[0])
    # and the per-step flag is exactly z(s_{t+1}) > σ: switching fraction ~ fraction of such states
    ag.learn(80)
    assert 0.0 <= float(np.mean(ag.trace.switched)) <= 1.0


def test_standard_target_does_not_depend_on_intrinsic_reward(monkeypatch):
    def build():
        ag = make_agent("KEA-RND", DeepSea(size=4), standard_update="always", beta_e=4, seed=1, **SMALL)
        ag.learn(64)
        return ag

    a, b = build(), build()
    monkeypatch.setattr(b, "intrinsic_rewards", lambda o, no, fv: torch.full((o.shape[0],), 7.0))
    a._update()
    b._update()
    assert a.last_losses["standard/critic"] == b.last_losses["standard/critic"]
    assert a.last_losses["sac/critic"] != b.last_losses["sac/critic"]
    # gradient of the standard module's critic loss w.r.t. r_int is zero (r_int does not enter y_B)
    data, fv = a.buffer.sample_with(16, np.random.default_rng(0))
    r_int = torch.zeros(16, requires_grad=True)
    obs, nobs = data.observations, data.next_observations
    y_b = a.standard.target(a.beta_e * data.rewards.reshape(-1), nobs, data.dones.reshape(-1))
    loss_b = a.standard.critic_loss(obs, data.actions.reshape(-1), y_b) + 0.0 * r_int.sum()
    (g,) = torch.autograd.grad(loss_b, r_int)
    assert torch.equal(g, torch.zeros(16))


def test_standard_module_frozen_before_first_success_then_opens():
    # DeepSea N=10 with 20 random-ish episodes: success (p ≈ 2^-10 per episode) essentially never happens
    ag = make_agent("KEA-RND", DeepSea(size=10), beta_e=10, seed=0, **SMALL)
    before = _params(ag.standard)
    ag.learn(200)
    assert ag.trace.first_success_episode is None and not ag.gate_open
    assert ag.n_critic_updates > 30 and "standard/critic" not in ag.last_losses
    assert _same(before, ag.standard.parameters())
    # N=2: success is frequent; the gate opens exactly at the end of the first positive episode
    ag2 = make_agent("KEA-RND", DeepSea(size=2), beta_e=2, seed=0, **SMALL)
    before2 = _params(ag2.standard)
    ag2.learn(120)
    k = ag2.trace.first_success_episode
    assert k is not None and ag2.trace.gate_open_step == ag2.trace.episode_ends[k - 1]
    assert not _same(before2, ag2.standard.parameters())
    # "never" (the released code's effective behaviour) keeps it frozen even after successes
    ag3 = make_agent("KEA-RND", DeepSea(size=2), beta_e=2, seed=0, standard_update="never", **SMALL)
    before3 = _params(ag3.standard)
    ag3.learn(120)
    assert ag3.trace.first_success_episode is not None and _same(before3, ag3.standard.parameters())


def test_actor_and_critic_step_counts_and_rnd_target_frozen():
    ag = make_agent("KEA-NovelD", DeepSea(size=4), seed=0, **SMALL)
    tgt = _params(ag.rnd.target)
    ag.learn(100)
    # every 2nd critic step, 2 actor steps on the same batch (as released): as many actor as critic steps
    assert ag.n_critic_updates > 10 and ag.n_actor_updates == 2 * (ag.n_critic_updates // 2)
    assert _same(tgt, ag.rnd.target.parameters())


def test_determinism_same_seed_same_run():
    runs = []
    for _ in range(2):
        ag = make_agent("KEA-NovelD", DeepSea(size=5), beta_e=5, seed=7, **SMALL)
        ag.learn(120)
        runs.append((ag.buffer.actions[:120].copy(), ag.last_losses, ag.trace.switched))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    assert runs[0][1] == runs[1][1] and runs[0][2] == runs[1][2]


def test_truncation_is_not_termination_in_the_buffer():
    ag = make_agent("RND-SAC", GridNav(size=6, max_steps=5), seed=0, **SMALL)
    ag.learn(40)
    dones = ag.buffer.dones[:40, 0]
    assert dones.sum() == 0  # 5-step episodes can never reach the goal 10 moves away: all truncated, none terminated
    ag2 = make_agent("SAC", DeepSea(size=4), seed=0, **SMALL)
    ag2.learn(40)
    np.testing.assert_array_equal(ag2.buffer.dones[:40, 0], np.tile([0, 0, 0, 1], 10))


def test_continuous_kea_on_mountaincar_and_sb3_evaluate_policy():
    from stable_baselines3.common.evaluation import evaluate_policy

    env = gym.make("MountainCarContinuous-v0", max_episode_steps=50)
    ag = make_agent("KEA-RND", env, seed=0, switch_threshold=0.0, **SMALL)
    ag.learn(120)
    assert not ag.discrete and ag.n_critic_updates > 10
    act, _ = ag.predict(np.zeros(2, np.float32))
    assert act.shape == (1,) and -1.0 <= act[0] <= 1.0
    mean, _ = evaluate_policy(ag, gym.make("MountainCarContinuous-v0", max_episode_steps=20), n_eval_episodes=2)
    assert np.isfinite(mean)


def test_save_load_roundtrip(tmp_path):
    ag = make_agent("KEA-RND", DeepSea(size=4), seed=0, standard_update="always", **SMALL)
    ag.learn(80)
    ag.save(tmp_path / "ckpt")
    back = KEA.load(tmp_path / "ckpt", DeepSea(size=4))
    obs = np.eye(16, dtype=np.float32)
    for m in ("sac", "standard"):
        np.testing.assert_array_equal(ag.predict(obs, module=m)[0], back.predict(obs, module=m)[0])


@pytest.mark.parametrize("kwargs,match", [
    (dict(switch_threshold=float("nan")), "switch_threshold"),
    (dict(beta_i=-0.1), "beta_i"),
    (dict(beta_e=-1.0), "beta_e"),
    (dict(alpha=-0.5), "alpha"),
    (dict(gamma=1.0), "gamma"),
    (dict(gamma=-0.1), "gamma"),
    (dict(tau=0.0), "tau"),
    (dict(tau=1.5), "tau"),
    (dict(batch_size=64, learning_starts=10), "larger than the buffer at learning start"),
    (dict(batch_size=64, buffer_size=32), "buffer_size"),
    (dict(train_freq=0), "train_freq"),
    (dict(ir_clip=0.0), "ir_clip"),
    (dict(noveld_alpha=1.5), "noveld_alpha"),
    (dict(intrinsic="icm"), "intrinsic"),
    (dict(standard_update="sometimes"), "standard_update"),
])
def test_bad_input(kwargs, match):
    base = dict(SMALL)
    base.update(kwargs)
    with pytest.raises(KEAConfigError, match=match):
        KEA(DeepSea(size=4), **base)


def test_bad_spaces_and_observation_shape():
    env = DeepSea(size=4)
    env.action_space = gym.spaces.MultiBinary(2)
    with pytest.raises(KEAConfigError, match="action_space"):
        KEA(env, **SMALL)
    ag = KEA(DeepSea(size=4), **SMALL)
    with pytest.raises(KEAConfigError, match="observation shape"):
        ag.predict(np.zeros(5, np.float32))
    with pytest.raises(KEAConfigError, match="module"):
        KEA(DeepSea(size=4), standard_module=False, **SMALL).predict(np.zeros(16, np.float32), module="standard")
    with pytest.raises(ValueError, match="variant"):
        make_agent("DQN", DeepSea(size=4))
