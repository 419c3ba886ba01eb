"""SparseAdamW (LIFT Alg. 1): frozen entries, AdamW equivalence, first-step size, remapping, schedule, errors."""

from __future__ import annotations

import copy

import pytest
import torch
from icml25.testing import assert_close64
from lift.errors import LiftConfigError, MaskError
from lift.masks import principal_mask
from lift.optim import SparseAdamW
from torch import nn


def _net(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(12, 20), nn.Tanh(), nn.Linear(20, 6))


def _loss(net, seed):
    g = torch.Generator().manual_seed(seed)
    x, y = torch.randn(16, 12, generator=g), torch.randn(16, 6, generator=g)
    return ((net(x) - y) ** 2).mean()


def _train(net, opt, steps, accum=1):
    for t in range(steps):
        opt.zero_grad(set_to_none=True)
        for a in range(accum):
            (_loss(net, 100 * t + a) / accum).backward()
        opt.step()


def test_unmasked_entries_bit_identical_and_masked_change():
    net = _net()
    opt = SparseAdamW(net, lr=1e-2, filter_rank=2, budget_rank=1, update_interval=None, weight_decay=0.1)
    before = {n: p.detach().clone() for n, p in net.named_parameters()}
    masks = {n: m.clone() for n, m in opt.masks().items()}
    _train(net, opt, 3)
    for name, m in masks.items():
        p = dict(net.named_parameters())[name]
        assert torch.equal(p[~m], before[name][~m])  # bitwise
        assert bool((p[m] != before[name][m]).all())
    for name in ("0.bias", "2.bias"):  # not in the masked group: frozen
        assert torch.equal(dict(net.named_parameters())[name], before[name])
        assert not dict(net.named_parameters())[name].requires_grad


def test_grad_is_not_overwritten():
    net = _net()
    opt = SparseAdamW(net, lr=1e-2, filter_rank=2, budget_rank=1, update_interval=None, sparse_grads=False)
    _loss(net, 0).backward()
    grads = [p.grad.clone() for p in net.parameters() if p.grad is not None]
    opt.step()
    assert all(torch.equal(a, p.grad) for a, p in zip(grads, [p for p in net.parameters() if p.grad is not None]))


def test_optimizer_state_is_2k_floats():
    net = _net()
    opt = SparseAdamW(net, lr=1e-2, filter_rank=2, budget_rank=1, update_interval=None)
    ks = [min((20 + 12) * 1, 240), min((6 + 20) * 1, 120)]
    assert opt.state_floats() == 2 * sum(ks) and opt.trainable_entries() == sum(ks)
    _train(net, opt, 2)
    for p, k in zip([net[0].weight, net[2].weight], ks):
        assert opt.state[p]["exp_avg"].shape == (k,) and opt.state[p]["exp_avg_sq"].shape == (k,)


@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_all_ones_mask_matches_torch_adamw(wd):
    a, b = _net(), _net()
    sp = SparseAdamW(a, lr=3e-3, filter_rank=1, density=1.0, update_interval=2, betas=(0.9, 0.95), eps=1e-12,
                     weight_decay=wd)
    ref = torch.optim.AdamW([b[0].weight, b[2].weight], lr=3e-3, betas=(0.9, 0.95), eps=1e-12, weight_decay=wd)
    for n, p in b.named_parameters():
        p.requires_grad_(n.endswith("weight"))
    _train(a, sp, 6)
    _train(b, ref, 6)
    for pa, pb in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(pa, pb, rtol=1e-5, atol=1e-6)


def test_weight_decay_actually_decays_masked_entries():
    net = _net()
    opt = SparseAdamW(net, lr=0.1, filter_rank=2, budget_rank=1, update_interval=None, weight_decay=0.5)
    w0 = net[0].weight.detach().clone()
    m = opt.mask(net[0].weight)
    net[0].weight.grad = torch.zeros_like(net[0].weight)  # zero gradient: only decay acts
    net[2].weight.grad = torch.zeros_like(net[2].weight)
    opt.step()
    torch.testing.assert_close(net[0].weight[m], w0[m] * (1 - 0.1 * 0.5))
    assert torch.equal(net[0].weight[~m], w0[~m])


def test_first_step_moves_every_masked_entry_by_lr():
    net = _net()
    opt = SparseAdamW(net, lr=1e-3, filter_rank=2, budget_rank=1, update_interval=None, eps=0.0,
                      sparse_grads=False)  # dense .grad kept to read the signs
    w0 = net[0].weight.detach().clone()
    _loss(net, 0).backward()
    g = net[0].weight.grad.clone()
    opt.step()
    m = opt.mask(net[0].weight) & (g != 0)
    delta = net[0].weight.detach() - w0
    torch.testing.assert_close(delta[m], -1e-3 * torch.sign(g[m]), rtol=1e-4, atol=1e-9)


def test_mask_update_remaps_moments():
    net = _net()
    opt = SparseAdamW(net, lr=1e-2, filter_rank=2, budget_rank=1, update_interval=None)
    _train(net, opt, 3)
    p = net[0].weight
    old_mask = opt.mask(p)
    dense_m = torch.zeros(p.numel())
    dense_m[opt.state[p]["indices"]] = opt.state[p]["exp_avg"]
    dense_v = torch.zeros(p.numel())
    dense_v[opt.state[p]["indices"]] = opt.state[p]["exp_avg_sq"]
    with torch.no_grad():  # force a different mask: perturb the weights strongly
        p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(9)))
    step_before = opt.state[p]["step"]
    opt.update_masks()
    new_mask = opt.mask(p)
    assert not torch.equal(old_mask, new_mask) and (old_mask & new_mask).any()
    assert torch.equal(new_mask, principal_mask(p.detach(), filter_rank=2, budget_rank=1))
    nm = torch.zeros(p.numel())
    nm[opt.state[p]["indices"]] = opt.state[p]["exp_avg"]
    nv = torch.zeros(p.numel())
    nv[opt.state[p]["indices"]] = opt.state[p]["exp_avg_sq"]
    both = (old_mask & new_mask).reshape(-1)
    new_only = (new_mask & ~old_mask).reshape(-1)
    assert torch.equal(nm[both], dense_m[both]) and torch.equal(nv[both], dense_v[both])
    assert bool((nm[new_only] == 0).all()) and bool((nv[new_only] == 0).all())
    assert opt.state[p]["exp_avg"].numel() == int(new_mask.sum()) == (20 + 12)
    assert opt.state[p]["step"] == step_before  # bias-correction clock not reset


@pytest.mark.parametrize("official,expected", [(False, [3, 6, 9]), (True, [2, 5, 8])])
def test_updates_at_scheduled_optimizer_steps_under_accumulation(official, expected):
    net = _net()
    opt = SparseAdamW(net, lr=1e-2, filter_rank=2, budget_rank=1, update_interval=3, official_schedule=official)
    _train(net, opt, 10, accum=4)  # 40 micro-batches, 10 optimizer steps
    assert opt.mask_update_steps == expected
    assert opt.state[net[0].weight]["mask_updates"] == len(expected)


def test_only_linear_weights_without_lm_head_are_trained():
    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 8)
            self.proj = nn.Linear(8, 8)
            self.norm = nn.LayerNorm(8)
            self.lm_head = nn.Linear(8, 10)

        def forward(self, x):
            return self.lm_head(self.norm(self.proj(self.emb(x))))

    torch.manual_seed(0)
    model = Tiny()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = SparseAdamW(model, lr=1e-2, filter_rank=2, budget_rank=1, update_interval=None)
    assert list(opt.param_names.values()) == ["proj.weight"]
    x = torch.randint(0, 10, (4, 5))
    model(x).sum().backward()
    opt.step()
    changed = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    assert changed == {"proj.weight"}
    opt2 = SparseAdamW(Tiny(), lr=1e-2, filter_rank=2, budget_rank=1, update_interval=None, target_modules=["proj"],
                       train_other_params=True)
    assert [g["masked"] for g in opt2.param_groups] == [True, False]


def test_state_dict_round_trip_keeps_int64_indices_and_trajectory():
    a = _net()
    opt = SparseAdamW(a, lr=1e-2, filter_rank=2, budget_rank=1, update_interval=2)
    _train(a, opt, 3)
    sd = copy.deepcopy(opt.state_dict())  # as after torch.save/torch.load
    b = _net()
    b.load_state_dict(a.state_dict())
    opt_b = SparseAdamW(b, lr=1e-2, filter_rank=2, budget_rank=1, update_interval=2)
    opt_b.load_state_dict(sd)
    assert opt_b.state[b[0].weight]["indices"].dtype == torch.int64
    _train(a, opt, 3)
    _train(b, opt_b, 3)
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa, pb)
    assert opt.mask_update_steps == opt_b.mask_update_steps


def test_custom_mask_fn_is_checked():
    def wrong(w):
        return torch.ones_like(w, dtype=torch.bool)

    with pytest.raises(MaskError, match="budget"):
        SparseAdamW(_net(), lr=1e-2, filter_rank=2, budget_rank=1, update_interval=None, mask_fn=wrong)

    def wrong_shape(w):
        return torch.ones(3, 3, dtype=torch.bool)

    with pytest.raises(MaskError, match="shape"):
        SparseAdamW(_net(), lr=1e-2, filter_rank=2, budget_rank=1, update_interval=None, mask_fn=wrong_shape)


@pytest.mark.parametrize("kw,field", [
    (dict(lr=-1.0), "lr"), (dict(betas=(0.9, 1.0)), "betas"), (dict(betas=(0.9,)), "betas"), (dict(eps=-1.0), "eps"),
    (dict(weight_decay=-0.1), "weight_decay"), (dict(update_interval=0), "update_interval"),
    (dict(filter_rank=0), "filter_rank"), (dict(filter_rank=13), "filter_rank"), (dict(budget_rank=0), "budget_rank"),
    (dict(budget_rank=None, density=2.0), "density"), (dict(mask_type="lift_sparse"), "mask_type"),
    (dict(selection="big"), "selection"),
])
def test_bad_input(kw, field):
    args = dict(lr=1e-2, filter_rank=2, budget_rank=1, update_interval=3)
    args.update(kw)
    with pytest.raises(LiftConfigError, match=field):
        SparseAdamW(_net(), **args)


def test_non_2d_param_in_masked_group_rejected():
    with pytest.raises(MaskError, match="2-D"):
        SparseAdamW([nn.Parameter(torch.randn(5))], lr=1e-2, filter_rank=1, budget_rank=1, update_interval=None)
    w = nn.Parameter(torch.randn(4, 4))
    w.data[0, 0] = float("inf")
    with pytest.raises(MaskError, match="non-finite"):
        SparseAdamW([w], lr=1e-2, filter_rank=1, budget_rank=1, update_interval=None)


# ---------------------------------------------------------------------------------------------- statistics masks
def _lin_grad(seed: int, shape=(6, 10)) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_gradient_mask_is_topk_of_the_refresh_steps_gradient():
    from lift.masks import budget_size, topk_mask

    w = torch.nn.Parameter(_lin_grad(0))
    opt = SparseAdamW([w], lr=1e-2, filter_rank=1, budget_rank=1, update_interval=1, mask_type="gradient", seed=3)
    k = budget_size(w.shape, budget_rank=1)
    assert int(opt.mask(w).sum()) == k  # random before any gradient
    w.grad = _lin_grad(1)
    opt.step()  # refresh after step 1 reads |G| of this step
    assert torch.equal(opt.mask(w), topk_mask(w.grad.abs(), k))
    assert opt.state[w]["exp_avg"].numel() == k and "score" not in opt.state[w]


def test_momentum_and_movement_scores_follow_their_recursions():
    from lift.masks import budget_size, topk_mask

    k = budget_size((6, 10), budget_rank=1)
    for kind in ("momentum", "movement"):
        w = torch.nn.Parameter(_lin_grad(0))
        opt = SparseAdamW([w], lr=1e-2, filter_rank=1, budget_rank=1, update_interval=2, mask_type=kind,
                          betas=(0.8, 0.99))
        expected = torch.zeros_like(w)
        for t in range(2):
            w.grad = _lin_grad(10 + t)
            w_before = w.detach().clone()
            if kind == "momentum":
                expected = 0.8 * expected + 0.2 * w.grad
            else:
                expected = expected - w.grad * w_before
            opt.step()
        assert_close64(opt.state[w]["score"], expected, rtol=1e-12, atol=1e-12)
        scores = expected.abs() if kind == "momentum" else expected
        assert torch.equal(opt.mask(w), topk_mask(scores, k)), kind  # refreshed after step 2 from the scores


def test_statistics_masks_reject_misuse():
    from lift.masks import compute_mask, shira_mask_fn

    w = _lin_grad(0)
    with pytest.raises(MaskError, match="shape"):
        compute_mask(w, mask_type="momentum", budget_rank=1, scores=torch.ones(3, 3))
    with pytest.raises(LiftConfigError, match="only used"):
        compute_mask(w, mask_type="magnitude", budget_rank=1, scores=w)
    with pytest.raises(LiftConfigError, match="training statistics"):
        shira_mask_fn(mask_type="movement")


def _run_sparse_vs_dense(sparse: bool, mask_fn=None, steps: int = 5, accum: int = 2):
    net = _net()
    opt = SparseAdamW(net, lr=1e-2, filter_rank=2, budget_rank=1, update_interval=2, sparse_grads=sparse,
                      mask_fn=mask_fn)
    for s in range(steps):
        opt.zero_grad()
        for a in range(accum):
            _loss(net, 10 * s + a).backward()
        if sparse:  # the dense gradient of every masked weight is gone; only the (k,) buffer is left
            for p in opt.param_groups[0]["params"]:
                assert p.grad is None and opt.sparse_grad(p).shape == (opt.state[p]["indices"].numel(),)
        opt.step()
    return net, opt


def test_sparse_gradients_give_bit_identical_updates_to_the_dense_path():
    dense, od = _run_sparse_vs_dense(False)
    sparse, osp = _run_sparse_vs_dense(True)
    assert od.mask_update_steps == osp.mask_update_steps == [2, 4]
    for (n, a), (_, b) in zip(dense.named_parameters(), sparse.named_parameters()):
        assert torch.equal(a, b), n
    for p, q in zip(od.param_groups[0]["params"], osp.param_groups[0]["params"]):
        assert torch.equal(od.state[p]["exp_avg_sq"], osp.state[q]["exp_avg_sq"])
    # negative control: gathering with a wrong mask (a different k-subset) gives a different trajectory
    def wrong(w):
        m = torch.zeros(w.numel(), dtype=torch.bool)
        m[: min((w.shape[0] + w.shape[1]) * 1, w.numel())] = True
        return m.view(w.shape)

    bad, _ = _run_sparse_vs_dense(True, mask_fn=wrong)
    assert not all(torch.equal(a, b) for a, b in zip(dense.parameters(), bad.parameters()))


def test_sparse_gradient_buffers_hold_k_floats_and_zero_grad_clears_them():
    net = _net()
    opt = SparseAdamW(net, lr=1e-2, filter_rank=2, budget_rank=1, update_interval=None)
    _loss(net, 0).backward()
    k = sum(opt.state[p]["indices"].numel() for p in opt.param_groups[0]["params"])
    assert opt.grad_buffer_bytes() == 4 * k
    opt.zero_grad()
    assert opt.grad_buffer_bytes() == 0
    opt.remove_hooks()  # back to dense gradients
    _loss(net, 0).backward()
    assert all(p.grad is not None for p in opt.param_groups[0]["params"]) and opt.grad_buffer_bytes() == 0


def test_step_consumes_the_sparse_buffers_so_model_zero_grad_is_enough():
    """A loop that clears gradients with ``model.zero_grad()`` (as transformers.Trainer does) trains exactly like one
    that calls ``opt.zero_grad()``: the buffers do not outlive the step that used them."""
    runs = []
    for clear_with_model in (False, True):
        net = _net()
        opt = SparseAdamW(net, lr=1e-2, filter_rank=2, budget_rank=1, update_interval=3)
        for t in range(5):
            _loss(net, t).backward()
            opt.step()
            assert opt.grad_buffer_bytes() == 0
            (net if clear_with_model else opt).zero_grad()
        runs.append(net)
    for (n, a), (_, b) in zip(runs[0].named_parameters(), runs[1].named_parameters()):
        assert torch.equal(a, b), n
