"""One short EARL-BO query on CUDA (issue #53): ``gpu``-marked, skipped without CUDA.

``ICML25_SMOKE_DEVICE=cpu uv run pytest -m gpu packages/earl-bo/tests/test_gpu.py`` runs the same checks on the CPU
(the plumbing, on a machine without a GPU)."""

import json
import math
import os

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.gpu

DEVICE = os.environ.get("ICML25_SMOKE_DEVICE", "cuda")
TINY = dict(episodes=4, off_policy_episodes=2, update_every=2, horizon=2, width=16, heads=2, pretrain_tasks=1,
            turbo_candidates=64)


@pytest.fixture
def device():
    if DEVICE.startswith("cuda") and not torch.cuda.is_available():
        pytest.skip("needs a CUDA device (torch.cuda.is_available() is False)")
    return torch.device(DEVICE)


def _data():
    g = np.random.default_rng(0)
    X = g.uniform(size=(6, 2))
    return X, np.sin(3 * X).sum(1)


def test_one_query_trains_on_the_device(device):
    from earl_bo.earl import EARLBO
    from earl_bo.gp_env import GPEnv, fit_gp

    B = np.array([[0.0, 0.0], [1.0, 1.0]])
    X, y = _data()
    agent = EARLBO(B, **TINY, seed=0, device=str(device))
    before = {k: v.detach().clone() for k, v in agent.state()["agent"].items()}
    x = agent.suggest(X, y)  # pre-training round + one real iteration: 2 + 2 updates
    params = list(agent.agent.parameters())
    assert params and all(p.device.type == device.type for p in params)
    assert all(s.device.type == device.type for st in agent.opt.state.values() for s in st.values()
               if torch.is_tensor(s) and s.dim() > 0)
    assert all(math.isfinite(v) for v in agent.logs[-1].loss) and agent.logs[-1].updates == 2
    changed = [k for k, v in agent.state()["agent"].items() if not torch.equal(v, before[k])]
    assert "log_std" in changed and any(k.startswith("encoder.") for k in changed)  # the step moved the weights
    assert x.shape == (2,) and np.all((x >= 0) & (x <= 1))
    xu, yu = torch.as_tensor(X, dtype=torch.float64), torch.as_tensor(y - y.mean(), dtype=torch.float64)
    env = GPEnv(xu, yu, fit_gp(xu, yu)[1], horizon=2, batch=3, device=device)  # CPU data, device environment
    _, r, _ = env.step(torch.full((3, 2), 0.5))
    assert env.L.device.type == device.type and r.device.type == device.type and bool(torch.isfinite(r).all())


def test_same_initial_policy_on_the_device_and_the_cpu(device):
    """The agent is initialised on the CPU and moved: its untrained query agrees with the CPU one (float32)."""
    from earl_bo.earl import EARLBO, standardise

    B = np.array([[0.0, 0.0], [1.0, 1.0]])
    X, y = _data()
    q = []
    for dev in ("cpu", str(device)):
        agent = EARLBO(B, **TINY, seed=0, device=dev)
        agent._new_agent()
        xs = torch.as_tensor(X, dtype=torch.float64)
        q.append(agent.policy_mean(xs, standardise(torch.as_tensor(y, dtype=torch.float64))[0]))
    assert q[1].device.type == "cpu"  # the query comes back to the CPU
    assert torch.allclose(q[0], q[1], atol=1e-5)


def test_cli_optimize_one_query_on_the_device(device, tmp_path):
    from earl_bo.cli import main

    out = tmp_path / "run"
    dev = "cuda" if device.type == "cuda" else "cpu"
    assert main(["optimize", "--benchmark", "branin", "--dim", "2", "--n-init", "4", "--budget", "1",
                 "--agent.episodes", "4", "--agent.off-policy-episodes", "2", "--agent.update-every", "2",
                 "--agent.pretrain-tasks", "1", "--device", dev, "--quiet", "--out", str(out)]) == 0
    assert json.loads((out / "env.json").read_text())["device"].startswith(device.type)
    assert math.isfinite(json.loads((out / "result.json").read_text())["best"])
