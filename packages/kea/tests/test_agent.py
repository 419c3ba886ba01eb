"""KEA agent: switching, reduction to RND-SAC, reward separation, delayed update, determinism, bad input."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from kea import KEA
from kea.agent import KEAGateWarning
from kea.envs import DeepSea, GridNav, make_vec_env
from kea.sac import KEAConfigError
from kea.variants import make_agent

SMALL = dict(hidden=(16, 16), batch_size=16, learning_starts=32, train_freq=4, gradient_steps=1, buffer_size=2000)


def _params(module):
    return [p.detach().clone() for p in module.parameters()]


def _same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("replay", [dict(per=False, standard_update="always"), dict(per=True, standard_update="never")])
def test_infinite_threshold_reduces_to_rnd_sac_exactly(replay):
    n = 4
    kea = make_agent("KEA-RND", DeepSea(size=n), switch_threshold=math.inf, beta_e=n, seed=3, **SMALL, **replay)
    rnd = make_agent("RND-SAC", DeepSea(size=n), beta_e=n, seed=3, per=replay["per"], **SMALL)
    kea.learn(160)
    rnd.learn(160)
    assert kea.n_critic_updates > 30 and not any(kea.trace.switched)
    # with uniform replay the standard module was trained (so the equivalence is not vacuous) ...
    assert ("standard/critic" in kea.last_losses) == (replay["standard_update"] == "always")
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
    ag = make_agent("KEA-RND", make_vec_env(lambda: DeepSea(size=5), num_envs=4), seed=0, **SMALL)
    obs = np.zeros((4, 25), np.float32)
    obs[:, 0] = 1
    flags = np.array([True, False, True, False])
    for _ in range(10):
        ag._flags = flags.copy()
        s_sac, s_std = ag.sac.generator.get_state(), ag.standard.generator.get_state()
        a = ag._behaviour(obs)
        ag.sac.generator.set_state(s_sac)
        ag.standard.generator.set_state(s_std)
        a_sac, _ = ag.sac.act(torch.as_tensor(obs))
        a_std, _ = ag.standard.act(torch.as_tensor(obs))
        np.testing.assert_array_equal(a, np.where(flags, a_std.numpy(), a_sac.numpy()))
    # negative control: with no flag set every action is A^SAC's
    ag._flags[:] = False
    s_sac = ag.sac.generator.get_state()
    a = ag._behaviour(obs)
    ag.sac.generator.set_state(s_sac)
    np.testing.assert_array_equal(a, ag.sac.act(torch.as_tensor(obs))[0].numpy())


@pytest.mark.parametrize("variant,switch_on", [("KEA-RND", "intrinsic"), ("KEA-NovelD", "intrinsic"),
                                               ("KEA-NovelD", "rnd")])
def test_the_standard_module_acts_exactly_where_the_previous_signal_exceeds_sigma(variant, switch_on, monkeypatch):
    """The actions the environments received, not the agent's own flags: with A^SAC always choosing action 0 and
    A^B always action 1, env i's action at step t must be 1[signal_{t−1, i} > σ] (signal as returned by
    ``switch_signal`` at the previous step), wherever step t is not the first of an episode."""
    n_envs, sigma = 4, 1.0
    kw = dict(SMALL, train_freq=16, gradient_steps=2)
    ag = make_agent(variant, make_vec_env(lambda: DeepSea(size=5), num_envs=n_envs), switch_on=switch_on,
                    switch_threshold=sigma, seed=0, **kw)
    monkeypatch.setattr(ag.sac, "act", lambda obs, deterministic=False: (torch.zeros(obs.shape[0], dtype=torch.long),
                                                                         None))
    monkeypatch.setattr(ag.standard, "act", lambda obs, deterministic=False: (torch.ones(obs.shape[0],
                                                                                         dtype=torch.long), None))
    signals = []
    orig = ag.switch_signal

    def record(*a, **k):
        out = orig(*a, **k)
        signals.append(out.detach().cpu().numpy().copy())
        return out

    monkeypatch.setattr(ag, "switch_signal", record)
    ag.learn(320)
    steps = ag.num_timesteps // n_envs
    sig = np.stack(signals)  # (steps, n_envs)
    acts = ag.buffer.actions[:ag.num_timesteps].reshape(steps, n_envs)
    term = ag.buffer.dones[:ag.num_timesteps].reshape(steps, n_envs).astype(bool)
    t = np.arange(1, steps)
    learned = (t * n_envs >= SMALL["learning_starts"])[:, None]  # step t acted by the modules, not the warm-up
    check = learned & ~term[t - 1]  # and not the first step of an episode
    expect = sig[t - 1] > sigma
    np.testing.assert_array_equal(acts[t][check], expect[check].astype(acts.dtype))
    assert 0 < expect[check].sum() < check.sum()  # both modules acted: the check is not vacuous
    # negative control: the same-step signal (an off-by-one switch) does not explain the actions
    assert not np.array_equal(acts[t][check], (sig[t] > sigma)[check].astype(acts.dtype))


def test_switch_signal_is_the_released_normalisation_of_the_next_state():
    """Audit of the switch (issue 33): the flag for the next action is 1[z(s_{t+1}) > σ] with
    z = clip((e − μ')/(σ' + 1e-8), −2, 2), where (μ', σ'²) is the EMA (momentum 0.9 with 4 envs) already updated
    with this step's 4 novelties e, and e comes from the predictor *before* this step's RND training (as released)."""
    import copy

    ag = make_agent("KEA-RND", make_vec_env(lambda: DeepSea(size=5), num_envs=4), seed=0, **SMALL)
    ag.learn(48)  # 12 vector steps: the 13th is the 3rd step of an episode (not terminal)
    pred = copy.deepcopy(ag.rnd.predictor)
    m, v = float(ag.rnd.stats.mean), float(ag.rnd.stats.var)
    ag.learn(4)
    nxt = torch.as_tensor(ag.buffer.next_observations[48:52])
    with torch.no_grad():
        e = (pred(nxt) - ag.rnd.target(nxt)).pow(2).mean(-1).double().numpy()
    m2 = 0.9 * m + 0.1 * e.mean()
    v2 = 0.9 * v + 0.1 * np.mean((e - m2) ** 2)
    z = np.clip((e - m2) / (np.sqrt(v2) + 1e-8), -2.0, 2.0)
    np.testing.assert_allclose(ag._signal, z, atol=1e-4)
    np.testing.assert_array_equal(ag._flags, ag._signal > 1.0)
    # control: the statistics before this step's update give a visibly different z
    z_old = np.clip((e - m) / (np.sqrt(v) + 1e-8), -2.0, 2.0)
    assert np.abs(z_old - z).max() > 1e-3


def test_kea_noveld_switches_on_its_noveld_reward_not_on_rnd_novelty():
    """The signal of the default KEA-NovelD is r_NovelD(s, s') of the transition; switch_on='rnd' gives z(s')."""
    env = DeepSea(size=5)
    for switch_on in ("intrinsic", "rnd"):
        ag = make_agent("KEA-NovelD", env, switch_on=switch_on, seed=0, **SMALL)
        ag.learn(100)
        obs, nxt, fv = np.eye(25, dtype=np.float32)[[0, 5]], np.eye(25, dtype=np.float32)[[6, 11]], torch.ones(2)
        e_next, e_cur = ag._errors(nxt), ag._errors(obs)
        z = ag.rnd.normalise(e_next, update=False)
        nd = ag.rnd.noveld(e_next, e_cur, fv, alpha=0.5, update=False)
        sig = ag.switch_signal(e_next, e_cur, fv, update=False)
        assert not torch.allclose(z, nd)  # the two candidate signals differ here, so the choice is visible
        expect = nd if switch_on == "intrinsic" else z
        assert torch.equal(sig, expect)
    # a repeated state (first_visit = 0) has NovelD reward 0: it can never trigger the NovelD switch
    assert torch.equal(ag.rnd.noveld(e_next, e_cur, torch.zeros(2), update=False), torch.zeros(2))


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
    # the rewards _update feeds the modules: ∂r_B/∂r_int = 0 (not connected), ∂r_SAC/∂r_int = β_i (control)
    r_ext, r_int = torch.randn(16), torch.randn(16, requires_grad=True)
    rew = a.module_rewards(r_ext, r_int)
    assert not rew["standard"].requires_grad  # r_B has no autograd path from r_int at all
    (g_s,) = torch.autograd.grad(rew["sac"].sum(), r_int)
    assert torch.equal(g_s, torch.full((16,), a.beta_i))


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
    dones = ag.buffer.dones[:40]
    assert dones.sum() == 0  # 5-step episodes can never reach the goal 10 moves away: all truncated, none terminated
    ag2 = make_agent("SAC", DeepSea(size=4), seed=0, **SMALL)
    ag2.learn(40)
    np.testing.assert_array_equal(ag2.buffer.dones[:40], np.tile([0, 0, 0, 1], 10))
    # the stored s' of a terminal transition is the true final observation (all zeros), not the next reset state
    assert not ag2.buffer.next_observations[3].any() and ag2.buffer.observations[4][0] == 1


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
    (dict(noveld_form="own"), "noveld_form"),
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


class NegativeReward(gym.Env):
    """3 steps, reward −1 per step, +2 on the last step if every action was 1: returns −1 (success) or −3 …−1.
    Reports no ``is_success``: only a return threshold can detect success."""

    observation_space = gym.spaces.Box(0.0, 1.0, shape=(4,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.ok = 0, True
        return np.eye(4, dtype=np.float32)[0], {}

    def step(self, a):
        self.ok = self.ok and int(a) == 1
        self.t += 1
        r = -1.0 + (2.0 if self.t == 3 and self.ok else 0.0)
        return np.eye(4, dtype=np.float32)[self.t], r, self.t == 3, False, {}


def test_success_gate_threshold_opens_on_negative_reward_tasks_positive_return_does_not():
    kw = dict(SMALL, switch_threshold=-math.inf, seed=0)
    ag = make_agent("KEA-RND", NegativeReward(), success_threshold=-1.5, **kw)
    before = _params(ag.standard)
    ag.learn(300)
    k = ag.trace.first_success_episode
    assert k is not None and ag.trace.episode_returns[k - 1] == -1.0
    assert all(r < -1.5 for r in ag.trace.episode_returns[:k - 1])  # opens at the FIRST success, not before
    assert ag.gate_open and ag.trace.gate_open_step == ag.trace.episode_ends[k - 1]
    assert not _same(before, ag.standard.parameters())
    # negative control: the released positive-return check never opens here (returns are all < 0) and warns
    ag2 = make_agent("KEA-RND", NegativeReward(), success_gate="positive_return", **kw)
    before2 = _params(ag2.standard)
    with pytest.warns(KEAGateWarning, match="has not opened"):
        ag2.learn(300)
    assert not ag2.gate_open and _same(before2, ag2.standard.parameters())
    assert any(r == -1.0 for r in ag2.trace.episode_returns)  # successes happened, the gate did not see them


def test_success_gate_reads_is_success_from_the_env():
    # DeepSea reports is_success (the +1 was collected); a threshold above every return cannot override it
    ag = make_agent("KEA-RND", DeepSea(size=2), beta_e=2, success_threshold=5.0, seed=0, **SMALL)
    ag.learn(120)
    k = ag.trace.first_success_episode
    assert k is not None and ag.trace.episode_returns[k - 1] == pytest.approx(0.99)
    assert ag.trace.episode_success[k - 1] and not any(ag.trace.episode_success[:k - 1])


def test_shared_buffer_holds_both_modules_transitions_and_one_minibatch_trains_both(monkeypatch):
    venv = make_vec_env(lambda: DeepSea(size=4), num_envs=4)
    ag = make_agent("KEA-RND", venv, standard_update="always", switch_threshold=0.0, beta_e=4, seed=0, **SMALL)
    ag.learn(400)
    n = ag.buffer.size()
    assert n == ag.num_timesteps == 400  # every transition of every env stored once
    by_std = ag.buffer.by_standard[:n]
    assert by_std.sum() == sum(ag.trace.switched) and 0 < by_std.sum() < n  # both modules' actions are in it
    # one update draws ONE minibatch and both modules' critic losses see exactly those transitions
    seen = []
    for name in ("sac", "standard"):
        m = getattr(ag, name)
        orig = m.critic_loss_td

        def spy(obs, actions, y, w, _orig=orig, _name=name):
            seen.append((_name, obs.clone()))
            return _orig(obs, actions, y, w)

        monkeypatch.setattr(m, "critic_loss_td", spy)
    calls = []
    orig_sample = ag.buffer.sample
    monkeypatch.setattr(ag.buffer, "sample", lambda *a, **k: calls.append(1) or orig_sample(*a, **k))
    ag._update()
    assert len(calls) == 1 and [s[0] for s in seen] == ["sac", "standard"]
    assert torch.equal(seen[0][1], seen[1][1])
    assert torch.equal(seen[0][1], torch.as_tensor(ag.buffer.observations[ag.last_batch_indices]))
    # negative control: RND-SAC has no standard module, so nothing in its buffer was acted by one
    rnd = make_agent("RND-SAC", make_vec_env(lambda: DeepSea(size=4), num_envs=4), seed=0, **SMALL)
    rnd.learn(200)
    assert not rnd.buffer.by_standard[:200].any()


def test_update_schedule_counts_transitions_over_parallel_envs():
    kw = dict(SMALL, train_freq=16, gradient_steps=8, learning_starts=64)
    ag = make_agent("RND-SAC", make_vec_env(lambda: DeepSea(size=4), num_envs=4), seed=0, **kw)
    ag.learn(256)
    assert ag.num_timesteps == 256 and ag.n_critic_updates == 8 * (256 - 64) // 16 + 8  # from transition 64 on
    one = make_agent("RND-SAC", DeepSea(size=4), seed=0, **kw)
    one.learn(256)
    assert one.n_critic_updates == ag.n_critic_updates  # same ratio, 8 per 16 transitions, with 1 or 4 envs
