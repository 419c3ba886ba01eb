"""One training step of every torch package on CUDA (issue #53: the paper's scale, one flag away).

Marked ``gpu`` (deselected by default; run with ``uv run pytest -m gpu tests/test_gpu_smoke.py``) and skipped when
``torch.cuda.is_available()`` is False. Each smoke builds the package's smallest model, runs one step (or a few)
through the same Python path its training command takes with ``--device``, and asserts a finite loss and that the
parameters live on the device.

``ICML25_SMOKE_DEVICE=cpu uv run pytest -m gpu tests/test_gpu_smoke.py`` runs the same steps on the CPU (a check
of the plumbing on a machine without a GPU; ``cuda:1`` picks another card).
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

DEVICE = os.environ.get("ICML25_SMOKE_DEVICE", "cuda")

# CPU/NumPy methods (their training command has no --device): skipped with the reason.
NO_DEVICE = {
    "k2ie": "a NumPy method: `k2ie fit` runs on the CPU (no --device)",
    "pes": "a NumPy method: `pes train` runs on the CPU (no --device)",
    "private-robust-align": "a NumPy method: `private-robust-align fit` runs on the CPU (no --device)",
    "richardson-tc": "a NumPy method: `richardson-tc complete` runs on the CPU (no --device)",
}


def _device():
    torch = pytest.importorskip("torch")
    if DEVICE.startswith("cuda") and not torch.cuda.is_available():
        pytest.skip("needs a CUDA device (torch.cuda.is_available() is False)")
    from icml25.device import resolve_device

    return resolve_device(DEVICE)


def _on(module, device) -> bool:
    """Every parameter of ``module`` lives on ``device`` (index-insensitive: 'cuda' == 'cuda:0')."""
    params = list(module.parameters())
    return bool(params) and all(p.device.type == device.type for p in params)


def _finite(x) -> bool:
    return math.isfinite(float(x.detach() if hasattr(x, "detach") else x))


# ---------------------------------------------------------------------------------------------------- smokes
def smoke_relgnn(device):
    import numpy as np
    from relgnn.config import FitConfig
    from relgnn.data import load_task
    from relgnn.graph import build_graph
    from relgnn.train import _Runner, build_model, prepare_task

    task, _ = load_task("synthetic", "user-churn", num_users=30, num_items=15, num_windows=9, data_seed=0)
    graph = build_graph(task.get_db())
    td = prepare_task(task, graph)
    cfg = FitConfig.cpu(channels=8, batch_size=16, num_neighbors=(4, 2))
    model = build_model(cfg, graph, td).to(device)
    run = _Runner(model, graph, td, cfg, device=device)
    batch = run.train_batches(np.random.default_rng(0))[0]
    loss = run.step_loss(batch)
    loss.backward()
    return loss, model


def smoke_habi(device):
    import torch
    from habi.config import HabiConfig, HabitizeConfig
    from habi.habitize import Habitizer
    from habi.model import Synergy

    model = Synergy(cfg=HabiConfig(obs_dim=3, act_dim=1, latent_dim=4, hidden=8, critic_hidden=8)).to(device)
    trainer = Habitizer(model=model, config=HabitizeConfig.cpu(steps=1, batch_size=8))
    g = torch.Generator().manual_seed(0)
    s, a, a_star = (torch.randn(8, d, generator=g).to(device) for d in (3, 1, 1))
    out = trainer.step(s, a.clamp(-1, 1), torch.randn(8, generator=g).to(device), a_star.clamp(-1, 1))
    return out["recon"] + out["critic_loss"], model


def smoke_habi_planner(device):
    from habi.config import PlannerConfig, PlannerTrainConfig
    from habi.planner import train_planner

    rng = np.random.default_rng(0)
    n = 64
    data = {"observations": rng.normal(size=(n, 3)).astype(np.float32),
            "actions": rng.uniform(-1, 1, size=(n, 1)).astype(np.float32),
            "rewards": rng.normal(size=n).astype(np.float32), "terminals": np.zeros(n, bool),
            "timeouts": np.zeros(n, bool)}
    logged, seen = [], []

    def log(step, **m):
        logged.append(m["critic_loss"] + m["bc_loss"])

    import habi.planner as hp

    orig = hp.PlannerNets.to

    def spy(self, *args, **kw):  # the networks are moved to the device before training
        out = orig(self, *args, **kw)
        seen.append(next(self.parameters()).device)
        return out

    hp.PlannerNets.to = spy
    try:
        train_planner(data, config=PlannerConfig(obs_dim=3, act_dim=1, hidden=8, time_dim=8, num_candidates=4),
                      train=PlannerTrainConfig.cpu(steps=2, batch_size=8), log=log, progress=False, device=device)
    finally:
        hp.PlannerNets.to = orig
    assert seen and seen[0].type == device.type
    return logged[-1], None


def smoke_focoop(device):
    from focoop.client import client_fit
    from focoop.config import FedConfig
    from focoop.prompts import init_global_state
    from focoop.synthetic import synthetic_setup

    setup = synthetic_setup(n_clients=2, num_shot=2, n_per_class=8, n_ood=12).to(device)
    cfg = FedConfig(method="focoop", n_clients=2, rounds=1, local_epochs=1, n_ood=4, lr=0.05)
    res = client_fit(setup, cfg, cid=0, server_round=1, global_state=init_global_state(setup, cfg), local_state=None,
                     dro_state=None)
    return res.metrics["loss"], setup.tower


def smoke_kea(device):
    from kea.envs import DeepSea
    from kea.variants import make_agent

    agent = make_agent("KEA-RND", DeepSea(size=3), seed=0, hidden=(8, 8), batch_size=8, learning_starts=16,
                       train_freq=4, gradient_steps=1, buffer_size=64, device=str(device))
    agent.learn(24, progress=False)
    losses = [v for k, v in agent.last_losses.items() if k.endswith("critic")]
    assert losses, "no update ran"
    return losses[0], agent.sac


def smoke_lift(device):
    from icml25.testbeds.lm import build_tiny_lm, build_tokenizer, make_examples
    from lift.finetune import finetune
    from lift.optim import SparseAdamW

    tok = build_tokenizer()
    model = build_tiny_lm(tok, hidden_size=32, num_layers=1, seed=0).to(device)
    opt = SparseAdamW(model, lr=1e-2, filter_rank=2, budget_rank=1, update_interval=2)
    res = finetune(model, tok, make_examples("add", 16, seed=0), optimizer=opt, steps=1, batch_size=8)
    return res["losses"][-1], model


def smoke_pipa(device, tmp_path):
    import copy

    from icml25.testbeds import lm
    from pipa.trainer import PIPAConfig, PIPATrainer

    tok = lm.build_tokenizer()
    model = lm.build_tiny_lm(tok, hidden_size=32, num_layers=1, num_heads=2, seed=0)
    rows = [{"prompt": "12+34=|", "completion": "2+4+0=6c0|1+3+0=4c0|640", "label": True},
            {"prompt": "55+55=|", "completion": "5+5+0=0c1|5+5+1=2c1|021", "label": False}]
    args = PIPAConfig(output_dir=str(tmp_path), max_steps=1, learning_rate=1e-3, per_device_train_batch_size=2,
                      use_cpu=device.type == "cpu", disable_tqdm=True, logging_steps=1, seed=0, report_to=[])
    tr = PIPATrainer(model=copy.deepcopy(model), ref_model=copy.deepcopy(model), args=args, train_dataset=rows,
                     processing_class=tok)
    tr.train()
    loss = next(r["loss"] for r in tr.state.log_history if "loss" in r)
    return loss, tr.accelerator.unwrap_model(tr.model)


def smoke_string_pe(device):
    import torch
    from string_pe.model import ViT
    from string_pe.train import TrainSettings, fit

    model = ViT(image_size=(8, 8), patch_size=2, num_classes=10, dim=16, depth=1, num_heads=2, pe="cayley")
    g = torch.Generator().manual_seed(0)
    x, y = torch.rand(16, 1, 8, 8, generator=g), torch.randint(0, 10, (16,), generator=g)
    losses = fit(model, (x,), y, TrainSettings(epochs=1, batch_size=8, lr=1e-3), device=device)
    return losses[-1], model


def smoke_suica(device):
    from suica.data import preprocess
    from suica.estimator import SUICA
    from suica.synthetic import make_tissue

    a = preprocess(make_tissue(n_spots=120, n_genes=30, n_domains=2, seed=1), min_counts_spot=5, min_counts_gene=3,
                   max_count=None)
    m = SUICA(device=str(device), gae_hidden=(16, 8), latent_dim=4, inr_width=16, ffn_mapping=8, ffn_scale=2.0,
              gae_epochs=1, inr_epochs=1, decoder_epochs=1).fit(a)
    return m.history["decoder"][-1], m.model


def smoke_lcia(device):
    from icml25.testbeds.lm import build_tiny_lm, build_tokenizer
    from lcia.config import Config
    from lcia.continual import run_stream
    from lcia.data import default_stream

    tok = build_tokenizer()
    tok.padding_side = "left"
    base = build_tiny_lm(tok, hidden_size=32, num_layers=1, seed=0).to(device)
    cfg = Config(tasks=("add",), n_train=8, n_eval=2, steps=1, batch_size=4, hidden_size=32, num_layers=1,
                 pretrain_steps=1)
    r = run_stream(base, tok, default_stream(8, seed=0, n_eval=2, tasks=["add"]), cfg, method="sequential", seed=0)
    learner = r["learner"]
    trainable = [p for p in learner.model.parameters() if p.requires_grad]
    assert trainable and all(p.device.type == device.type for p in trainable)
    return r["stages"][0].final_loss, learner.model


def smoke_select_augment(device):
    from select_augment.augment import TargetedAugment
    from select_augment.data import shapes
    from select_augment.selection import LossPolicySelector
    from select_augment.train import train

    d = shapes(32, seed=0)
    sel = LossPolicySelector(len(d.labels), ratio=1.0, epochs=1, seed=0)
    aug = TargetedAugment((d.images, d.labels), sel, policy="none", targeting="none", num_classes=8)
    res = train(d.images, d.labels, augment=aug, epochs=1, num_classes=8, batch_size=16, width=4, downsample=2,
                device=device)
    return res.history[-1]["train_loss"], res.model


def smoke_sggm(device):
    from sggm.gaussian import GaussianGraphModel
    from sggm.graphs import make_graph
    from sggm.score_net import ScoreNetwork, train_score

    m = GaussianGraphModel(paradigm="features", graph=make_graph("regular", 6, mean_degree=2, seed=0), alpha=1.0,
                           n_features=2)
    X0, A0 = m.sample_data(16, seed=0)
    net = ScoreNetwork(n_features=2, sde_x=m.sde_x, sde_a=m.sde_a, hidden=8, depth=1)
    losses = train_score(net, X0, A0, generate="X", steps=2, batch_size=4, T=2.0, device=device)
    return losses[-1], net


def smoke_sold(device):
    from dataclasses import replace

    from sold.agent import SOLD
    from sold.config import AgentConfig, AutoencoderConfig
    from sold.envs import ColorReach2D

    env = ColorReach2D(num_objects=3, max_steps=25)
    ae = replace(AutoencoderConfig(), pretrain_steps=2, pretrain_episodes=4)
    agent_cfg = replace(AgentConfig(), seed_steps=20, update_every=25, updates_per=1, num_bins=31)
    agent = SOLD(env, config=agent_cfg, ae_config=ae, seed=0, device=device)
    outs = []
    agent.learn(26, callback=lambda ag, out: outs.append(out))
    assert outs, "no update ran"
    loss = next(v for k, v in outs[-1].items() if "loss" in k or "mse" in k)
    return loss, agent.world


def smoke_attn_consensus(device):
    from attn_consensus.hf_loop import hf_consensus_loop
    from attn_consensus.models import random_prompts, tiny_gpt2

    model = tiny_gpt2(n_layer=2, n_embd=32, vocab_size=64, seed=0).to(device)
    ids = random_prompts(2, 8, vocab_size=64, seed=1)
    curve = hf_consensus_loop(model, ids, iterations=2)
    return float(curve.gap[-1]), model


def smoke_safediffcon(device):
    from safediffcon.data import make_split
    from safediffcon.method import SafeDiffCon

    train = make_split(16, 16, nu=0.01, dt=2e-3, amp=1.0, seed=0, device=device)
    model = SafeDiffCon(nx=16, dt=2e-3, dim=4, mults=(1, 2), timesteps=20, ddim_steps=3, device=device)
    losses = model.pretrain(train, steps=1, batch_size=8)
    return losses[-1], model.net


def smoke_earl_bo(device):
    from earl_bo.earl import EARLBO

    agent = EARLBO(np.array([[0.0, 0.0], [1.0, 1.0]]), horizon=2, episodes=4, off_policy_episodes=2, update_every=2,
                   width=16, heads=2, pretrain_tasks=0, turbo_candidates=64, seed=0, device=str(device))
    X = np.random.default_rng(0).uniform(size=(6, 2))
    agent.suggest(X, np.sin(3 * X).sum(1))  # one real iteration: 2 updates (AWR + PPO) on the device
    return agent.logs[-1].loss[-1], agent.agent


SMOKES = {
    "relgnn": smoke_relgnn, "habi": smoke_habi, "habi-planner": smoke_habi_planner, "focoop": smoke_focoop,
    "kea": smoke_kea, "lift": smoke_lift, "pipa": smoke_pipa, "string-pe": smoke_string_pe, "suica": smoke_suica,
    "lcia": smoke_lcia, "select-augment": smoke_select_augment, "sggm": smoke_sggm, "sold": smoke_sold,
    "attn-consensus": smoke_attn_consensus, "safediffcon": smoke_safediffcon,
    "earl-bo": smoke_earl_bo,
}


@pytest.mark.parametrize("name", sorted(SMOKES))
def test_one_training_step_on_the_device(name, tmp_path):
    device = _device()
    fn = SMOKES[name]
    loss, module = fn(device, tmp_path) if "tmp_path" in fn.__code__.co_varnames[:fn.__code__.co_argcount] \
        else fn(device)
    assert _finite(loss), f"{name}: non-finite loss {loss!r}"
    if module is not None:
        assert _on(module, device), f"{name}: parameters are not on {device}"


@pytest.mark.parametrize("name", sorted(NO_DEVICE))
def test_packages_without_a_device_say_why(name):
    _device()
    pytest.skip(NO_DEVICE[name])


def test_every_package_is_covered():
    """Every package folder has a smoke or a stated reason (a new package must add one)."""
    from pathlib import Path

    names = {p.name for p in (Path(__file__).resolve().parents[1] / "packages").iterdir()
             if (p / "pyproject.toml").is_file()}
    covered = {n.removesuffix("-planner") for n in SMOKES} | set(NO_DEVICE)
    assert names <= covered, f"packages without a GPU smoke or a reason: {sorted(names - covered)}"
