"""Tests of SOLD's mathematics: each asserts something that fails if the method were wrong (with a negative control)."""

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from sold.aggregator import PerStepMLP, SlotAggregationTransformer, alibi_causal_bias
from sold.data import adjusted_rand_index, collect_episodes, foreground_ari
from sold.dreamer import (
    GaussianActorHead,
    ImaginationLearner,
    Moments,
    TwoHot,
    lambda_returns,
    symexp,
    symlog,
)
from sold.dynamics import OCVPDynamics
from sold.envs import PALETTE, ColorReach2D
from sold.errors import SoldError
from sold.savi import SAVi, SlotAttention, frames_to_video

torch.set_num_threads(1)


def tiny_savi(**kw):
    torch.manual_seed(0)
    args = dict(image_size=16, num_slots=3, slot_dim=8, feat_dim=8, enc_channels=4, enc_layers=2, kernel=3,
                dec_channels=4, broadcast=4, heads=2, mlp_hidden=8)
    args.update(kw)
    return SAVi(**args)


# ---------------------------------------------------------------- slot attention
def test_attention_columns_sum_to_one_over_slots_and_rows_after_renormalisation():
    torch.manual_seed(0)
    sa = SlotAttention(slot_dim=8, feat_dim=6, mlp_hidden=8)
    a, a_bar = sa.attention(torch.randn(2, 20, 6), torch.randn(2, 4, 8))
    torch.testing.assert_close(a.sum(1), torch.ones(2, 20))      # softmax over slots
    torch.testing.assert_close(a_bar.sum(2), torch.ones(2, 4))   # renormalised over locations
    assert not torch.allclose(a.sum(2), torch.ones(2, 4))        # negative control: raw rows do not sum to 1


def test_permuting_initial_slots_permutes_the_outputs():
    m = tiny_savi()
    video = torch.rand(2, 3, 3, 16, 16)
    init = torch.randn(2, 3, 8)
    perm = torch.tensor([2, 0, 1])
    s1 = m.encode(video, init_slots=init)
    s2 = m.encode(video, init_slots=init[:, perm])
    torch.testing.assert_close(s2, s1[:, :, perm], atol=1e-5, rtol=1e-5)
    assert (s2 - s1).abs().max() > 1e-3  # negative control: the order did change


def test_slot_attention_invariant_to_joint_permutation_of_locations_and_positions():
    m = tiny_savi()
    x = torch.rand(1, 3, 16, 16)
    h = m.cnn(x).permute(0, 2, 3, 1).flatten(1, 2)                          # [1, N, C] CNN features
    pos = m.enc_pos.proj(m.enc_pos.grid).flatten(0, 1)                      # [N, C] positional embedding
    init = m.init_slots.expand(1, -1, -1)
    perm = torch.randperm(h.shape[1], generator=torch.Generator().manual_seed(0))
    ref, _ = m.corrector(m.enc_mlp(h + pos), init, 3)
    joint, _ = m.corrector(m.enc_mlp(h[:, perm] + pos[perm]), init, 3)
    torch.testing.assert_close(joint, ref, atol=1e-5, rtol=1e-5)
    only_feat, _ = m.corrector(m.enc_mlp(h[:, perm] + pos), init, 3)        # negative control
    assert (only_feat - ref).abs().max() > 1e-4


# ---------------------------------------------------------------- decoder
def test_decoder_masks_are_a_partition_and_output_in_unit_interval():
    m = tiny_savi()
    slots = torch.randn(2, 3, 3, 8) * 3
    img, masks = m.decode(slots)
    assert img.shape == (2, 3, 3, 16, 16) and masks.shape == (2, 3, 3, 16, 16)
    assert masks.min() >= 0 and img.min() >= 0 and img.max() <= 1
    torch.testing.assert_close(masks.sum(2), torch.ones(2, 3, 16, 16))
    _, one = m.decode(slots[:, :, :1])                                      # one slot: the mask is all ones
    torch.testing.assert_close(one, torch.ones_like(one))
    assert masks.max() < 1  # negative control: with 3 slots no mask is trivially 1 everywhere


# ---------------------------------------------------------------- OCVP dynamics
def tiny_dyn(**kw):
    torch.manual_seed(0)
    return OCVPDynamics(slot_dim=8, action_dim=2, token_dim=16, num_layers=2, heads=2, ff_dim=16, **kw).eval()


def test_dynamics_equivariant_to_slot_permutations():
    d = tiny_dyn()
    s, a = torch.randn(2, 4, 3, 8), torch.randn(2, 4, 2)
    perm = torch.tensor([1, 2, 0])
    torch.testing.assert_close(d(s[:, :, perm], a), d(s, a)[:, :, perm], atol=1e-5, rtol=1e-5)
    out = d(s, a)
    assert (out[:, :, perm] - out).abs().max() > 1e-3  # negative control: slots are not all equal


def test_dynamics_causal_in_time_and_rollout_shapes():
    d = tiny_dyn()
    s, a = torch.randn(2, 5, 3, 8), torch.randn(2, 5, 2)
    s2, a2 = s.clone(), a.clone()
    s2[:, 3:] += 1.0
    a2[:, 3:] += 1.0
    torch.testing.assert_close(d(s2, a2)[:, :3], d(s, a)[:, :3])
    assert (d(s2, a2)[:, 3:] - d(s, a)[:, 3:]).abs().max() > 1e-3        # negative control
    assert d.rollout(s[:, :3], a[:, :4], 2).shape == (2, 2, 3, 8)
    s3 = s.clone()
    s3[:, 0] += 1.0                                                          # the past does matter
    assert (d(s3, a)[:, 2] - d(s, a)[:, 2]).abs().max() > 1e-4


def test_dynamics_with_zeroed_output_layer_is_the_identity():
    d = tiny_dyn()
    torch.nn.init.zeros_(d.out.weight)
    torch.nn.init.zeros_(d.out.bias)
    s, a = torch.randn(2, 4, 3, 8), torch.randn(2, 4, 2)
    torch.testing.assert_close(d(s, a), s)
    torch.testing.assert_close(d.rollout(s[:, :2], a[:, :3], 2), s[:, 1:2].expand(2, 2, 3, 8))
    d2 = tiny_dyn(residual=False)
    assert (d2(s, a) - s).abs().max() > 1e-2  # negative control: without the residual it is not the identity


def test_dynamics_dropout_makes_train_mode_stochastic_only():
    d = tiny_dyn(dropout=0.5)
    s, a = torch.randn(1, 3, 3, 8), torch.randn(1, 3, 2)
    torch.testing.assert_close(d(s, a), d(s, a))
    d.train()
    assert (d(s, a) - d(s, a)).abs().max() > 0


# ---------------------------------------------------------------- slot aggregation transformer
def tiny_agg():
    torch.manual_seed(0)
    return SlotAggregationTransformer(slot_dim=8, out_dim=5, token_dim=16, num_layers=2, heads=2, ff_dim=16,
                                      head_hidden=16)


def test_aggregator_invariant_to_slot_order_and_causal():
    g = tiny_agg()
    s = torch.randn(2, 4, 3, 8)
    perm = torch.tensor([2, 0, 1])
    torch.testing.assert_close(g(s[:, :, perm]), g(s), atol=1e-5, rtol=1e-5)
    s2 = s.clone()
    s2[:, 2:] += 1.0
    torch.testing.assert_close(g(s2)[:, :2], g(s)[:, :2])
    assert (g(s2)[:, 2:] - g(s)[:, 2:]).abs().max() > 1e-4                 # negative control
    s3 = s.clone()
    s3[:, 0] += 1.0
    assert (g(s3)[:, 3] - g(s)[:, 3]).abs().max() > 1e-5                   # later outputs see the past
    att = g.output_attention_on_slots(s)
    torch.testing.assert_close(att.sum(-1), torch.ones(2, 4))


def test_aggregator_cache_equals_forward_on_the_whole_history():
    """step() over chunks of steps (a key/value cache) gives forward()'s outputs; the ALiBi offset matters."""
    g = tiny_agg()
    s = torch.randn(2, 6, 3, 8)
    full = g(s)
    out, cache = g.step(s[:, :2])
    outs = [out]
    for t in range(2, 6):
        out, cache = g.step(s[:, t: t + 1], cache)
        outs.append(out)
    torch.testing.assert_close(torch.cat(outs, 1), full, atol=1e-5, rtol=1e-5)
    assert cache["t"] == 6
    # negative control: the last step without the cached past is another output
    alone, _ = g.step(s[:, 5:])
    assert (alone - full[:, 5:]).abs().max() > 1e-4
    with pytest.raises(SoldError, match="slots per step"):
        g.step(torch.randn(2, 1, 4, 8), cache)
    mlp, z = PerStepMLP(in_dim=6, out_dim=3, hidden=8), torch.randn(2, 5, 6)     # the holistic head: per step
    y, c = mlp.step(z[:, 4:], {"t": 4})
    torch.testing.assert_close(y, mlp(z)[:, 4:])
    assert c["t"] == 5


def test_cached_actor_in_imagination_equals_recomputing_the_history():
    """imagine() feeds the slot-aggregation actor one new step per call (GrowingHistory); the states, actions and
    the actor's gradients equal those of an actor that recomputes the whole history at every step."""
    from torch import nn

    class Recompute(nn.Module):  # the same actor without step(): imagine() recomputes the history
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m(x)

    dyn = OCVPDynamics(slot_dim=8, action_dim=2, token_dim=16, num_layers=1, heads=2, ff_dim=16, dropout=0.0)
    th = TwoHot(11)
    res = []
    for wrap in (False, True):
        torch.manual_seed(0)
        actor = SlotAggregationTransformer(slot_dim=8, out_dim=4, token_dim=16, num_layers=2, heads=2, ff_dim=16,
                                           head_hidden=16)
        critic = SlotAggregationTransformer(slot_dim=8, out_dim=11, token_dim=16, num_layers=1, heads=2, ff_dim=16,
                                            head_hidden=16)
        lr = ImaginationLearner(actor=Recompute(actor) if wrap else actor, critic=critic, action_dim=2, twohot=th,
                                horizon=4)
        ctx, ctx_a = torch.randn(2, 3, 3, 8), torch.rand(2, 2, 2)
        torch.manual_seed(1)
        states, actions, ent = lr.imagine(lambda x, a: dyn(x, a)[:, -1], ctx, ctx_a)
        loss = states.square().sum() + actions.sum() + ent.sum()
        grads = torch.autograd.grad(loss, list(actor.parameters()), allow_unused=True)
        res.append((states, actions, grads))
    (s1, a1, g1), (s2, a2, g2) = res
    torch.testing.assert_close(s1, s2, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(a1, a2, atol=1e-5, rtol=1e-5)
    for x, y in zip(g1, g2):
        torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-4)
    assert any(x is not None and x.abs().max() > 0 for x in g1)  # the actor does get gradients through the dynamics


def test_alibi_bias_values():
    b = alibi_causal_bias(3, 2, 2)
    assert b.shape == (2, 6, 6)
    assert torch.isinf(b[:, 0, 2]).all() and b[0, 2, 0] == -(2 ** -4) and b[1, 4, 0] == -2 * (2 ** -8)
    assert (b[:, 2, 3] == 0).all()  # same step: no penalty


# ---------------------------------------------------------------- TwoHot / symlog
def test_symexp_inverts_symlog_float64():
    x = torch.tensor([-1e4, -3.5, -1e-6, 0.0, 2.0, 1e5], dtype=torch.float64)
    torch.testing.assert_close(symexp(symlog(x)), x, rtol=1e-12, atol=1e-12)
    assert not torch.allclose(symlog(x), x)


def test_twohot_weights_linear_sum_to_one_and_mean():
    th = TwoHot(11, -5.0, 5.0)                                              # bins at -5, -4, …, 5 (symlog space)
    on = th.encode(symexp(torch.tensor([2.0], dtype=torch.float64)))
    assert on[0, 7] == pytest.approx(1.0) and on.sum() == pytest.approx(1.0)
    w = th.encode(symexp(torch.tensor([2.25], dtype=torch.float64)))[0]
    assert w[7] == pytest.approx(0.75) and w[8] == pytest.approx(0.25) and (w > 0).sum() == 2
    assert w.sum() == pytest.approx(1.0)
    x = torch.tensor([0.3, -7.0, 40.0], dtype=torch.float64)
    logits = torch.log(th.encode(x).clamp_min(1e-30))                       # peaked at symlog(x)
    torch.testing.assert_close(th.mean(logits), x, rtol=1e-6, atol=1e-6)
    # log_prob is maximised when the logits match the target
    lp_match = th.log_prob(logits, x)
    lp_other = th.log_prob(torch.zeros_like(logits), x)
    assert (lp_match > lp_other).all()
    with pytest.raises(SoldError, match="num_bins"):
        TwoHot(1)


# ---------------------------------------------------------------- λ-returns
def test_lambda_returns_hand_example_and_special_cases():
    r = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)
    v = torch.tensor([[10.0, 20.0, 30.0]], dtype=torch.float64)
    got = lambda_returns(r, v, gamma=0.96, lam=0.95)
    torch.testing.assert_close(got, torch.tensor([[30.629, 31.9616, 31.8]], dtype=torch.float64), atol=1e-3,
                               rtol=0)
    g = 0.9
    one = lambda_returns(r, v, gamma=g, lam=1.0)                            # Σ γ^j r + γ^{H−k} V_H
    want = [1 + g * 2 + g**2 * 3 + g**3 * 30, 2 + g * 3 + g**2 * 30, 3 + g * 30]
    torch.testing.assert_close(one, torch.tensor([want], dtype=torch.float64))
    zero = lambda_returns(r, v, gamma=g, lam=0.0)                           # one-step TD targets
    torch.testing.assert_close(zero, r + g * v)
    assert not torch.allclose(one, zero)
    for bad in ({"gamma": 1.5, "lam": 0.5}, {"gamma": 0.5, "lam": -0.1}, {"gamma": float("nan"), "lam": 0.5}):
        with pytest.raises(SoldError, match="gamma|lam"):
            lambda_returns(r, v, **bad)


def test_moments_scale_and_shift_invariance():
    m = Moments(decay=0.0)                                                   # converged immediately
    x = torch.randn(1000, dtype=torch.float64) * 0.1
    _, s = m(x)
    assert s >= 1.0
    wide = Moments(decay=0.0)
    _, s2 = wide(x * 100)
    assert s2 > 5
    v = torch.randn(1000) * 30
    a, b = Moments(decay=0.0), Moments(decay=0.0)
    lo1, sc1 = a(v)
    lo2, sc2 = b(v + 1000)
    adv1, adv2 = (v - v.mean()) / sc1, ((v + 1000) - (v.mean() + 1000)) / sc2
    torch.testing.assert_close(adv1, adv2, atol=1e-3, rtol=1e-4)
    assert abs(float(lo2 - lo1) - 1000) < 1e-2


def test_actor_std_and_mean_bounds_and_released_clamp():
    head = GaussianActorHead(2)
    raw = torch.linspace(-50, 50, 400).reshape(100, 4)
    d = head(raw)
    std, mean = d.base_dist.stddev, d.base_dist.mean
    assert std.min() >= 0.1 - 1e-7 and std.max() <= 1.0 and mean.abs().max() <= 1.0
    rel = GaussianActorHead(2, clamp_pre_tanh=True)(torch.tensor([[5.0, -5.0, 0.0, 0.0]])).base_dist.mean
    torch.testing.assert_close(rel, torch.tensor([[math.tanh(1), -math.tanh(1)]]))
    assert head(torch.tensor([[5.0, -5.0, 0.0, 0.0]])).base_dist.mean[0, 0] > 0.99  # paper default is not capped


# ---------------------------------------------------------------- learning updates
def test_every_trainable_parameter_changes_in_an_update():
    from sold.world import SlotWorldModel

    savi = tiny_savi()
    th = TwoHot(21)
    wm = SlotWorldModel(savi=savi, action_dim=2, twohot=th, token_dim=16, num_layers=1, heads=2, ff_dim=16,
                        head_hidden=16, dropout=0.0)

    def head(out):
        return SlotAggregationTransformer(slot_dim=8, out_dim=out, token_dim=16, num_layers=1, heads=2, ff_dim=16,
                                          head_hidden=16)

    lr = ImaginationLearner(actor=head(4), critic=head(21), action_dim=2, twohot=th, horizon=3, actor_lr=1e-2,
                            critic_lr=1e-2)
    torch.manual_seed(1)
    video = torch.rand(2, 5, 3, 16, 16)
    lat = wm.encode(video)
    acts = torch.rand(2, 5, 2) * 2 - 1
    rew = torch.randn(2, 5)
    rew[:, 0] = float("nan")
    mods = {"dynamics": wm.dynamics, "reward": wm.reward, "actor": lr.actor, "critic": lr.critic}
    before = {k: [p.detach().clone() for p in m.parameters()] for k, m in mods.items()}
    wm.train_step(lat, video, acts, rew, context=2, horizon=3)  # the zero-initialised reward layer moves first
    out = wm.train_step(lat, video, acts, rew, context=2, horizon=3)
    assert math.isfinite(out["reward_loss"])                                # the NaN first reward is masked
    frozen = [p.detach().clone() for p in savi.parameters()]
    lr.update(wm.predict_next, wm.reward, lat[:, :2], acts[:, :1])
    for k, m in mods.items():
        for p0, p in zip(before[k], m.parameters()):
            assert not torch.equal(p0, p), f"a parameter of {k} did not change"
    for p0, p in zip(frozen, savi.parameters()):                            # negative control: SAVi is frozen
        assert torch.equal(p0, p)


def test_pretraining_is_deterministic_given_the_seed():
    from sold.world import pretrain_autoencoder

    frames = np.random.default_rng(0).integers(0, 255, (4, 5, 3, 16, 16), dtype=np.uint8)
    curves = []
    for seed in (0, 0, 1):
        m = tiny_savi()
        curves.append(pretrain_autoencoder(m, frames, steps=3, batch=2, seq_len=2, lr=1e-3, seed=seed))
    assert curves[0] == curves[1] and curves[0] != curves[2]


# ---------------------------------------------------------------- environment and metric
def test_env_reward_target_and_masks():
    env = ColorReach2D(num_objects=3, task="distinct", reward="dense")
    obs, info = env.reset(seed=3)
    assert obs.shape == (32, 32, 3) and obs.dtype == np.uint8
    cols = [tuple(c) for c in info["object_colors"]]
    odd = info["target"]
    assert sum(c == cols[odd] for c in cols) == 1 and len({c for i, c in enumerate(cols) if i != odd}) == 1
    obs, r, term, trunc, info = env.step(np.array([0.5, -0.5]))
    assert r == pytest.approx(-np.linalg.norm(info["gripper"] - info["object_positions"][odd]))
    assert set(np.unique(info["masks"])) <= set(range(5)) and (info["masks"] == 4).any()
    spec = ColorReach2D(num_objects=2, task="specific", reward="sparse")
    _, info = spec.reset(seed=0)
    assert tuple(info["object_colors"][info["target"]]) == tuple(PALETTE[0])
    with pytest.raises(SoldError, match="num_objects"):
        ColorReach2D(num_objects=2, task="distinct")
    with pytest.raises(SoldError, match="action"):
        env.step(np.zeros(3))


def test_ari_and_foreground_ari():
    a = np.array([0, 0, 1, 1, 2, 2])
    assert adjusted_rand_index(a, a) == pytest.approx(1.0)
    assert adjusted_rand_index(a, np.array([5, 5, 3, 3, 9, 9])) == pytest.approx(1.0)  # label names do not matter
    assert adjusted_rand_index(a, np.array([0, 1, 2, 0, 1, 2])) < 0.1
    segs = np.zeros((1, 4, 4), int)
    segs[0, :2] = 1
    segs[0, 2:, :2] = 2
    masks = np.zeros((1, 3, 4, 4))
    masks[0, 0] = (segs[0] == 0)
    masks[0, 1] = (segs[0] == 1)
    masks[0, 2] = (segs[0] == 2)
    assert foreground_ari(segs, masks) == pytest.approx(1.0)
    assert foreground_ari(segs, masks[:, [0, 0, 0]]) == pytest.approx(0.0)  # negative control: one slot for all


# ---------------------------------------------------------------- bad input
def test_bad_inputs_are_refused_with_clear_errors():
    from sold.config import AgentConfig, AutoencoderConfig
    from sold.world import SlotWorldModel

    m = tiny_savi()
    with pytest.raises(SoldError, match="uint8"):
        m.encode(torch.randint(0, 255, (1, 2, 3, 16, 16)))                  # int64 frames
    with pytest.raises(SoldError, match="not in \\[0, 1\\]"):
        m.encode(torch.rand(1, 2, 3, 16, 16) * 255)
    with pytest.raises(SoldError, match="16×16"):
        m.encode(torch.rand(1, 2, 3, 32, 32))
    with pytest.raises(SoldError, match="num_slots"):
        tiny_savi(num_slots=0)
    with pytest.raises(SoldError, match="divisible"):
        tiny_savi(slot_dim=9)
    with pytest.raises(ValueError, match="min_context"):
        AgentConfig(min_context=4, max_context=3)
    with pytest.raises(ValueError, match="gamma"):
        AgentConfig(gamma=1.2)
    with pytest.raises(ValueError, match="lam"):
        AgentConfig(lam=-0.5)
    with pytest.raises(ValueError, match="num_bins"):
        AgentConfig(num_bins=1)
    with pytest.raises(ValueError, match="divisible"):
        AutoencoderConfig(slot_dim=30, heads=4)
    wm = SlotWorldModel(savi=m, action_dim=2, twohot=TwoHot(5), token_dim=16, num_layers=1, heads=2, ff_dim=16,
                        head_hidden=8)
    lat = wm.encode(torch.rand(1, 4, 3, 16, 16))
    with pytest.raises(SoldError, match="sequence length"):
        wm.losses(lat, torch.rand(1, 4, 3, 16, 16), torch.zeros(1, 4, 2), None, context=2, horizon=3)
    with pytest.raises(SoldError, match="action_dim"):
        wm.dynamics(lat, torch.zeros(1, 4, 3))


def test_collect_episodes_convention():
    env = ColorReach2D(num_objects=3, max_steps=5)
    ep = collect_episodes(env, 2, seed=0)
    assert ep.frames.shape == (2, 6, 32, 32, 3) and np.isnan(ep.rewards[:, 0]).all()
    assert (ep.actions[:, 0] == 0).all() and np.isfinite(ep.rewards[:, 1:]).all()
    assert frames_to_video(ep.frames).shape == (2, 6, 3, 32, 32)
    np.testing.assert_array_equal(collect_episodes(env, 1, seed=4).frames, collect_episodes(env, 1, seed=4).frames)


def test_each_autoencoder_is_pretrained_with_its_own_learning_rate(monkeypatch):
    """SAVi gets ``ae.lr``, the holistic AE ``ae.holistic_lr`` (two knobs, each tuned by ``reproduce --task ae-lr``)."""
    import sold.agent as agent_mod
    from sold.config import AgentConfig, AutoencoderConfig

    seen = {}

    def fake(model, frames, *, lr, **kw):
        seen[type(model).__name__] = lr
        return [0.0]

    monkeypatch.setattr(agent_mod, "pretrain_autoencoder", fake)
    env = ColorReach2D(num_objects=3, task="distinct", reward="dense")
    ac = AutoencoderConfig(lr=2e-3, holistic_lr=5e-4, pretrain_episodes=1, pretrain_steps=1)
    for rep in ("slots", "holistic"):
        agent_mod.SOLD(env, config=AgentConfig(num_bins=31), ae_config=ac, representation=rep).pretrain()
    assert seen == {"SAVi": 2e-3, "HolisticAE": 5e-4}
    assert seen["SAVi"] != seen["HolisticAE"]                               # negative control: not one shared lr


def test_lr_grids_are_validated_and_of_equal_size():
    from sold.config import Config

    with pytest.raises(ValueError, match="holistic_lr_grid"):
        Config(holistic_lr_grid=(1e-3, -1.0, 1e-2))
    with pytest.raises(ValueError, match="same size"):
        Config(lr_grid=(1e-3, 3e-3), holistic_lr_grid=(1e-3, 3e-3, 1e-2))
    with pytest.raises(ValueError, match="holistic_lr"):
        from sold.config import AutoencoderConfig
        AutoencoderConfig(holistic_lr=0.0)
    Config(lr_grid=(1e-3,), holistic_lr_grid=(3e-3,))                       # equal size, different values: fine


def test_autoencoder_lr_grids_are_validated_and_of_equal_size():
    from sold.config import Config

    with pytest.raises(ValueError, match="same size"):
        Config(ae_lr_grid=(1e-3, 2e-3, 4e-3), holistic_ae_lr_grid=(5e-4, 1e-3))
    with pytest.raises(ValueError, match="ae_lr_grid"):
        Config(ae_lr_grid=(1e-3, 0.0, 4e-3))
    Config(ae_lr_grid=(1e-3, 2e-3), holistic_ae_lr_grid=(2.5e-4, 5e-4))      # equal size, own values: fine


def test_rl_long_task_is_the_main_run_plus_behaviour_on_its_own_budget():
    from sold.config import BUDGETS, RL_LONG_BUDGETS
    from sold.reproduce import EXPERIMENTS, TASKS, behaviour

    assert TASKS["rl-long"] == EXPERIMENTS + [behaviour] and behaviour not in EXPERIMENTS
    full = RL_LONG_BUDGETS.pick(quick=False, smoke=False)
    assert full.seeds == 3 and full.rl_steps == 20_000
    # everything but the seeds and the RL budget is the main run's, so its world-model numbers are comparable
    assert (full.ae, full.agent, full.env, full.wm_steps) == (BUDGETS.full.ae, BUDGETS.full.agent, BUDGETS.full.env,
                                                             BUDGETS.full.wm_steps)
    assert BUDGETS.full.rl_steps < full.rl_steps


def test_savi_long_task_is_the_main_run_with_longer_pretraining_only():
    from sold.config import BUDGETS, SAVI_LONG_BUDGETS
    from sold.reproduce import EXPERIMENTS, TASK_BUDGETS, TASKS

    assert TASKS["savi-long"] == EXPERIMENTS and TASK_BUDGETS["savi-long"] is SAVI_LONG_BUDGETS
    full, main = SAVI_LONG_BUDGETS.pick(quick=False, smoke=False), BUDGETS.full
    assert full.ae.pretrain_steps == 8000 > main.ae.pretrain_steps
    # both autoencoders get the longer budget (one field), and everything else is the main run's
    assert replace(full.ae, pretrain_steps=main.ae.pretrain_steps) == main.ae
    assert (full.agent, full.env, full.wm_steps, full.seeds) == (main.agent, main.env, main.wm_steps, main.seeds)


def test_reproduce_rejects_an_unknown_task(tmp_path):
    from sold.reproduce import reproduce

    with pytest.raises(SoldError, match="task"):
        reproduce(quick=False, smoke=True, out=tmp_path, seed=0, task="nope")
    assert not any(tmp_path.iterdir())


def test_update_time_profile_parts_add_up_to_the_update():
    from sold.agent import SOLD
    from sold.config import AgentConfig, AutoencoderConfig

    env = ColorReach2D(num_objects=3, task="distinct", reward="dense", max_steps=12)
    agent = SOLD(env, config=AgentConfig(num_bins=31, batch=2, dyn_horizon=4, imag_horizon=3, token_dim=16,
                                         heads=2, ff_dim=16, head_hidden=16),
                 ae_config=AutoencoderConfig(), autoencoder=tiny_savi(image_size=32, num_slots=3, slot_dim=8),
                 representation="slots", seed=0)
    ep = collect_episodes(env, 2, seed=0)
    for e in range(2):
        agent.buffer.start(ep.frames[e, 0], 2)
        for t in range(1, ep.frames.shape[1]):
            agent.buffer.add(ep.frames[e, t], ep.actions[e, t], ep.rewards[e, t])
    agent._update()                                                      # warm-up
    parts: dict = {}
    import time
    t0 = time.perf_counter()
    agent._update(parts)
    wall = time.perf_counter() - t0
    assert set(parts) == {"encode", "world_model", "imagination"} and all(v > 0 for v in parts.values())
    assert 0.9 * wall <= sum(parts.values()) <= wall                    # no part missing, none counted twice


def test_update_counts_scale_with_the_transformer_width_not_the_operator_count():
    """count_update: halving the transformers' width cuts their matrix arithmetic about 4× (d² weights) and leaves
    the operator count and the autoencoder's convolutions unchanged (the same graph)."""
    from sold.agent import SOLD
    from sold.config import AgentConfig, AutoencoderConfig
    from sold.reproduce import count_update

    env = ColorReach2D(num_objects=3, task="distinct", reward="dense", max_steps=12)
    ep = collect_episodes(env, 2, seed=0)
    counts = []
    for width in (32, 16):
        torch.manual_seed(0)
        agent = SOLD(env, config=AgentConfig(num_bins=31, batch=2, dyn_horizon=4, imag_horizon=3, token_dim=width,
                                             heads=2, ff_dim=2 * width, head_hidden=2 * width),
                     ae_config=AutoencoderConfig(), autoencoder=tiny_savi(image_size=32, num_slots=3, slot_dim=8),
                     representation="slots", seed=0)
        for e in range(2):
            agent.buffer.start(ep.frames[e, 0], 2)
            for t in range(1, ep.frames.shape[1]):
                agent.buffer.add(ep.frames[e, t], ep.actions[e, t], ep.rewards[e, t])
        agent._update()
        counts.append(count_update(agent))
    wide, narrow = counts
    assert wide["ops"] == narrow["ops"] > 1000
    assert wide["conv_gflop"] == pytest.approx(narrow["conv_gflop"]) and wide["conv_gflop"] > 0
    ratio = (wide["gflop"] - wide["conv_gflop"]) / (narrow["gflop"] - narrow["conv_gflop"])
    assert 2.5 < ratio < 4.5                                           # mostly d² products; attention is d·T²


def test_stage_a_job_hands_its_trained_autoencoder_to_stage_b():
    """The weights and latents an ``ae_job`` returns rebuild the same encoder in another job (numpy round trip)."""
    from dataclasses import replace

    from sold.config import BUDGETS
    from sold.reproduce import _build_ae, _data, ae_job

    cfg = replace(BUDGETS.smoke, ae=replace(BUDGETS.smoke.ae, pretrain_steps=2))
    r = ae_job(cfg, 0, "slots", 1e-3, keep=True)
    vid = _data(cfg, 0)["vid"]["val"]
    with torch.no_grad():
        again = _build_ae(cfg, "slots", r["state"]).encode(vid).numpy()
        fresh = _build_ae(cfg, "slots").encode(vid).numpy()
    np.testing.assert_allclose(again, r["latents"]["val"], atol=1e-5)
    assert np.abs(fresh - r["latents"]["val"]).max() > 1e-3                # negative control: untrained weights differ
    assert np.isfinite(r["recon_val"]) and -1 <= r["ari_val"] <= 1


# ---------------------------------------------------------------- key/value cache of the rollouts
def _ocvp(dropout=0.1):
    torch.manual_seed(0)
    return OCVPDynamics(slot_dim=8, action_dim=2, token_dim=16, num_layers=2, heads=4, ff_dim=32, dropout=dropout)


def test_ocvp_cached_rollout_equals_the_uncached_one_in_value_and_gradient():
    m = _ocvp().eval()
    torch.manual_seed(1)
    ctx = torch.randn(3, 3, 5, 8, requires_grad=True)
    acts = torch.randn(3, 3 + 5, 2, requires_grad=True)
    slow = m.rollout(ctx, acts, 6, cache=False)
    fast = m.rollout(ctx, acts, 6, cache=True)
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=1e-5)
    w = torch.randn_like(slow)
    g_slow = torch.autograd.grad((slow * w).sum(), (ctx, acts))
    g_fast = torch.autograd.grad((fast * w).sum(), (ctx, acts))
    for a, b in zip(g_fast, g_slow):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    # negative control: the cache is really read — corrupt one cached key and the next prediction moves
    _, kv = m.step(ctx[:, :2].detach(), acts[:, :2].detach())
    nxt, _ = m.step(ctx[:, 2:3].detach(), acts[:, 2:3].detach(), kv)
    bad = {"t": kv["t"], "kv": [(k + 1.0, v) for k, v in kv["kv"]]}
    assert (m.step(ctx[:, 2:3].detach(), acts[:, 2:3].detach(), bad)[0] - nxt).abs().max() > 1e-3


def test_critic_step_from_the_shared_pass_equals_a_second_pass_on_detached_states():
    """update() reads values and the critic loss from one critic pass, taking gradients to the critic's parameters
    only: the critic moves exactly as with a second pass on detached states, and the dynamics and reward head
    receive no gradients."""
    import copy

    dyn = OCVPDynamics(slot_dim=8, action_dim=2, token_dim=16, num_layers=1, heads=2, ff_dim=16, dropout=0.0)
    th = TwoHot(11)
    torch.manual_seed(0)

    def agg(out):
        return SlotAggregationTransformer(slot_dim=8, out_dim=out, token_dim=16, num_layers=1, heads=2, ff_dim=16,
                                          head_hidden=16)

    reward = agg(11)
    nn_init = torch.nn.init
    for p in reward.head[-1].parameters():                     # non-zero rewards, so the returns carry signal
        nn_init.normal_(p, std=0.5)
    lr = ImaginationLearner(actor=agg(4), critic=agg(11), action_dim=2, twohot=th, horizon=4, critic_lr=1e-2)
    for p in lr.critic.head[-1].parameters():
        nn_init.normal_(p, std=0.5)
    lr.target_critic.load_state_dict(lr.critic.state_dict())
    ref = copy.deepcopy(lr)
    ctx, ctx_a = torch.randn(3, 2, 3, 8), torch.rand(3, 1, 2)

    def world(x, a):
        return dyn(x, a)[:, -1]

    before = [p.detach().clone() for p in lr.critic.parameters()]
    torch.manual_seed(1)
    lr.update(world, reward, ctx, ctx_a)
    # reference: the same imagined states, the critic loss from a second pass on detached states, .backward()
    torch.manual_seed(1)
    states, _, _ = ref.imagine(world, ctx, ctx_a)
    c, h = 2, 4
    rewards = th.mean(reward(states)[:, c:])
    returns = lambda_returns(rewards, th.mean(ref.critic(states)[:, c:]), gamma=ref.gamma, lam=ref.lam)
    with torch.no_grad():
        v_targ = th.mean(ref.target_critic(states)[:, c - 1: c - 1 + h])
    disc = ref.gamma ** torch.arange(h, dtype=returns.dtype)
    logits = ref.critic(states.detach())[:, c - 1: c - 1 + h]
    loss = (disc * -th.log_prob(logits, returns.detach())).mean() + 0.1 * (disc * -th.log_prob(logits, v_targ)).mean()
    ref.critic_opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(ref.critic.parameters(), ref.grad_clip)
    ref.critic_opt.step()
    moved = False
    for p0, p, q in zip(before, lr.critic.parameters(), ref.critic.parameters()):
        torch.testing.assert_close(p, q, atol=1e-7, rtol=1e-6)
        moved = moved or not torch.equal(p0, p)
    assert moved                                                # negative control: the step did move the critic
    assert all(p.grad is None for p in [*dyn.parameters(), *reward.parameters()])


def test_ocvp_cache_refuses_active_dropout_and_default_follows_the_mode():
    m = _ocvp(dropout=0.1).train()
    assert not m.can_cache
    with pytest.raises(SoldError, match="dropout"):
        m.step(torch.randn(1, 2, 5, 8), torch.randn(1, 2, 2))
    assert _ocvp(dropout=0.0).train().can_cache and m.eval().can_cache


def test_ocvp_cache_in_training_applies_the_layers_dropout_once_per_token():
    """cache_in_training: the cached rollout runs in train mode with dropout active (stochastic, seeded, with
    gradients), the time blocks' own dropout included; at dropout 0 in train mode it equals the uncached rollout."""
    m = _ocvp(dropout=0.3)
    m.cache_in_training = True
    m.train()
    assert m.can_cache
    ctx, acts = torch.randn(2, 3, 5, 8), torch.randn(2, 3 + 4, 2)
    torch.manual_seed(5)
    a = m.rollout(ctx, acts, 4)
    torch.manual_seed(5)
    b = m.rollout(ctx, acts, 4)
    torch.testing.assert_close(a, b)                                         # seeded: deterministic
    c = m.rollout(ctx, acts, 4)
    assert (a - c).abs().max() > 1e-4                                        # dropout is active in the cached path
    ev = m.eval().rollout(ctx, acts, 4)
    assert (a - ev).abs().max() > 1e-4
    m.train()

    def set_p(modules, p):
        for blk in modules:
            blk.dropout.p = blk.dropout1.p = blk.dropout2.p = p
            blk.self_attn.dropout = p

    # only the time blocks keep their dropout: the cached path must still be stochastic (it runs them by hand) ...
    m.drop.p = 0.0
    set_p(m.object_blocks, 0.0)
    assert (m.rollout(ctx, acts, 4) - m.rollout(ctx, acts, 4)).abs().max() > 1e-4
    # ... and with the time blocks' dropout off as well it is deterministic (negative control)
    set_p(m.time_blocks, 0.0)
    torch.testing.assert_close(m.rollout(ctx, acts, 4), m.rollout(ctx, acts, 4))
    g = _ocvp(dropout=0.0).train()
    g.cache_in_training = True
    torch.testing.assert_close(g.rollout(ctx, acts, 4, cache=True), g.rollout(ctx, acts, 4, cache=False),
                               atol=1e-5, rtol=1e-5)
    out = g.rollout(ctx, acts, 4, cache=True)
    grads = torch.autograd.grad(out.square().sum(), list(g.parameters()), allow_unused=True)
    assert all(x is not None for x in grads)


def test_gru_cached_rollout_equals_the_uncached_one():
    from sold.holistic import GRUDynamics

    torch.manual_seed(0)
    g = GRUDynamics(latent_dim=6, action_dim=2, hidden=16)
    ctx, acts = torch.randn(2, 3, 6), torch.randn(2, 3 + 4, 2)
    torch.testing.assert_close(g.rollout(ctx, acts, 5, cache=True), g.rollout(ctx, acts, 5, cache=False),
                               atol=1e-6, rtol=1e-5)


def test_cached_predictor_matches_predict_next_in_an_imagined_rollout():
    from sold.world import CachedPredictor, SlotWorldModel

    savi = tiny_savi()
    wm = SlotWorldModel(savi=savi, action_dim=2, twohot=TwoHot(5), token_dim=16, num_layers=2, heads=2, ff_dim=16,
                        head_hidden=8).eval()
    torch.manual_seed(2)
    x = torch.randn(2, 3, 3, 8)
    acts = torch.randn(2, 2, 2)
    pred = wm.predictor()
    assert isinstance(pred, CachedPredictor)
    for _ in range(4):                                               # the imagine loop: grow by one step per call
        acts = torch.cat([acts, torch.randn(2, 1, 2)], 1)
        fast, slow = pred(x, acts), wm.predict_next(x, acts)
        torch.testing.assert_close(fast, slow, atol=1e-5, rtol=1e-5)
        x = torch.cat([x, slow[:, None]], 1)
    with pytest.raises(SoldError, match="one step"):                 # negative control: a history that did not grow
        pred(x[:, :-2], acts[:, :-2])
    assert wm.dynamics.train() and wm.predictor() == wm.predict_next  # dropout active: no cache


def test_true_state_wrapper_and_sac_reference():
    """SAC (SB3) sees the true object state; rl_job trains it for the budget and evaluates like the other rows."""
    from dataclasses import replace

    import gymnasium
    from sold.config import BUDGETS
    from sold.envs import TrueStateObservation
    from sold.reproduce import rl_job

    env = TrueStateObservation(ColorReach2D(num_objects=3))
    obs, _ = env.reset(seed=3)
    np.testing.assert_array_equal(obs, env.unwrapped.true_state())
    assert obs.shape == (17,) and env.observation_space.contains(obs)
    obs2, *_ = env.step(np.array([1.0, 0.0], dtype=np.float32))
    assert not np.array_equal(obs2, obs)  # the gripper moved: the state is live, not the reset copy
    with pytest.raises(SoldError, match="true_state"):
        TrueStateObservation(gymnasium.make("CartPole-v1"))
    cfg = replace(BUDGETS.smoke, rl_steps=40, rl_eval_episodes=2)
    r = rl_job(cfg, 0, "sac", None)
    assert 0.0 <= r["success"] <= r["any_success"] <= 1.0
    with pytest.raises(ValueError, match="kind"):
        rl_job(cfg, 0, "ppo", None)


def test_ocvp_released_form_sees_the_future_and_has_no_output_norm():
    """time_causal=False (released): row t of forward depends on later steps (the causal default does not); the
    autoregressive rollout still works without a cache; final_norm=False drops the output LayerNorm."""
    from sold.dynamics import OCVPDynamics

    torch.manual_seed(0)
    s, a = torch.randn(2, 5, 3, 8), torch.randn(2, 5, 2)
    s2 = s.clone()
    s2[:, 4] += 1.0
    for causal in (True, False):
        torch.manual_seed(1)
        m = OCVPDynamics(slot_dim=8, action_dim=2, token_dim=16, heads=2, ff_dim=16, dropout=0.0,
                         time_causal=causal, final_norm=causal).eval()
        d = (m(s, a)[:, :4] - m(s2, a)[:, :4]).abs().max().item()
        assert (d == 0.0) if causal else (d > 1e-4)
        assert isinstance(m.norm_out, torch.nn.LayerNorm) == causal
        assert m.can_cache == causal
        out = m.rollout(s[:, :3], a[:, :4], 2)
        assert out.shape == (2, 2, 3, 8)
        if not causal:
            with pytest.raises(SoldError, match="time_causal"):
                m.step(s, a)


def test_push_task_moves_discs_to_contact_and_reach_tasks_do_not():
    from sold.envs import GOAL

    env = ColorReach2D(task="push")
    env.reset(seed=3)
    obj = env.objects[0].copy()
    env.gripper = obj + np.array([-(env.object_radius + env.gripper_radius) - 0.05, 0.0])
    env.gripper[0] = max(env.gripper[0], 0.0)
    start = env.objects.copy()
    for _ in range(3):
        env.step(np.array([1.0, 0.0]))
    assert np.abs(env.objects - start).max() > 0  # something moved
    touch = env.object_radius + env.gripper_radius
    assert (np.linalg.norm(env.objects - env.gripper, axis=1) >= touch - 1e-9).all()
    for i in range(3):
        for j in range(i):
            assert np.linalg.norm(env.objects[i] - env.objects[j]) >= 2 * env.object_radius - 1e-9 or \
                np.isclose(env.objects[i], [env.object_radius, 1 - env.object_radius]).any()
    _, r, *_ , info = env.step(np.zeros(2))
    assert np.isclose(-r, np.linalg.norm(env.objects[env.target] - GOAL)) and info["masks"].shape == (32, 32)
    reach = ColorReach2D(task="distinct")
    reach.reset(seed=3)
    before = reach.objects.copy()
    for _ in range(25):
        reach.step(reach.oracle_action())
    np.testing.assert_array_equal(reach.objects, before)  # negative control: reach discs never move


def test_collect_episodes_from_a_plain_env_without_masks_uses_its_action_space():
    import gymnasium as gym

    class Plain(gym.Env):
        observation_space = gym.spaces.Box(0, 255, (8, 8, 3), np.uint8)
        action_space = gym.spaces.Box(5.0, 6.0, (3,), np.float32)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return np.zeros((8, 8, 3), np.uint8), {}

        def step(self, action):
            return np.zeros((8, 8, 3), np.uint8), 1.0, False, False, {}

    ep = collect_episodes(Plain(), 2, seed=0, length=4)
    assert ep.frames.shape == (2, 5, 8, 8, 3) and ep.actions.shape == (2, 5, 3)
    assert ep.segs is None and ep.states is None and ep.targets is None
    assert (ep.actions[:, 1:] >= 5.0).all() and (ep.actions[:, 1:] <= 6.0).all()
    with pytest.raises(SoldError, match="episode length"):
        collect_episodes(Plain(), 1, seed=0)


def test_trivial_controls_are_exact_on_a_constant_and_a_two_frame_video():
    from dataclasses import replace

    from sold.config import cpu
    from sold.reproduce import controls

    cfg = replace(cpu(), eval_context=2, eval_horizon=3)
    still = np.full((2, 6, 3, 4, 4), 51, np.uint8)
    c = controls(cfg, {"train": still, "val": still, "test": still})
    assert c["test"]["copy_frame"] == [0.0] * 3 and np.allclose(c["test"]["mean_frame"], 0.0)
    blink = still.copy()
    blink[:, 2:] = 255                                   # every future frame differs from the last context frame
    c = controls(cfg, {"train": still, "val": blink, "test": blink})
    assert np.allclose(c["test"]["copy_frame"], (204 / 255) ** 2)
    assert np.allclose(c["test"]["mean_frame"], (204 / 255) ** 2)


def test_horizon_blocks_are_disjoint():
    from sold.reproduce import horizon_blocks

    b = horizon_blocks(10)
    idx = [set(range(10)[sl]) for _, sl in b.values()]
    assert idx[0] == {0} and idx[1] == set(range(5, 10)) and not idx[0] & idx[1]
