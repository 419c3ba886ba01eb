"""The compiled batch-1 paths (numpy and torch backends) compute the same decisions as the reference torch paths."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from habi.data import GaussianNormalizer
from habi.fast import CompiledMLP, CompiledTwinMLP, FastHabit, FastPlanner, backend
from habi.model import HabiConfig, Synergy
from habi.nets import mlp
from habi.planner import DiffusionPlanner, PlannerConfig, PlannerNets
from habi.policy import HabitualPolicy

BACKENDS = ["numpy", "torch"]


def _as(xp, x):
    return xp.from_np(np.asarray(x, dtype=np.float32))


@pytest.mark.parametrize("be", BACKENDS)
def test_compiled_mlps_equal_torch_modules(be):
    xp = backend(be)
    torch.manual_seed(0)
    seq = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.LayerNorm(16), torch.nn.Tanh(), torch.nn.Linear(16, 16),
                              torch.nn.LayerNorm(16), torch.nn.Mish(), torch.nn.Linear(16, 3))
    with torch.no_grad():
        seq[1].weight.uniform_(0.5, 1.5)
        seq[1].bias.normal_()
    x = torch.randn(7, 5) * 4
    with torch.no_grad():
        ref = seq(x).numpy()
        got = xp.to_np(CompiledMLP(seq, xp)(_as(xp, x.numpy())))
    np.testing.assert_allclose(got, ref, atol=2e-5, rtol=1e-5)
    a, b = mlp(5, [16, 16], 3), mlp(5, [16, 16], 3)
    with torch.no_grad():
        fa, fb = CompiledTwinMLP(a, b, xp=xp)(_as(xp, x.numpy()))
        np.testing.assert_allclose(xp.to_np(fa), a(x).numpy(), atol=2e-5, rtol=1e-5)
        np.testing.assert_allclose(xp.to_np(fb), b(x).numpy(), atol=2e-5, rtol=1e-5)


def _planner(**kw):
    cfg = PlannerConfig(obs_dim=3, act_dim=2, hidden=16, time_dim=8, steps=3, num_candidates=12, **kw)
    torch.manual_seed(0)
    nets = PlannerNets(cfg=cfg)
    with torch.no_grad():  # distinct target critic, so that using the wrong one would show
        for p in nets.critic_target.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return DiffusionPlanner(config=cfg, nets=nets,
                            normalizer=GaussianNormalizer(mean=(0.5, -1.0, 2.0), std=(2.0, 0.5, 1.0)))


@pytest.mark.parametrize("be", BACKENDS)
@pytest.mark.parametrize("all_steps", [False, True])
def test_fast_planner_equals_reference_given_the_same_draws(be, all_steps):
    planner = _planner(temperature_all_steps=all_steps)
    rng = np.random.default_rng(1)
    s = rng.normal(size=(1, 3)).astype(np.float32)
    noise = rng.standard_normal((3, 12, 2), dtype=np.float32)
    a_ref, q_ref = planner.candidates(torch.from_numpy(s), noise=torch.from_numpy(noise))  # (1, 12, 2), (1, 12)
    fast = FastPlanner(planner, backend=be)
    a = fast.sample(s, noise)
    np.testing.assert_allclose(a, a_ref[0].numpy(), atol=1e-5)
    np.testing.assert_allclose(fast.q_min(s, a), q_ref[0].numpy(), atol=1e-4, rtol=1e-5)
    np.testing.assert_allclose(fast.decide(s, noise), a_ref[0, int(q_ref[0].argmax())].numpy(), atol=1e-5)
    # the target critic scores the softmax rule, as in the reference path
    q_t = planner.q_min(torch.from_numpy(s).repeat(12, 1), a_ref[0], target=True)
    np.testing.assert_allclose(FastPlanner(planner, target=True, backend=be).q_min(s, a), q_t.numpy(), atol=1e-4,
                               rtol=1e-5)


def test_planner_act_uses_normaliser_and_seeded_draws():
    planner = _planner()
    obs = np.array([1.0, -0.5, 3.0], np.float32)
    acts = [DiffusionPlanner(config=planner.config, nets=planner.nets, normalizer=planner.normalizer, seed=4,
                             backend=be).act(obs) for be in BACKENDS]
    noise = np.random.default_rng(4).standard_normal((256, 3, 12, 2), dtype=np.float32)[0]  # the first block's row
    s = torch.from_numpy(planner.normalizer(obs[None]))
    ref = planner.act_normalized(s, noise=torch.from_numpy(noise))[0].numpy()
    for a in acts:
        np.testing.assert_allclose(a, ref, atol=1e-5)


def _policy(scorer="habi", nc=5, latent="sample", conditional=False, planner=None, be="numpy"):
    torch.manual_seed(0)
    model = Synergy(cfg=HabiConfig(obs_dim=3, act_dim=2, latent_dim=6, hidden=16, critic_hidden=16,
                                   conditional_decoder=conditional))
    with torch.no_grad():
        model.critic.q_mean.fill_(-200.0)
        model.critic.q_std.fill_(30.0)
    norm = GaussianNormalizer(mean=(0.5, -1.0, 2.0), std=(2.0, 0.5, 1.0))
    return HabitualPolicy(model=model, normalizer=norm, num_candidates=nc, scorer=scorer, planner=planner,
                          latent=latent, backend=be, seed=2)


@pytest.mark.parametrize("be", BACKENDS)
@pytest.mark.parametrize("case", [dict(), dict(scorer="none", nc=1), dict(latent="mean", nc=1),
                                  dict(conditional=True), dict(scorer="planner"), dict(scorer="planner_target")])
def test_fast_habit_equals_reference_given_the_same_draws(be, case):
    planner = _planner() if case.get("scorer", "").startswith("planner") else None
    pol = _policy(planner=planner, be=be, **case)
    nc = pol.num_candidates
    rng = np.random.default_rng(3)
    for _ in range(4):
        s = rng.normal(size=(1, 3)).astype(np.float32)
        eps = rng.standard_normal((nc, 6), dtype=np.float32)
        ref = pol.act_normalized(torch.from_numpy(s), eps=torch.from_numpy(eps)[None])[0].numpy()
        got = FastHabit(pol, backend=be).decide(s, None if pol.latent == "mean" else eps)
        np.testing.assert_allclose(got, ref, atol=1e-5)


def test_habit_act_uses_normaliser_and_seeded_draws():
    obs = np.array([1.0, -0.5, 3.0], np.float32)
    pol = _policy()
    eps = np.random.default_rng(2).standard_normal((256, 5, 6), dtype=np.float32)[0]
    ref = pol.act_normalized(torch.from_numpy(pol.normalizer(obs[None])), eps=torch.from_numpy(eps)[None])[0].numpy()
    for be in BACKENDS:
        np.testing.assert_allclose(_policy(be=be).act(obs), ref, atol=1e-5)
    with pytest.raises(ValueError, match="backend"):
        _policy(be="jax")


def test_from_pretrained_passes_backend_and_seed(tmp_path):
    pol = _policy()
    pol.save(tmp_path / "habi")
    obs = np.array([1.0, -0.5, 3.0], np.float32)
    back = HabitualPolicy.from_pretrained(tmp_path, backend="torch", seed=2)
    assert back.backend == "torch"
    np.testing.assert_allclose(back.act(obs), pol.act(obs), atol=1e-5)  # same weights, same seeded draws
    planner = _planner()
    planner.save(tmp_path / "planner")
    p2 = DiffusionPlanner.from_pretrained(tmp_path, backend="reference", num_candidates=7)
    assert p2.backend == "reference" and p2.config.num_candidates == 7


@pytest.mark.parametrize("be", BACKENDS)
@pytest.mark.parametrize("case", [dict(), dict(scorer="none", nc=1), dict(latent="mean", nc=1),
                                  dict(conditional=True), dict(scorer="planner")])
def test_act_batch_equals_act_one_by_one_from_the_same_generator(be, case):
    """act_batch runs the compiled path: B states at once give exactly act()'s actions, in the stream's order
    (across a block boundary of the noise stream), and the reference torch path of the same draws."""
    planner = _planner() if case.get("scorer", "").startswith("planner") else None
    obs = np.random.default_rng(5).normal(size=(300, 3)).astype(np.float32)  # 300 > one 256-draw block
    one = _policy(planner=planner, be=be, **case)
    batch = _policy(planner=planner, be=be, **case)
    ref = np.stack([one.act(o) for o in obs])
    got = np.concatenate([batch.act_batch(obs[:7]), batch.act_batch(obs[7:])])
    np.testing.assert_allclose(got, ref, atol=1e-5)
    # the same draws through the reference torch module path (negative control below: other draws differ)
    pol = _policy(planner=planner, be=be, **case)
    eps = np.random.default_rng(2).standard_normal((256, pol.num_candidates, 6), dtype=np.float32)[:5]
    s = torch.from_numpy(pol.normalizer(obs[:5]))
    np.testing.assert_allclose(pol.act_batch(obs[:5]), pol.act_normalized(s, eps=torch.from_numpy(eps)).numpy(),
                               atol=1e-5)
    if pol.latent == "sample":
        other = _policy(planner=planner, be=be, **case)
        other._rng = np.random.default_rng(99)
        assert not np.allclose(other.act_batch(obs[:50]), ref[:50], atol=1e-3)
