import math

import pytest
import torch
import torch.nn.functional as F
from focoop.dro import (
    DROState,
    adversarial_perturbations,
    bidro_loss,
    detection_loss,
    dro_weights,
    kl_dro_loss,
    robust_sample_losses,
    update_multipliers,
)
from focoop.errors import FOCoOpConfigError


def test_kl_dro_bounds_limits_and_gradient():
    torch.manual_seed(0)
    ell = torch.randn(16, dtype=torch.float64) * 3
    for t in (0.01, 0.3, 1.0, 10.0):
        val = kl_dro_loss(ell, temperature=t)
        assert ell.mean() - 1e-12 <= val <= ell.max() + 1e-12
        # t·LSE(ℓ/t) ∈ [max ℓ, max ℓ + t log n]
        raw = val + t * math.log(16)
        assert ell.max() - 1e-12 <= raw <= ell.max() + t * math.log(16) + 1e-12
    assert kl_dro_loss(ell, temperature=1e6) == pytest.approx(float(ell.mean()), abs=1e-4)
    assert kl_dro_loss(ell, temperature=1e-4) == pytest.approx(float(ell.max()), abs=1e-3)
    x = ell.clone().requires_grad_(True)
    kl_dro_loss(x, temperature=0.7).backward()
    torch.testing.assert_close(x.grad, dro_weights(ell, temperature=0.7))
    assert float(x.grad.sum()) == pytest.approx(1.0)
    with pytest.raises(FOCoOpConfigError):
        kl_dro_loss(ell, temperature=0.0)


def test_detection_loss_lower_bound_and_equality():
    torch.manual_seed(1)
    k = 7
    l = torch.randn(32, k, dtype=torch.float64) * 4
    assert (detection_loss(l) >= math.log(k) - 1e-12).all()
    eq = torch.full((3, k), 2.5, dtype=torch.float64)
    torch.testing.assert_close(detection_loss(eq), torch.full((3,), math.log(k), dtype=torch.float64))
    assert (detection_loss(l) > math.log(k) + 1e-6).all()


def _toy(seed=0, b=12, c=4, k=5, e=8):
    g = torch.Generator().manual_seed(seed)
    f = F.normalize(torch.randn(b, e, generator=g, dtype=torch.float64), dim=-1)
    t_id = F.normalize(torch.randn(c, e, generator=g, dtype=torch.float64), dim=-1)
    t_ood = F.normalize(torch.randn(k, e, generator=g, dtype=torch.float64), dim=-1)
    y = torch.randint(0, c, (b,), generator=g)
    return f, y, t_id, t_ood


def test_inner_ascent_zero_iters_and_small_step_increases_ce():
    f, y, t_id, t_ood = _toy()
    st = DROState(gamma_id=0.0, gamma_ood=0.0)
    d_id, d_ood = adversarial_perturbations(f, y, t_id, t_ood, scale=10.0, state=st, n_iter=0)
    assert float(d_id.abs().max()) == 0 and float(d_ood.abs().max()) == 0
    ell = robust_sample_losses(f, y, t_id, t_ood, d_id, d_ood, scale=10.0, state=st, det_weight=0.5)
    logits = 10.0 * f @ torch.cat([t_id, t_ood]).T
    ref = F.cross_entropy(logits, y, reduction="none") + 0.5 * detection_loss(logits[:, 4:])
    torch.testing.assert_close(ell, ref)
    d_id, _ = adversarial_perturbations(f, y, t_id, t_ood, scale=10.0, state=st, n_iter=4, adv_step=1e-3,
                                        generator=torch.Generator().manual_seed(0))
    ce0 = F.cross_entropy(10.0 * f @ torch.cat([t_id, t_ood]).T, y)
    ce1 = F.cross_entropy(10.0 * f @ torch.cat([t_id + d_id, t_ood]).T, y)
    assert ce1 > ce0


def test_perturbations_are_detached_and_prompts_get_gradients():
    f, y, t_id, t_ood = _toy(2)
    t_id = t_id.clone().requires_grad_(True)
    t_ood = t_ood.clone().requires_grad_(True)
    st = DROState(gamma_id=10.0, gamma_ood=10.0)
    loss, d_id, d_ood, ess = bidro_loss(f, y, t_id, t_ood, scale=10.0, state=st,
                                        generator=torch.Generator().manual_seed(0))
    assert not d_id.requires_grad and not d_ood.requires_grad
    loss.backward()
    assert t_id.grad.abs().sum() > 0 and t_ood.grad.abs().sum() > 0
    assert 1.0 <= ess <= f.shape[0]


def test_multipliers_stay_in_floor_init():
    st = DROState(gamma_id=10.0, gamma_ood=10.0)
    small = torch.full((3, 4), 1e-3)
    for _ in range(1000):
        st = update_multipliers(st, small, small, beta=0.005, rho=10.0, gamma_init=10.0, gamma_floor=0.1)
        assert 0.1 <= st.gamma_ood <= 10.0 and 0.1 <= st.gamma_id <= 10.0
    assert st.gamma_ood == pytest.approx(0.1)  # collapses to the positive floor, not to 0
    big = torch.full((3, 4), 100.0)
    st = update_multipliers(st, big, big, beta=0.005, rho=10.0, gamma_init=10.0, gamma_floor=0.1)
    assert st.gamma_id > 0.1
