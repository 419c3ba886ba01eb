"""Closed forms of the SAC targets, Polyak extremes, RND, the EMA normaliser and NovelD."""

import math

import numpy as np
import pytest
import torch
from gymnasium import spaces
from kea.intrinsic import RND, EMARunningMeanStd, noveld_reward
from kea.sac import ContinuousSAC, DiscreteSAC, KEAConfigError, continuous_sac_target, discrete_sac_target


def _close(a, b):
    # (torch.testing.assert_close's first call imports heavy machinery: ~5 CPU-s)
    assert a.shape == b.shape and torch.allclose(a, b, rtol=1e-6, atol=1e-6), (a, b)


OBS = spaces.Box(0.0, 1.0, shape=(6,), dtype=np.float32)


def test_discrete_target_closed_forms():
    g = torch.Generator().manual_seed(0)
    b, a = 5, 3
    r, d = torch.randn(b, generator=g), torch.tensor([0.0, 1.0, 0.0, 0.0, 1.0])
    q1, q2 = torch.randn(b, a, generator=g), torch.randn(b, a, generator=g)
    best = torch.tensor([0, 2, 1, 1, 0])
    onehot = torch.nn.functional.one_hot(best, a).float()
    y = discrete_sac_target(reward=r, terminated=d, probs_next=onehot, log_probs_next=torch.log(onehot + 1e-30),
                            q1_next=q1, q2_next=q2, gamma=0.9, alpha=0.0)
    expect = r + 0.9 * (1 - d) * torch.min(q1, q2).gather(1, best[:, None]).squeeze(1)
    _close(y, expect)
    uni = torch.full((b, a), 1.0 / a)
    y = discrete_sac_target(reward=r, terminated=d, probs_next=uni, log_probs_next=uni.log(), q1_next=q1, q2_next=q2,
                            gamma=0.9, alpha=0.3)
    expect = r + 0.9 * (1 - d) * (torch.min(q1, q2).mean(1) + 0.3 * math.log(a))
    _close(y, expect)


def test_continuous_target_closed_form():
    r, d = torch.tensor([1.0, 2.0]), torch.tensor([0.0, 1.0])
    y = continuous_sac_target(reward=r, terminated=d, q1_next=torch.tensor([3.0, 5.0]), q2_next=torch.tensor([4.0, 1.0]),
                              log_prob_next=torch.tensor([-1.0, 0.5]), gamma=0.5, alpha=0.2)
    _close(y, torch.tensor([1.0 + 0.5 * (3.0 + 0.2), 2.0]))


def test_module_target_uses_target_critics_and_terminated():
    m = DiscreteSAC(observation_space=OBS, action_space=spaces.Discrete(3), dropout=0.0, seed=0)
    obs = torch.rand(4, 6)
    with torch.no_grad():
        for p in m.q1_target.parameters():
            p.zero_()
        for p in m.q2_target.parameters():
            p.zero_()
    probs, logp = m.policy(obs)
    y = m.target(torch.zeros(4), obs, torch.zeros(4))
    _close(y, 0.99 * (-(0.1 * probs * logp).sum(-1)))  # Q̄ = 0: only the entropy bonus
    _close(m.target(torch.ones(4), obs, torch.ones(4)), torch.ones(4))


@pytest.mark.parametrize("cls,space", [(DiscreteSAC, spaces.Discrete(2)),
                                       (ContinuousSAC, spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32))])
def test_polyak_extremes(cls, space):
    m = cls(observation_space=OBS, action_space=space, seed=0, tau=1.0)
    with torch.no_grad():
        for p in m.critic_params():
            p.add_(torch.randn_like(p))
    m.polyak()
    for p, t in zip(m.critic_params(), m.target_critic_params()):
        assert torch.equal(p, t)
    # τ → 0 limit: SB3's polyak_update with τ = 0 leaves the target unchanged (the agent itself rejects τ = 0)
    from stable_baselines3.common.utils import polyak_update

    before = [t.clone() for t in m.target_critic_params()]
    with torch.no_grad():
        for p in m.critic_params():
            p.add_(1.0)
    polyak_update(m.critic_params(), m.target_critic_params(), 0.0)
    for b, t in zip(before, m.target_critic_params()):
        assert torch.equal(b, t)


def test_rnd_target_frozen_and_predictor_learns_repeated_state():
    rnd = RND(obs_dim=8, seed=0, lr=1e-3)
    seen, unseen = torch.zeros(1, 8), torch.zeros(1, 8)
    seen[0, 2], unseen[0, 5] = 1.0, 1.0
    target_before = [p.clone() for p in rnd.target.parameters()]
    assert all(not p.requires_grad for p in rnd.target.parameters())
    errs = [float(rnd.error(seen))]
    for _ in range(30):
        rnd.train_on(seen, epochs=1)
        errs.append(float(rnd.error(seen)))
    assert all(b < a for a, b in zip(errs, errs[1:]))  # strictly decreasing on the repeated state
    assert float(rnd.error(unseen)) > errs[-1]
    for a, b in zip(target_before, rnd.target.parameters()):
        assert torch.equal(a, b)
    z = rnd.normalise(torch.tensor([1e6, -1e6, 0.0]), update=False)
    assert z.max() <= 2.0 and z.min() >= -2.0 and z[0] == 2.0


def test_ema_running_mean_std():
    rms = EMARunningMeanStd(momentum=0.9)
    rms.update(np.array([1.0, 3.0]))  # first data: the batch moments
    assert rms.mean == pytest.approx(2.0) and rms.var == pytest.approx(1.0)
    rms.update(np.full(7, 5.0))
    assert rms.mean == pytest.approx(0.9 * 2.0 + 0.1 * 5.0)
    assert rms.var == pytest.approx(0.9 * 1.0 + 0.1 * (5.0 - rms.mean) ** 2)


def test_noveld_closed_form_paper():
    """NovelD's Eq. 3: max(e(s') − α e(s), 0) · 1[first visit], here scaled by RND's running sd (σ_e = 2)."""
    e_next, e_cur = torch.tensor([3.0, 1.0, 3.0, 10.0]), torch.tensor([2.0, 4.0, 2.0, 0.0])
    fv = torch.tensor([1.0, 1.0, 0.0, 1.0])
    stats = EMARunningMeanStd(momentum=0.9)
    stats.mean, stats.var, stats.count = np.float64(5.0), np.float64(4.0), 10  # μ_e = 5 (unused), σ_e = 2
    # d = max(e' − 0.5 e, 0) = [2, 0, 2, 10]; d/2 = [1, 0, 1, 5], clipped above at 2; times first visit
    _close(noveld_reward(e_next, e_cur, fv, alpha=0.5, stats=stats, clip=2.0), torch.tensor([1.0, 0.0, 0.0, 2.0]))
    _close(noveld_reward(e_next, e_cur, fv, alpha=0.5, stats=stats, clip=100.0), torch.tensor([1.0, 0.0, 0.0, 5.0]))
    # never negative, whatever the novelties; a revisit scores exactly 0
    g = torch.Generator().manual_seed(0)
    a, b = torch.rand(500, generator=g) * 3, torch.rand(500, generator=g) * 3
    r = noveld_reward(a, b, torch.ones(500), stats=stats, clip=100.0)
    assert (r >= 0).all() and (r == 0).any() and (r > 0).any()
    assert torch.equal(noveld_reward(a, b, torch.zeros(500), stats=stats), torch.zeros(500))
    # the statistics are read, never updated (RND's normaliser folds the stream in)
    before = (float(stats.mean), float(stats.var), stats.count)
    noveld_reward(a, b, torch.ones(500), stats=stats, update=True)
    assert (float(stats.mean), float(stats.var), stats.count) == before


def test_noveld_closed_form_centred_option():
    """The earlier form (an option): normalised by its own running mean and sd, so first visits can score < 0."""
    e_next, e_cur = torch.tensor([3.0, 1.0, 3.0, 10.0]), torch.tensor([2.0, 4.0, 2.0, 0.0])
    fv = torch.tensor([1.0, 1.0, 0.0, 1.0])
    stats = EMARunningMeanStd(momentum=0.9)
    stats.mean, stats.var, stats.count = np.float64(1.0), np.float64(4.0), 10  # μ_d = 1, σ_d = 2
    # d = [2, 0, 2, 10]; z = (d − 1)/2 = [0.5, −0.5, 0.5, 4.5] clipped at 2; times first visit
    r = noveld_reward(e_next, e_cur, fv, alpha=0.5, stats=stats, clip=2.0, form="centred")
    _close(r, torch.tensor([0.5, -0.5, 0.0, 2.0]))
    assert r[1] < 0  # a first visit below a revisit's 0: what the paper form rules out
    # α = 0: reduces to the normalised novelty of s' with NovelD's statistics
    _close(noveld_reward(e_next, e_cur, torch.ones(4), alpha=0.0, stats=stats, clip=100.0, form="centred"),
           (e_next - 1.0) / 2.0)
    with pytest.raises(ValueError, match="noveld_alpha"):
        noveld_reward(e_next, e_cur, fv, alpha=1.5, stats=stats)
    with pytest.raises(ValueError, match="noveld_form"):
        noveld_reward(e_next, e_cur, fv, stats=stats, form="clipped")


def _filled_buffer(alpha, prioritized=True, n=50):
    from kea.buffer import PrioritizedReplayBuffer

    buf = PrioritizedReplayBuffer(64, 3, alpha=alpha, prioritized=prioritized)
    obs = np.zeros((n, 3), np.float32)
    buf.add(obs, obs, np.zeros(n, np.int64), np.zeros(n, np.float32), np.zeros(n, bool), np.ones(n, bool),
            np.zeros(n, bool))
    pri = np.full(n, 0.01)
    pri[7] = 100.0  # one transition with a large TD error
    buf.update_priorities(np.arange(n), pri)
    return buf


def _draw(buf, n, *, beta):
    rng = np.random.default_rng(0)
    out = [buf.sample(40, rng, beta=beta) for _ in range(n // 40)]  # with replacement, 40 ≤ the 50 stored
    return np.concatenate([o[0] for o in out]), np.concatenate([o[2] for o in out])


def test_per_uniform_when_alpha_zero_and_proportional_otherwise():
    uni = _filled_buffer(0.0)
    np.testing.assert_allclose(uni.probabilities(), np.full(50, 1 / 50))
    idx, w = _draw(uni, 4000, beta=0.4)
    assert np.all(w == 1.0) and abs(np.mean(idx == 7) - 1 / 50) < 0.015
    # negative control: α = 0.6 samples the large-error transition far more often, with smaller IS weights
    per = _filled_buffer(0.6)
    p = per.probabilities()
    assert p[7] == pytest.approx((100 + 1e-6) ** 0.6 / ((100 + 1e-6) ** 0.6 + 49 * (0.01 + 1e-6) ** 0.6))
    idx, w = _draw(per, 4000, beta=0.4)
    assert abs(np.mean(idx == 7) - p[7]) < 0.03 and np.mean(idx == 7) > 0.5
    assert np.all(w <= 1.0)
    for _ in range(20):  # per batch (weights are normalised by the batch maximum): the frequent one weighs less
        bi, _, bw = per.sample(40, np.random.default_rng(_), beta=0.4)
        assert bw.max() == 1.0
        if (bi == 7).any() and (bi != 7).any():
            assert np.all(bw[bi == 7] < bw[bi != 7].min())
    # β = 1 weights are exactly (n P)^-1 / max; new transitions enter with the largest priority seen
    idx, _, w = per.sample(40, np.random.default_rng(1), beta=1.0)
    raw = (50 * p[idx]) ** -1.0
    np.testing.assert_allclose(w, raw / raw.max(), rtol=1e-5)
    per.add(np.zeros((1, 3), np.float32), np.zeros((1, 3), np.float32), np.zeros(1, np.int64), np.zeros(1),
            np.zeros(1, bool), np.ones(1, bool), np.zeros(1, bool))
    assert per.probabilities()[50] == pytest.approx(per.probabilities()[7], rel=1e-6)


def test_module_bad_inputs():
    box = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
    with pytest.raises(KEAConfigError, match="Discrete action space"):
        DiscreteSAC(observation_space=OBS, action_space=box)
    with pytest.raises(KEAConfigError, match="Box action space"):
        ContinuousSAC(observation_space=OBS, action_space=spaces.Discrete(2))
    with pytest.raises(KEAConfigError, match="gamma"):
        DiscreteSAC(observation_space=OBS, action_space=spaces.Discrete(2), gamma=1.0)
    with pytest.raises(KEAConfigError, match="tau"):
        DiscreteSAC(observation_space=OBS, action_space=spaces.Discrete(2), tau=0.0)
    with pytest.raises(KEAConfigError, match="alpha"):
        DiscreteSAC(observation_space=OBS, action_space=spaces.Discrete(2), alpha=-0.1)
    with pytest.raises(ValueError, match="ir_clip"):
        RND(obs_dim=3, clip=0.0)
