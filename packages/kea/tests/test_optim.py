"""kea.optim.Adam reproduces Adam's update (closed form; torch.optim.Adam in the slow test)."""

import math

import pytest
import torch
from kea.optim import Adam


def _grads(t):
    return torch.tensor([math.sin(t), -2.0 + t, 0.5 * t * t], dtype=torch.float64)


def test_adam_matches_closed_form_float64():
    p = torch.nn.Parameter(torch.tensor([1.0, -1.0, 0.3], dtype=torch.float64))
    opt = Adam([p], lr=0.01, betas=(0.9, 0.99), eps=1e-8)
    ref = p.detach().clone()
    m = torch.zeros(3, dtype=torch.float64)
    v = torch.zeros(3, dtype=torch.float64)
    for t in range(1, 8):
        g = _grads(t)
        p.grad = g.clone()
        opt.step()
        m = 0.9 * m + 0.1 * g
        v = 0.99 * v + 0.01 * g * g
        ref = ref - 0.01 * (m / (1 - 0.9**t)) / ((v / (1 - 0.99**t)).sqrt() + 1e-8)
        assert torch.allclose(p.detach(), ref, rtol=1e-12, atol=1e-12)
    opt.zero_grad()
    assert p.grad is None


@pytest.mark.slow
def test_adam_matches_torch_optim():
    a = torch.nn.Parameter(torch.tensor([1.0, -1.0, 0.3], dtype=torch.float64))
    b = torch.nn.Parameter(a.detach().clone())
    o1, o2 = Adam([a], lr=0.01), torch.optim.Adam([b], lr=0.01)
    for t in range(1, 8):
        a.grad, b.grad = _grads(t), _grads(t)
        o1.step()
        o2.step()
    assert torch.allclose(a, b, rtol=1e-12, atol=1e-14)
