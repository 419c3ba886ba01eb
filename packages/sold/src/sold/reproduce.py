"""Side-by-side reproduction of SOLD's claims at CPU scale: a list of experiments (Mosbach et al., ICML 2025).

Per seed (its own environment episodes, autoencoders and world models; small jobs on two forked workers with one
torch thread each):

1. **Data**: random-action episodes of ``ColorReach2D`` (task "push": 3 pushable discs, so objects move when the
   gripper hits them), disjoint reset seeds for the training, validation and test splits.
2. **Stage A**: SAVi and the holistic autoencoder pre-trained with the same steps, batch and data, each at its own
   learning rate (``ae.lr``, ``ae.holistic_lr``: the defaults are the choices of ``reproduce --task ae-lr``, which
   tunes both alike on grids of the same size by validation reconstruction MSE); the decomposition gate is the
   foreground ARI of SAVi's masks against the true object masks on the test episodes.
3. **Stage B**: the slot world model (OCVP dynamics + slot-aggregation reward head) and the holistic one (GRU dynamics
   + MLP reward head), each trained until its validation open-loop MSE plateaus (same budget and batch; best
   weights kept); the dynamics learning rate of each is tuned alike on the validation episodes of the first
   ``wm_tune_seeds`` seeds (grids of the same size, :func:`icml25.tuning.tune_alike`).
4. **Gates, then claims**: each world model must have plateaued and beat copying the last frame and the mean frame
   at each scored horizon block (horizon 1; horizons 6–10: disjoint, no finding counted twice) before the two are
   compared there; the reward attention claim needs SAVi's decomposition, a reward head better than the mean reward
   and attention above chance; engineering targets (environment steps per model update; SOLD's update time vs the
   holistic agent's).
5. ``reproduce --rl`` adds the behaviour-learning comparison: SOLD vs the holistic agent (same imagination code),
   each gated on beating a random policy's return, with a random policy and a scripted oracle beside them.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np
from icml25.claims import Claim, Report, mean_sd
from icml25.experiment import Section, run_experiments
from icml25.parallel import ForkPool

from sold.config import BUDGETS, RL_LONG_BUDGETS, SAVI_LONG_BUDGETS, Config

PAPER_WM = ("SOLD paper (ICML 2025), Sec. 4 / project page: object-centric slot dynamics give accurate open-loop "
            "predictions that keep objects separate (shown qualitatively; no table values in our notes)")
PAPER_ATTN = ("SOLD paper (ICML 2025), abstract: slot-level attention makes the reward-relevant objects "
              "interpretable (qualitative attention maps; no numbers)")
PAPER_RL = ("SOLD paper (ICML 2025), abstract: SOLD outperforms DreamerV3 and TD-MPC2 on relational manipulation "
            "tasks (success-rate curves; no table values in our notes)")
ARI_GATE = 0.5
"""Foreground-ARI gate for stage B, fixed before any run."""
ARI_GATE_NAME = f"Stage-A gate: SAVi decomposes the scenes (foreground ARI ≥ {ARI_GATE}) after pre-training"
SPLIT_OFFSETS = {"train": 0, "val": 50_000, "test": 80_000, "pretrain": 20_000}


# ---------------------------------------------------------------------------------------------- per-seed job
def _target_attention(att: np.ndarray, masks: np.ndarray, segs: np.ndarray, targets: np.ndarray,
                      n_obj: int) -> tuple[float, float]:
    """Mean attention share on the target disc's slot and on the other discs' slots.

    ``att [E, T, K]``, ``masks [E, T, K, H, W]``, ``segs [E, T, H, W]``. Each disc's slot is the slot whose mask
    covers most of the disc; frames where two discs share a slot are skipped."""
    tgt, oth = [], []
    for e in range(att.shape[0]):
        for t in range(1, att.shape[1]):
            cover = [(masks[e, t] * (segs[e, t] == i + 1)).sum((-1, -2)) for i in range(n_obj)]
            owner = [int(np.argmax(c)) for c in cover]
            if owner[targets[e]] in [owner[i] for i in range(n_obj) if i != targets[e]]:
                continue  # the target shares its slot with another disc: no read-out
            tgt.append(att[e, t, owner[targets[e]]])
            oth.append(np.mean([att[e, t, owner[i]] for i in range(n_obj) if i != targets[e]]))
    if not tgt:
        return float("nan"), float("nan")
    return float(np.mean(tgt)), float(np.mean(oth))


_DATA: dict[tuple, dict[str, Any]] = {}


def _env(cfg: Config):
    from sold.envs import ColorReach2D

    ec = cfg.env
    return ColorReach2D(num_objects=ec.num_objects, task=ec.task, reward=ec.reward, size=ec.size,
                        max_steps=ec.max_steps)


def _data(cfg: Config, seed: int) -> dict[str, Any]:
    """The seed's episodes (train / val / test, disjoint reset seeds), made once per worker process."""
    from sold.data import collect_episodes
    from sold.savi import frames_to_video

    key = (repr(cfg.env), cfg.train_episodes, cfg.val_episodes, cfg.test_episodes, seed)
    if key not in _DATA:
        if len(_DATA) >= 6:  # a worker sees jobs of every seed; keep a few seeds' episodes (≈ 30 MB each)
            _DATA.pop(next(iter(_DATA)))
        env = _env(cfg)
        base = seed * 1_000_003
        t0 = time.perf_counter()
        split = {k: collect_episodes(env, n, seed=base + SPLIT_OFFSETS[k]) for k, n in
                 (("train", cfg.train_episodes), ("val", cfg.val_episodes), ("test", cfg.test_episodes))}
        env_steps = sum(len(e) * cfg.env.max_steps for e in split.values())
        env_sps = env_steps / (time.perf_counter() - t0)
        _DATA[key] = {"split": split, "vid": {k: frames_to_video(e.frames) for k, e in split.items()},
                      "env_steps_per_s": env_sps}
    return _DATA[key]


def _build_ae(cfg: Config, kind: str, state: dict[str, np.ndarray] | None = None):
    import torch

    from sold.agent import build_holistic_ae, build_savi

    ae = (build_savi(cfg.ae, image_size=cfg.env.size, action_dim=2) if kind == "slots"
          else build_holistic_ae(cfg.ae, image_size=cfg.env.size))
    if state is not None:
        ae.load_state_dict({k: torch.as_tensor(v) for k, v in state.items()})
        ae.eval()
    return ae


def ae_job(cfg: Config, seed: int, kind: str, lr: float, *, keep: bool = True) -> dict[str, Any]:
    """Stage A for one seed and one autoencoder (``kind`` 'slots' = SAVi, 'holistic' = the CNN-AE) at ``lr``.

    Returns the reconstruction MSE (and SAVi's foreground ARI) on the validation and test episodes (frames
    ``0 … eval_context + eval_horizon − 1``); with ``keep`` also the trained weights and every split encoded once
    (running encoding over whole episodes), as numpy arrays for the stage-B jobs."""
    import torch

    from sold.data import foreground_ari
    from sold.world import pretrain_autoencoder

    torch.set_num_threads(1)
    d = _data(cfg, seed)
    split, vid, ac, size = d["split"], d["vid"], cfg.ae, cfg.env.size
    n = cfg.eval_context + cfg.eval_horizon
    torch.manual_seed(seed)
    ae = _build_ae(cfg, kind)
    out: dict[str, Any] = {"seed": seed, "kind": kind, "lr": lr, "env_steps_per_s": d["env_steps_per_s"]}

    def scores(model, sp: str) -> tuple[float, float]:
        fr = vid[sp][:, :n]
        with torch.no_grad():
            lat = model.encode(fr)
            if kind == "slots":
                img, masks = model.decode(lat)
            else:
                img, masks = model.decode(lat), None
        mse = float(((img - torch.as_tensor(fr).float() / 255) ** 2).mean())
        if masks is None:
            return mse, float("nan")
        k = masks.shape[2]
        seg = split[sp].segs[:, :n]
        return mse, foreground_ari(seg.reshape(-1, size, size), masks.reshape(-1, k, size, size).numpy())

    if kind == "slots":
        out["ari_untrained"] = scores(ae, "test")[1]
        out["controls"] = controls(cfg, vid)
    t0 = time.perf_counter()
    curve = pretrain_autoencoder(ae, vid["train"], steps=ac.pretrain_steps, batch=ac.batch, seq_len=ac.seq_len,
                                 lr=lr, seed=seed, warmup=ac.warmup, clip=ac.grad_clip,
                                 actions=split["train"].actions if kind == "slots" else None)
    out["seconds"] = time.perf_counter() - t0
    out["final_loss"] = float(np.mean(curve[-20:]))
    for sp in ("val", "test"):
        out[f"recon_{sp}"], out[f"ari_{sp}"] = scores(ae, sp)
    if keep:
        out["state"] = {k: v.detach().numpy().copy() for k, v in ae.state_dict().items()}
        with torch.no_grad():
            out["latents"] = {k: torch.cat([ae.encode(v[i: i + 16]) for i in range(0, len(v), 16)]).numpy()
                              for k, v in vid.items()}
    if kind == "slots":  # every seed's first test episode: the figures show the best and the worst decomposition
        c, h = cfg.eval_context, cfg.eval_horizon
        with torch.no_grad():
            img, masks = ae.decode(ae.encode(vid["test"][:1, : c + h]))
        out["example"] = {"frames": vid["test"][0, : c + h], "savi_recon": (img[0].numpy() * 255).astype(np.uint8),
                          "savi_masks": masks[0].numpy().astype(np.float16)}
    return out


def controls(cfg: Config, vid: dict[str, np.ndarray]) -> dict[str, dict[str, list[float]]]:
    """The trivial open-loop predictors' pixel MSE per horizon ``1 … eval_horizon`` on the validation and test
    episodes (the same frames the world models are scored on): *copy last frame* repeats the last context frame
    ``x_{c−1}``; *mean frame* predicts the per-pixel mean of every training frame."""
    c, h = cfg.eval_context, cfg.eval_horizon
    mean = vid["train"].astype(np.float64).mean((0, 1)) / 255.0                          # [3, H, W]
    out: dict[str, dict[str, list[float]]] = {}
    for sp in ("val", "test"):
        x = vid[sp][:, : c + h].astype(np.float64) / 255.0                                # [E, c + h, 3, H, W]
        fut = x[:, c: c + h]
        out[sp] = {"copy_frame": ((fut - x[:, c - 1: c]) ** 2).mean((0, 2, 3, 4)).tolist(),
                   "mean_frame": ((fut - mean) ** 2).mean((0, 2, 3, 4)).tolist()}
    return out


def _world_model(cfg: Config, kind: str, ae, lr: float, seed: int):
    import torch

    from sold.dreamer import TwoHot
    from sold.world import HolisticWorldModel, SlotWorldModel

    gc = cfg.agent
    th = TwoHot(gc.num_bins, gc.bin_low, gc.bin_high)
    torch.manual_seed(seed + 7)
    if kind == "slots":
        return SlotWorldModel(savi=ae, action_dim=2, twohot=th, token_dim=gc.token_dim, num_layers=gc.num_layers,
                              heads=gc.heads, ff_dim=gc.ff_dim, dropout=gc.dynamics_dropout, dyn_lr=lr,
                              reward_lr=gc.reward_lr, head_hidden=gc.head_hidden, image_loss_steps=gc.image_loss_steps,
                              train_cache=gc.train_cache, time_causal=gc.time_causal, final_norm=gc.final_norm)
    return HolisticWorldModel(ae=ae, action_dim=2, twohot=th, hidden=gc.holistic_hidden, dyn_lr=lr,
                              reward_lr=gc.reward_lr, head_hidden=gc.head_hidden, image_loss_steps=gc.image_loss_steps)


def wm_job(cfg: Config, seed: int, kind: str, lr: float, state: dict[str, np.ndarray],
           latents: dict[str, np.ndarray], first: bool = False) -> dict[str, Any]:
    """Stage B for one seed, one representation and one dynamics learning rate: train the world model (dynamics +
    reward head) on the frozen, pre-encoded episodes until its validation open-loop pixel MSE (mean over horizons
    1 … eval_horizon) plateaus or ``cfg.wm_steps`` run out (:func:`icml25.train.train_until_plateau`), keep the best
    weights (early stopping), then score open-loop pixel MSE per horizon on validation and test, the reward head's
    error, and (slots) the reward model's attention on the discs."""
    import copy

    import torch
    from icml25.train import train_until_plateau

    from sold.world import actions_after, n_params, sample_windows

    torch.set_num_threads(1)
    d = _data(cfg, seed)
    split, vid, gc = d["split"], d["vid"], cfg.agent
    c, h = cfg.eval_context, cfg.eval_horizon
    ae = _build_ae(cfg, kind, state)
    lat = {k: torch.as_tensor(v) for k, v in latents.items()}
    acts = {k: actions_after(e.actions) for k, e in split.items()}
    wm = _world_model(cfg, kind, ae, lr, seed)
    rng = np.random.default_rng(seed)
    x = torch.as_tensor(vid["train"])
    rew = torch.as_tensor(split["train"].rewards)
    ctx, seq = gc.max_context, gc.max_context + gc.dyn_horizon
    e, t = lat["train"].shape[:2]
    from sold.savi import as_video

    def step(_: int) -> None:
        idx, off = sample_windows(e, t, seq, gc.batch, rng)
        sl = [slice(o, o + seq) for o in off]
        wm.train_step(torch.stack([lat["train"][i, s] for i, s in zip(idx, sl)]),
                      as_video(torch.stack([x[i, s] for i, s in zip(idx, sl)]), wm.image_size),
                      torch.stack([acts["train"][i, s] for i, s in zip(idx, sl)]),
                      torch.stack([rew[i, s] for i, s in zip(idx, sl)]), context=ctx, horizon=seq - ctx)

    def evaluate() -> float:
        return float(np.mean(wm.open_loop_mse(lat["val"], vid["val"], acts["val"], context=c, horizon=h)))

    best: dict[str, Any] = {}

    def keep(at: int, value: float) -> None:
        best["state"] = copy.deepcopy({k: v for k, v in wm.state_dict().items()})

    t0 = time.perf_counter()
    curve = train_until_plateau(step, evaluate, max_steps=cfg.wm_steps, eval_every=cfg.wm_eval_every,
                                patience=cfg.wm_patience, higher_is_better=False, on_improve=keep,
                                evaluate_first=True)
    wm.load_state_dict(best["state"])
    wm.dynamics.eval()
    rec: dict[str, Any] = {"seconds": time.perf_counter() - t0, "curve": curve.to_dict(),
                           "steps_trained": curve.steps[-1], "best_step": curve.best_step,
                           "params": {"autoencoder": n_params(ae), "dynamics": n_params(wm.dynamics),
                                      "reward": n_params(wm.reward)}}
    rec["val"] = wm.open_loop_mse(lat["val"], vid["val"], acts["val"], context=c, horizon=h).tolist()
    rec["test"] = wm.open_loop_mse(lat["test"], vid["test"], acts["test"], context=c, horizon=h).tolist()
    with torch.no_grad():  # copy the last context latent: the autoencoder's floor with no dynamics at all
        still = wm.decode_image(lat["test"][:, c - 1: c].expand(-1, h, *lat["test"].shape[2:]))
        truth = as_video(vid["test"][:, c: c + h], wm.image_size)
        rec["copy_latent"] = ((still - truth) ** 2).mean(dim=(0, 2, 3, 4)).numpy().tolist()
        # the reward head on the test episodes (frames 1 … c + h − 1; frame 0's reward is NaN) vs the training mean
        r_true = torch.as_tensor(split["test"].rewards[:, 1: c + h])
        r_pred = wm.twohot.mean(wm.reward(lat["test"][:, : c + h]))[:, 1:]
        r_mean = float(np.nanmean(split["train"].rewards))
        rec["reward_mse"] = float(((r_pred - r_true) ** 2).mean())
        rec["reward_mse_mean"] = float(((r_mean - r_true) ** 2).mean())
    if kind == "slots" and split["test"].segs is not None and split["test"].targets is not None:
        with torch.no_grad():
            att = wm.reward.output_attention_on_slots(lat["test"][:, : c + h]).numpy()
            _, masks = ae.decode(lat["test"][:, : c + h])
        rec["attn_target"], rec["attn_other"] = _target_attention(
            att, masks.numpy(), split["test"].segs[:, : c + h], split["test"].targets, cfg.env.num_objects)
    if first:
        with torch.no_grad():
            pred = wm.dynamics.rollout(lat["test"][:1, :c], acts["test"][:1, : c + h - 1], h)
            rec["example"] = np.clip(wm.decode_image(pred)[0].numpy() * 255, 0, 255).astype(np.uint8)
    return rec


def count_update(agent) -> dict[str, float]:
    """The arithmetic and the operator count of one ``agent._update()``: ``gflop`` (torch's flop counter: matrix
    products, attention and convolutions, forward and backward), ``conv_gflop`` (its convolution share: the
    autoencoder's encoder and decoder) and ``ops`` (aten operators dispatched, forward, backward and optimiser)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode

    class _Ops(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.n += 1
            return func(*args, **(kwargs or {}))

    flops, ops = FlopCounterMode(display=False), _Ops()
    with flops, ops:
        agent._update()
    by_op = flops.get_flop_counts().get("Global", {})
    conv = sum(v for k, v in by_op.items() if "convolution" in str(k))
    return {"gflop": flops.get_total_flops() / 1e9, "conv_gflop": conv / 1e9, "ops": float(ops.n)}


def _timing_agent(cfg: Config, seed: int, kind: str, state: dict[str, np.ndarray] | None):
    """An agent whose buffer holds four of the seed's training episodes, after one warm-up update."""
    from sold.agent import SOLD

    split = _data(cfg, seed)["split"]["train"]
    agent = SOLD(_env(cfg), config=cfg.agent, ae_config=cfg.ae, autoencoder=_build_ae(cfg, kind, state),
                 representation=kind, seed=seed)
    for e in range(min(4, len(split))):
        agent.buffer.start(split.frames[e, 0], 2)
        for t in range(1, split.frames.shape[1]):
            agent.buffer.add(split.frames[e, t], split.actions[e, t], split.rewards[e, t])
    agent._update()  # warm-up
    return agent


def speed_job(cfg: Config, seed: int, kind: str, state: dict[str, np.ndarray], n: int = 3) -> dict[str, Any]:
    """Seconds per agent update (world model + imagination, as in ``SOLD.learn``), where they go, and the counted
    arithmetic and operators of one more update (:func:`count_update`, not timed)."""
    import torch

    torch.set_num_threads(1)
    agent = _timing_agent(cfg, seed, kind, state)
    parts: dict[str, float] = {}
    t0 = time.perf_counter()
    for _ in range(n):
        agent._update(parts)
    sec = (time.perf_counter() - t0) / n
    return {"update_seconds": sec, "parts": {k: v / n for k, v in parts.items()}, "counts": count_update(agent)}


RL_KINDS = ("slots", "holistic", "sac", "random", "oracle")
"""Behaviour-learning rows: the two world-model agents, SB3's SAC on the true object states (the issue's upper
reference, the same number of environment steps), the scripted oracle (an upper bound) and a random policy."""


def _sac_policy(cfg: Config, seed: int):
    """SB3's SAC (its defaults; replay buffer sized to the budget) trained on :class:`TrueStateObservation` for
    ``cfg.rl_steps`` environment steps; returns a deterministic policy ``state -> action``."""
    from stable_baselines3 import SAC

    from sold.envs import TrueStateObservation

    env = TrueStateObservation(_env(cfg))
    env.reset(seed=seed)
    model = SAC("MlpPolicy", env, seed=seed, device="cpu", buffer_size=max(cfg.rl_steps, 1),
                learning_starts=min(100, max(cfg.rl_steps // 10, 1)), verbose=0)
    model.learn(cfg.rl_steps)
    return lambda obs: model.predict(obs, deterministic=True)[0]


def rl_job(cfg: Config, seed: int, kind: str, state: dict[str, np.ndarray] | None) -> dict[str, Any]:
    """Behaviour learning on 'distinct' for one agent (``kind`` 'slots' / 'holistic' with the pre-trained
    autoencoder ``state``; same budget), SB3's SAC on true states ('sac', same number of env steps), or the
    'random' / 'oracle' policies."""
    import torch

    from sold.agent import SOLD

    torch.set_num_threads(1)
    ev_seed = seed * 1_000_003 + 90_000
    if kind in ("slots", "holistic"):
        agent = SOLD(_env(cfg), config=cfg.agent, ae_config=cfg.ae, autoencoder=_build_ae(cfg, kind, state),
                     representation=kind, seed=seed)
        t0 = time.perf_counter()
        agent.learn(cfg.rl_steps)
        r = agent.evaluate(_env(cfg), cfg.rl_eval_episodes, seed=ev_seed)
        r["seconds"] = time.perf_counter() - t0
        return r
    if kind not in ("sac", "random", "oracle"):
        raise ValueError(f"rl_job: kind must be one of {RL_KINDS}, got {kind!r}")
    env = _env(cfg)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    sac = _sac_policy(cfg, seed) if kind == "sac" else None
    fin, anys, rets = [], [], []
    for i in range(cfg.rl_eval_episodes):
        env.reset(seed=ev_seed + i)
        done, hit, ret = False, False, 0.0
        while not done:
            if kind == "random":
                a = rng.uniform(-1, 1, 2)
            elif kind == "sac":
                a = sac(env.true_state())
            else:
                a = env.oracle_action()
            _, rew, term, trunc, info = env.step(a)
            ret += rew
            hit = hit or info["success"]
            done = term or trunc
        fin.append(float(info["success"]))
        anys.append(float(hit))
        rets.append(ret)
    return {"success": float(np.mean(fin)), "any_success": float(np.mean(anys)), "return": float(np.mean(rets)),
            "seconds": time.perf_counter() - t0}


# ---------------------------------------------------------------------------------------------- pool
def _pool(workers: int) -> ForkPool:
    """The shared fork pool, with torch and sold's agent imported before forking so the workers inherit them."""
    return ForkPool(workers, preload=("torch", "sold.agent"))


_CACHE: dict[tuple, list[dict[str, Any]]] = {}
_WANT_RL = [False]


def _results(cfg: Config, seeds: list[int]) -> list[dict[str, Any]]:
    """The per-seed results, run once per reproduce call and shared by the experiments.

    Work is split into small jobs so that two workers stay busy: first one stage-A job per (seed, autoencoder) —
    the SAVi jobs, the longest, first — and, as each one finishes, the update-speed job and, on the first
    ``wm_tune_seeds`` seeds, one world model per dynamics learning rate of its grid. Once those are in, each model's
    learning rate is chosen alike on the validation episodes (:func:`_select`, grids extended past an edge choice)
    and the other seeds train their world models at the chosen rate only (and, with ``--rl``, behaviour learning)."""
    from concurrent.futures import as_completed

    rl = _WANT_RL[0]
    key = (repr(cfg), tuple(seeds), rl)
    if key in _CACHE:
        return _CACHE[key]
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    lr_ae = {"slots": cfg.ae.lr, "holistic": cfg.ae.holistic_lr}
    grids = {"slots": cfg.lr_grid, "holistic": cfg.holistic_lr_grid}
    tune = seeds[: cfg.wm_tune_seeds]
    pool = _pool(cfg.workers if len(seeds) * 2 > 1 else 1)
    try:
        ae_futs = {pool.submit(ae_job, cfg, s, kind, lr_ae[kind], keep=True): (s, kind)
                   for kind in ("slots", "holistic") for s in seeds}
        later: dict[Future, tuple] = {}
        if rl:
            for s in seeds:
                for kind in ("sac", "random", "oracle"):
                    later[pool.submit(rl_job, cfg, s, kind, None)] = ("rl", s, kind)
        ae_res: dict[tuple, dict[str, Any]] = {}
        wm: dict[tuple, Future] = {}
        for f in as_completed(ae_futs):
            s, kind = ae_futs[f]
            r = f.result()
            ae_res[(s, kind)] = r
            if s in tune:
                for lr in grids[kind]:
                    wm[(s, kind, lr)] = pool.submit(wm_job, cfg, s, kind, lr, r["state"], r["latents"], s == seeds[0])
            later[pool.submit(speed_job, cfg, s, kind, r["state"])] = ("speed", s, kind)
        wm_res = {k: f.result() for k, f in wm.items()}
        sel = _select(cfg, tune, wm_res, ae_res, pool)
        chosen = {k: sel[k].params["lr"] for k in grids}
        for s in seeds[len(tune):]:
            for kind in grids:
                r = ae_res[(s, kind)]
                wm[(s, kind, chosen[kind])] = pool.submit(wm_job, cfg, s, kind, chosen[kind], r["state"],
                                                          r["latents"], False)
        if rl:
            for s in seeds:
                for kind in grids:
                    later[pool.submit(rl_job, cfg, s, kind, ae_res[(s, kind)]["state"])] = ("rl", s, kind)
        wm_res.update({k: f.result() for k, f in wm.items() if k not in wm_res})
        done = {later[f]: f.result() for f in list(later)}
    finally:
        pool.close()
    res = []
    for s in seeds:
        a, b = ae_res[(s, "slots")], ae_res[(s, "holistic")]
        out: dict[str, Any] = {
            "seed": s, "env_steps_per_s": a["env_steps_per_s"], "ari_untrained": a["ari_untrained"],
            "ari": a["ari_test"], "ari_val": a["ari_val"], "savi_seconds": a["seconds"],
            "holistic_ae_seconds": b["seconds"], "recon_mse": {"slots": a["recon_test"], "holistic": b["recon_test"]},
            "controls": a["controls"], "tuned": s in tune,
            "wm": {(kind, lr): v for (ss, kind, lr), v in wm_res.items() if ss == s},
            "chosen": chosen,
            "update_seconds": {kind: done[("speed", s, kind)]["update_seconds"] for kind in grids},
            "update_parts": {kind: done[("speed", s, kind)]["parts"] for kind in grids},
            "update_counts": {kind: done[("speed", s, kind)]["counts"] for kind in grids}}
        out["params"] = {kind: out["wm"][(kind, chosen[kind])]["params"] for kind in grids}
        if "example" in a:
            out["example"] = a["example"]
        if rl:
            out["rl"] = {k: done[("rl", s, k)] for k in RL_KINDS}
        res.append(out)
    _CACHE.clear()
    _CACHE[key] = res
    _SELECTED.clear()
    _SELECTED[key] = sel
    return res


def _fmt(vals) -> str:
    m, sd = mean_sd([float(v) for v in vals])
    return f"{m:.4g} ± {sd:.2g}" if len(vals) > 1 else f"{m:.4g}"


# ---------------------------------------------------------------------------------------------- experiments
def decomposition(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Stage A: SAVi's foreground ARI (the gate before stage B) vs the same SAVi before training."""
    sec = Section("decomposition")
    res = _results(cfg, seeds)
    ari = [r["ari"] for r in res]
    sec.add(Claim.gate(
        claim=ARI_GATE_NAME, metric="FG-ARI of SAVi masks vs true object masks (test episodes, frames 0–12)",
        ours=ari, controls={f"fixed gate {ARI_GATE}": ARI_GATE, "same SAVi untrained": [r["ari_untrained"] for r in res]},
        paired=True, paper="official README: check the decomposition before RL (no number)",
        note=f"{cfg.ae.pretrain_steps} steps, batch {cfg.ae.batch}×{cfg.ae.seq_len} frames, K={cfg.ae.num_slots}; "
             "no validation curve (fixed pre-training budget)"))
    sec.add(Claim.compare(
        claim="Pre-training improves SAVi's decomposition over its random initialisation",
        metric="FG-ARI (test episodes)", ours=ari, baseline=[r["ari_untrained"] for r in res],
        baseline_name="same SAVi before training", paper="—", kind="property", paired=True))
    sec.table(f"Stage A: autoencoders (same {cfg.ae.pretrain_steps} steps and batch; lr SAVi {cfg.ae.lr:g}, "
              f"holistic {cfg.ae.holistic_lr:g})",
              ["seed", "SAVi FG-ARI", "SAVi FG-ARI untrained", "SAVi recon MSE", "holistic recon MSE",
               "SAVi s", "holistic AE s"],
              [[r["seed"], r["ari"], r["ari_untrained"], r["recon_mse"]["slots"], r["recon_mse"]["holistic"],
                r["savi_seconds"], r["holistic_ae_seconds"]] for r in res])
    with_ex = [r for r in res if r.get("example") is not None]
    if with_ex:
        best = max(with_ex, key=lambda r: r["ari"])
        worst = min(with_ex, key=lambda r: r["ari"])
        _plot_decomposition(best["example"], out / "decomposition.png",
                            title=f"highest FG-ARI: seed {best['seed']} ({best['ari']:.2f})")
        sec.figures.append("decomposition.png")
        if worst is not best:
            _plot_decomposition(worst["example"], out / "decomposition_lowest.png",
                                title=f"lowest FG-ARI: seed {worst['seed']} ({worst['ari']:.2f})")
            sec.figures.append("decomposition_lowest.png")
    return sec


_SELECTED: dict[tuple, dict] = {}


def _select(cfg: Config, tune: list[int], wm_res: dict[tuple, dict], ae_res: dict[tuple, dict], pool):
    """Each world model's dynamics lr, chosen alike on the validation episodes of the tuning seeds (score: the best
    validation open-loop MSE of the plateau-trained model, mean over those seeds); a choice at the edge of its grid
    gets up to ``cfg.tune_extend`` points beyond it (trained on the tuning seeds like the grid points)."""
    from icml25.tuning import tune_alike

    def evaluator(kind: str):
        def score(p) -> float:
            lr = p["lr"]
            todo = {s: pool.submit(wm_job, cfg, s, kind, lr, ae_res[(s, kind)]["state"], ae_res[(s, kind)]["latents"],
                                   s == tune[0]) for s in tune if (s, kind, lr) not in wm_res}   # beyond the edge
            wm_res.update({(s, kind, lr): f.result() for s, f in todo.items()})
            return float(np.mean([np.mean(wm_res[(s, kind, lr)]["val"]) for s in tune]))
        return score

    return tune_alike({"slots": (evaluator("slots"), {"lr": list(cfg.lr_grid)}),
                       "holistic": (evaluator("holistic"), {"lr": list(cfg.holistic_lr_grid)})},
                      higher_is_better=False, extend=cfg.tune_extend)


def _selection(cfg: Config, seeds: list[int]):
    _results(cfg, seeds)
    return _SELECTED[(repr(cfg), tuple(seeds), _WANT_RL[0])]


KIND_NAMES = {"slots": "slot world model (SAVi + OCVP)", "holistic": "holistic world model (CNN-AE + GRU)"}


def horizon_blocks(h: int) -> dict[str, tuple[str, slice]]:
    """The scored horizons, disjoint so that no finding is counted twice: the first step and the second half."""
    return {"short": ("horizon 1", slice(0, 1)), "long": (f"horizons {h // 2 + 1}–{h}", slice(h // 2, h))}


def wm_gate_name(kind: str, block: str, h: int) -> str:
    """The claim text of the competence gate of ``kind``'s world model at a block of :func:`horizon_blocks`."""
    return (f"Gate: the {KIND_NAMES[kind]} has learned to predict ({horizon_blocks(h)[block][0]}): validation MSE "
            "plateaued, and it beats copying the last frame and the mean frame")


def open_loop(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Stage B: open-loop pixel MSE of the slot and holistic world models, their competence gates (validation
    plateau; beating copy-last-frame and the mean frame) and the comparison at disjoint horizon blocks."""
    from icml25.plots import learning_curves
    from icml25.train import Curve
    from icml25.tuning import selections_table

    sec = Section("open-loop prediction")
    res = _results(cfg, seeds)
    sel = _selection(cfg, seeds)
    kinds = ("slots", "holistic")
    lr = {k: sel[k].params["lr"] for k in kinds}
    tuned = [r for r in res if r["tuned"]]
    cols, rows = selections_table(sel)
    sec.table(f"Dynamics learning rate chosen on the validation episodes of seeds {[r['seed'] for r in tuned]} "
              f"(grids of the same size, each point trained to a validation plateau within {cfg.wm_steps} steps; "
              f"score = best validation open-loop pixel MSE, mean over horizons 1–{cfg.eval_horizon})", cols, rows)
    sec.table("Every dynamics learning rate tried (tuning seeds; validation score, lower is better)",
              ["model", "lr", "validation score", "steps trained (per seed)", "chosen"],
              [[k, f"{p:g}", float(np.mean([np.mean(r["wm"][(k, p)]["val"]) for r in tuned])),
                ", ".join(str(r["wm"][(k, p)]["steps_trained"]) for r in tuned), "yes" if p == lr[k] else ""]
               for k in kinds for p in sorted(sel[k].grid["lr"])])
    h = cfg.eval_horizon
    mse = {k: np.array([r["wm"][(k, lr[k])]["test"] for r in res]) for k in kinds}                    # [S, H]
    ctl = {"copy last frame": np.array([r["controls"]["test"]["copy_frame"] for r in res]),
           "mean frame": np.array([r["controls"]["test"]["mean_frame"] for r in res])}
    still = {k: np.array([r["wm"][(k, lr[k])]["copy_latent"] for r in res]) for k in kinds}
    curves = {k: [Curve.from_dict(r["wm"][(k, lr[k])]["curve"]) for r in res] for k in kinds}
    blocks = horizon_blocks(h)
    for k in kinds:
        for b, (label, sl) in blocks.items():
            sec.add(Claim.gate(
                claim=wm_gate_name(k, b, h), metric=f"open-loop pixel MSE, mean over {label} (test episodes, "
                                                     f"{cfg.eval_context} context frames)",
                ours=mse[k][:, sl].mean(1), controls={n: v[:, sl].mean(1) for n, v in ctl.items()},
                curves=curves[k], higher_is_better=False, paired=True,
                note=f"lr {lr[k]:g}; trained until {cfg.wm_patience} validation evaluations (every "
                     f"{cfg.wm_eval_every} steps) without a new best, at most {cfg.wm_steps} steps; best weights "
                     f"kept; steps trained per seed {[r['wm'][(k, lr[k])]['steps_trained'] for r in res]}"))
    note = (f"paired by seed; both trained to a validation plateau (at most {cfg.wm_steps} steps); "
            + "; ".join(sel[k].note() for k in sel))
    sec.add(Claim.compare(
        claim=f"Slot dynamics predict pixels better than the holistic model at long horizons ({blocks['long'][0]})",
        metric=f"open-loop pixel MSE, mean over {blocks['long'][0]} (test episodes, {cfg.eval_context} context "
               "frames)", ours=mse["slots"][:, blocks["long"][1]].mean(1),
        baseline=mse["holistic"][:, blocks["long"][1]].mean(1), baseline_name=KIND_NAMES["holistic"],
        paper=PAPER_WM, kind="paper", higher_is_better=False, paired=True, note=note,
        gates=[wm_gate_name(k, "long", h) for k in kinds]))
    sec.add(Claim.compare(
        claim="Slot dynamics predict pixels better than the holistic model at horizon 1",
        metric="open-loop pixel MSE at horizon 1", ours=mse["slots"][:, 0], baseline=mse["holistic"][:, 0],
        baseline_name=KIND_NAMES["holistic"], paper=PAPER_WM, kind="paper", higher_is_better=False,
        paired=True, note=note + "; at one step the autoencoders' reconstruction error dominates",
        gates=[wm_gate_name(k, "short", h) for k in kinds]))
    rows = [[i + 1, _fmt(mse["slots"][:, i]), _fmt(mse["holistic"][:, i]), _fmt(ctl["copy last frame"][:, i]),
             _fmt(ctl["mean frame"][:, i]), _fmt(still["slots"][:, i]), _fmt(still["holistic"][:, i])]
            for i in range(h)]
    sec.table(f"Open-loop pixel MSE per horizon on the test episodes (mean ± sd over {len(res)} seeds); controls: "
              "copy the last context frame, the mean training frame, and each autoencoder's decoded last context "
              "latent held still (its reconstruction floor without dynamics)",
              ["horizon", "SOLD slots (OCVP)", "holistic (GRU)", "copy last frame", "mean frame",
               "slots held still", "holistic held still"], rows)
    sec.table("World-model training (validation open-loop MSE until plateau; per seed at the chosen lr)",
              ["seed", "model", "steps trained", "best step", "stopped by", "best validation MSE", "seconds"],
              [[r["seed"], k, r["wm"][(k, lr[k])]["steps_trained"], r["wm"][(k, lr[k])]["best_step"],
                r["wm"][(k, lr[k])]["curve"]["stopped_by"], min(r["wm"][(k, lr[k])]["curve"]["values"]),
                r["wm"][(k, lr[k])]["seconds"]] for r in res for k in kinds])
    p = res[0]["params"]
    tot = {k: sum(p[k].values()) for k in p}
    sec.table("Parameters (autoencoder + dynamics + reward head)", ["model", "autoencoder", "dynamics", "reward",
                                                                    "total"],
              [[k, p[k]["autoencoder"], p[k]["dynamics"], p[k]["reward"], tot[k]] for k in p])
    learning_curves({"SOLD slots (OCVP)": mse["slots"], "holistic (GRU)": mse["holistic"],
                     "copy last frame": ctl["copy last frame"], "mean frame": ctl["mean frame"]},
                    out / "open_loop_mse.png", x=list(range(1, h + 1)), xlabel="open-loop horizon",
                    ylabel="pixel MSE", title="Open-loop prediction on held-out episodes (mean ± sd)")
    sec.figures.append("open_loop_mse.png")
    ex = res[0]
    if ex.get("example") is not None and "example" in ex["wm"].get(("slots", lr["slots"]), {}) \
            and "example" in ex["wm"].get(("holistic", lr["holistic"]), {}):
        _plot_rollout(ex["example"]["frames"], ex["wm"][("slots", lr["slots"])]["example"],
                      ex["wm"][("holistic", lr["holistic"])]["example"], cfg.eval_context, out / "rollout.png")
        sec.figures.append("rollout.png")
    return sec


REWARD_GATE = ("Gate: the slot reward head has learned the reward (test MSE of its mean prediction below predicting "
               "the training episodes' mean reward)")
ATTN_GATE = "Gate: the slot reward model's attention on the target disc's slot is above chance (1/K)"


def reward_attention(cfg: Config, seeds: list[int], out: Path) -> Section:
    """The slot reward model's output-token attention on the target disc's slot vs the other discs' slots, behind
    three gates: SAVi decomposes the scene, the reward head predicts the reward, the attention is above chance."""
    sec = Section("reward attention")
    res = _results(cfg, seeds)
    lr = _selection(cfg, seeds)["slots"].params["lr"]
    w = [r["wm"][("slots", lr)] for r in res]
    sec.add(Claim.gate(
        claim=REWARD_GATE, metric="MSE of the TwoHot mean reward prediction (test episodes, steps 1–12)",
        ours=[x["reward_mse"] for x in w], controls={"training-mean reward": [x["reward_mse_mean"] for x in w]},
        higher_is_better=False, paired=True,
        note="trained jointly with the dynamics (the world model's plateau is gated in the open-loop section); "
             f"reward: −distance of the odd-coloured disc to the goal (task {cfg.env.task!r})"))
    sec.table("Reward head (test MSE of the mean prediction; holistic beside it)",
              ["seed", "slots", "holistic", "training-mean reward"],
              [[r["seed"], r["wm"][("slots", lr)]["reward_mse"],
                r["wm"][("holistic", _selection(cfg, seeds)["holistic"].params["lr"])]["reward_mse"],
                r["wm"][("slots", lr)]["reward_mse_mean"]] for r in res])
    tgt = [x.get("attn_target", float("nan")) for x in w]
    oth = [x.get("attn_other", float("nan")) for x in w]
    ok = [i for i in range(len(res)) if np.isfinite(tgt[i]) and np.isfinite(oth[i])]
    sec.table("Reward-model attention share per seed", ["seed", "target disc", "other discs (mean)"],
              [[r["seed"], t, o] for r, t, o in zip(res, tgt, oth)])
    if not ok:
        sec.notes.append("reward attention: no frame where the target disc has a slot of its own (decomposition "
                         "failed), so no read-out")
        return sec
    chance = 1.0 / cfg.ae.num_slots
    sec.add(Claim.gate(
        claim=ATTN_GATE, metric="share of the last layer's output-token attention on the target disc's slot",
        ours=[tgt[i] for i in ok], controls={f"chance 1/{cfg.ae.num_slots}": chance}, higher_is_better=True,
        note=f"{len(ok)}/{len(res)} seeds have a read-out"))
    sec.add(Claim.compare(
        claim="The slot reward model attends more to the target disc's slot than to the other discs' slots",
        metric="share of the last layer's output-token attention (mean over heads) on a disc's slot, same step",
        ours=[tgt[i] for i in ok], baseline=[oth[i] for i in ok], baseline_name="mean over the non-target discs",
        paper=PAPER_ATTN, kind="paper", paired=True, gates=[ARI_GATE_NAME, REWARD_GATE, ATTN_GATE],
        note=f"task {cfg.env.task!r}; chance = 1/{cfg.ae.num_slots}; "
             f"frames where the target shares its slot are skipped; {len(ok)}/{len(res)} seeds have a read-out"))
    return sec


def speed(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Engineering targets: environment steps per model update, and SOLD's update cost vs the holistic agent's."""
    sec = Section("speed")
    res = _results(cfg, seeds)
    env_sps = [r["env_steps_per_s"] for r in res]
    upd = {k: [r["update_seconds"][k] for r in res] for k in ("slots", "holistic")}
    sec.add(Claim.threshold(
        claim="The environment is at least 20× faster than a SOLD update (env steps/s ÷ updates/s)",
        metric="env steps per second × seconds per SOLD update", ours=[e * u for e, u in zip(env_sps, upd["slots"])],
        threshold=20.0, paper="engineering target of the issue", kind="target",
        note="one torch thread per worker, two workers, alone under the CPU lock"))
    sec.add(Claim.threshold(
        claim="A SOLD update costs at most 3× a holistic-agent update",
        metric="seconds per update (world model + imagination), SOLD ÷ holistic",
        ours=[a / b for a, b in zip(upd["slots"], upd["holistic"])], threshold=3.0,
        paper="engineering target of the issue", kind="target", higher_is_better=False,
        note=f"batch {cfg.agent.batch}×{cfg.agent.max_context + cfg.agent.dyn_horizon} steps, imagination horizon "
             f"{cfg.agent.imag_horizon}; SOLD re-encodes each window with SAVi and decodes K slots per frame"))
    sec.table("Speed per seed", ["seed", "env steps/s", "SOLD s/update", "holistic s/update"],
              [[r["seed"], r["env_steps_per_s"], r["update_seconds"]["slots"], r["update_seconds"]["holistic"]]
               for r in res])
    parts = ("encode", "world_model", "imagination")
    sec.table("Where an update's time goes (seconds per update, mean ± sd over seeds; one torch thread, the other "
              "worker busy; encode = sample + re-encode the window with the frozen autoencoder)",
              ["agent", *parts, "total"],
              [[name, *[_fmt([r["update_parts"][k][p] for r in res]) for p in parts],
                _fmt([r["update_seconds"][k] for r in res])]
               for k, name in (("slots", "SOLD (SAVi + OCVP + slot aggregation)"), ("holistic", "holistic (CNN-AE + GRU + MLP)"))])
    cnt = {k: {q: [r["update_counts"][k][q] for r in res] for q in ("gflop", "conv_gflop", "ops")}
           for k in ("slots", "holistic")}
    ratio = {q: [a / b for a, b in zip(cnt["slots"][q], cnt["holistic"][q])] for q in ("gflop", "ops")}
    sec.table("What an update computes (one counted update per seed, mean ± sd; GFLOP from torch's flop counter, "
              "forward + backward; conv = the autoencoders' convolutions; ops = aten operators dispatched)",
              ["agent", "GFLOP", "of which conv", "aten ops", "seconds"],
              [[name, _fmt(cnt[k]["gflop"]), _fmt(cnt[k]["conv_gflop"]), _fmt(cnt[k]["ops"]), _fmt(upd[k])]
               for k, name in (("slots", "SOLD"), ("holistic", "holistic"))]
              + [["SOLD ÷ holistic", _fmt(ratio["gflop"]), "", _fmt(ratio["ops"]),
                  _fmt([a / b for a, b in zip(upd["slots"], upd["holistic"])])]])
    return sec


SPEED_WIDTHS = ((64, 128, 128), (32, 64, 64), (16, 32, 32))
"""``--task speed-width``: (token_dim, ff_dim, head_hidden) of SOLD's transformers, the default first."""


def speed_width(cfg: Config, seeds: list[int], out: Path) -> Section:
    """``--task speed-width``: SOLD's update cost against the holistic agent's as its dynamics, reward, actor and
    critic transformers shrink (:data:`SPEED_WIDTHS`), the autoencoders unchanged. Timing only: untrained
    autoencoders (seeded), one worker, one torch thread, the best of ``3`` repeats of 5 updates per point."""
    import dataclasses

    import torch

    sec = Section("update cost vs the slot transformers' width")
    torch.set_num_threads(1)

    def measure(c: Config, seed: int, kind: str) -> dict[str, float]:
        torch.manual_seed(seed)
        agent = _timing_agent(c, seed, kind, None)
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(5):
                agent._update()
            best = min(best, (time.perf_counter() - t0) / 5)
        params = sum(p.numel() for m in (agent.world.dynamics, agent.world.reward, agent.learner.actor,
                                         agent.learner.critic) for p in m.parameters())
        return {"seconds": best, "params": float(params), **count_update(agent)}

    hol = {s: measure(cfg, s, "holistic") for s in seeds}
    rows, ratios = [], {}
    for width in SPEED_WIDTHS:
        td, ff, hh = width
        c = dataclasses.replace(cfg, agent=dataclasses.replace(cfg.agent, token_dim=td, ff_dim=ff, head_hidden=hh))
        sol = {s: measure(c, s, "slots") for s in seeds}
        ratios[width] = [sol[s]["seconds"] / hol[s]["seconds"] for s in seeds]
        rows.append([f"SOLD, width {td} (ff {ff}, heads' MLP {hh})" + (" — default" if width == SPEED_WIDTHS[0]
                                                                        else ""),
                     f"{np.mean([sol[s]['params'] for s in seeds]):.3g}", _fmt([sol[s]["gflop"] for s in seeds]),
                     _fmt([sol[s]["ops"] for s in seeds]), _fmt([sol[s]["seconds"] for s in seeds]),
                     _fmt(ratios[width]), _fmt([sol[s]["gflop"] / hol[s]["gflop"] for s in seeds])])
    rows.append(["holistic (GRU + MLPs)", f"{np.mean([hol[s]['params'] for s in seeds]):.3g}",
                 _fmt([hol[s]["gflop"] for s in seeds]), _fmt([hol[s]["ops"] for s in seeds]),
                 _fmt([hol[s]["seconds"] for s in seeds]), "1", "1"])
    sec.table(f"Seconds per update as SOLD's transformers shrink (seeds {seeds}, mean ± sd; parameters of dynamics, "
              "reward, actor and critic; the autoencoders are the same in every row)",
              ["agent", "parameters", "GFLOP", "aten ops", "s/update", "÷ holistic (time)", "÷ holistic (GFLOP)"],
              rows)
    small = SPEED_WIDTHS[-1]
    sec.notes.append(f"smallest width {small[0]}: {np.mean(ratios[small]):.2f}× the holistic update "
                     f"(default width: {np.mean(ratios[SPEED_WIDTHS[0]]):.2f}×)")
    return sec


def behaviour(cfg: Config, seeds: list[int], out: Path) -> Section:
    """``--rl``: success after the same number of environment steps, each world-model agent gated on beating a
    random policy's return."""
    sec = Section("behaviour learning")
    res = _results(cfg, seeds)
    rl = [r["rl"] for r in res]
    succ = {k: [x[k]["success"] for x in rl] for k in RL_KINDS}
    anys = {k: [x[k]["any_success"] for x in rl] for k in succ}
    rets = {k: [x[k]["return"] for x in rl] for k in succ}
    gates = {k: f"Gate: the {n} beats a random policy (mean evaluation return)"
             for k, n in (("slots", "SOLD agent"), ("holistic", "holistic agent"))}
    for k in gates:
        sec.add(Claim.gate(claim=gates[k], metric=f"mean return over {cfg.rl_eval_episodes} deterministic episodes",
                           ours=rets[k], controls={"random policy": rets["random"]}, paired=True,
                           note="same evaluation episodes (reset seeds) for the agent and the random policy"))
    sec.add(Claim.compare(
        claim=f"SOLD solves the task ({cfg.env.task!r}) more often than the holistic agent after {cfg.rl_steps} "
              "env steps",
        metric=f"final-step success rate over {cfg.rl_eval_episodes} deterministic episodes",
        ours=succ["slots"], baseline=succ["holistic"], baseline_name="holistic agent (same imagination code)",
        paper=PAPER_RL, kind="paper", paired=True, gates=list(gates.values())))
    names = {"slots": "SOLD", "holistic": "holistic agent", "sac": "SB3 SAC on true object states (reference)",
             "random": "random policy", "oracle": "scripted oracle on true state (upper bound)"}
    sec.table(f"Behaviour learning on {cfg.env.task!r} ({cfg.rl_steps} env steps each)",
              ["agent", "final-step success", "any-step success", "mean return"],
              [[names[k], _fmt(succ[k]), _fmt(anys[k]), _fmt(rets[k])] for k in succ])
    return sec


EXPERIMENTS = [decomposition, open_loop, reward_attention, speed]


def autoencoder_lr(cfg: Config, seeds: list[int], out: Path) -> Section:
    """``--task ae-lr``: both autoencoders' pre-training learning rates tuned alike.

    SAVi over ``ae_lr_grid`` and the holistic autoencoder over ``holistic_ae_lr_grid`` (same number of points, same
    spacing), each with the full run's pre-training budget, on the first ``ae_tune_seeds`` seeds; the criterion,
    the same for both, is the reconstruction MSE on the validation episodes (frames 0 … eval_context +
    eval_horizon − 1; reset seeds disjoint from training and test). SAVi's validation foreground ARI is reported
    beside it but not used to choose."""
    from concurrent.futures import as_completed

    from icml25.tuning import selections_table, tune_alike

    sec = Section("autoencoder learning rates")
    seeds = seeds[: cfg.ae_tune_seeds]
    grids = {"slots": cfg.ae_lr_grid, "holistic": cfg.holistic_ae_lr_grid}
    pool = _pool(cfg.workers)
    try:
        futs = {pool.submit(ae_job, cfg, s, kind, lr, keep=False): (s, kind, lr)
                for kind in ("slots", "holistic") for lr in grids[kind] for s in seeds}
        res = {futs[f]: f.result() for f in as_completed(futs)}

        def evaluator(kind: str):
            def score(p) -> float:
                lr = p["lr"]
                todo = {pool.submit(ae_job, cfg, s, kind, lr, keep=False): (s, kind, lr)
                        for s in seeds if (s, kind, lr) not in res}       # a point beyond the grid's edge
                res.update({todo[f]: f.result() for f in as_completed(todo)})
                return float(np.mean([res[(s, kind, lr)]["recon_val"] for s in seeds]))
            return score

        sel = tune_alike({k: (evaluator(k), {"lr": list(grids[k])}) for k in grids}, higher_is_better=False,
                         extend=cfg.tune_extend)
    finally:
        pool.close()
    grids = {k: sorted(sel[k].grid["lr"]) for k in grids}
    cols, rows = selections_table(sel)
    sec.table(f"Autoencoder learning rate chosen on the validation episodes (grids of the same size, extended by "
              f"up to {cfg.tune_extend} step past an edge choice; {cfg.ae.pretrain_steps} pre-training steps each, "
              f"seeds {seeds}; score = validation reconstruction MSE)", cols, rows)
    names = {"slots": "SAVi", "holistic": "holistic AE"}
    defaults = {"slots": cfg.ae.lr, "holistic": cfg.ae.holistic_lr}
    sec.table("Every autoencoder learning rate tried (mean ± sd over the tuning seeds)",
              ["autoencoder", "lr", "validation recon MSE", "validation FG-ARI (SAVi)", "test recon MSE",
               "seconds", "chosen", "default"],
              [[names[k], f"{lr:g}", _fmt([res[(s, k, lr)]["recon_val"] for s in seeds]),
                _fmt([res[(s, k, lr)]["ari_val"] for s in seeds]) if k == "slots" else "—",
                _fmt([res[(s, k, lr)]["recon_test"] for s in seeds]),
                _fmt([res[(s, k, lr)]["seconds"] for s in seeds]),
                "yes" if lr == sel[k].params["lr"] else "", "yes" if lr == defaults[k] else ""]
               for k in grids for lr in grids[k]])
    sec.table("Per seed", ["autoencoder", "lr", "seed", "validation recon MSE", "validation FG-ARI", "final train loss"],
              [[names[k], f"{lr:g}", s, res[(s, k, lr)]["recon_val"], res[(s, k, lr)]["ari_val"],
                res[(s, k, lr)]["final_loss"]] for k in grids for lr in grids[k] for s in seeds])
    for k in grids:
        chosen = sel[k].params["lr"]
        sec.notes.append(f"{names[k]} ({sel[k].note()}); the configured default is {defaults[k]:g} "
                         f"({'the same' if chosen == defaults[k] else 'DIFFERENT from the choice'})")
    return sec


TASKS = {"main": None, "ae-lr": [autoencoder_lr], "rl-long": EXPERIMENTS + [behaviour],
         "speed-width": [speed_width], "savi-long": EXPERIMENTS}
TASK_BUDGETS = {"rl-long": RL_LONG_BUDGETS, "savi-long": SAVI_LONG_BUDGETS}
"""Tasks that run on their own budgets (the others use :data:`sold.config.BUDGETS`)."""


# ---------------------------------------------------------------------------------------------- figures
def _plot_decomposition(ex: dict[str, Any], path: Path, *, title: str = "") -> None:
    from icml25.plots import _plt, save_figure

    plt = _plt()
    frames, recon, masks = ex["frames"], ex["savi_recon"], ex["savi_masks"].astype(np.float32)
    k = masks.shape[1]
    ts = [0, len(frames) // 2, len(frames) - 1]
    fig, axes = plt.subplots(len(ts), 2 + k, figsize=(1.2 * (2 + k), 1.2 * len(ts)))
    for i, t in enumerate(ts):
        axes[i, 0].imshow(frames[t].transpose(1, 2, 0))
        axes[i, 1].imshow(recon[t].transpose(1, 2, 0))
        for j in range(k):
            axes[i, 2 + j].imshow(masks[t, j], vmin=0, vmax=1, cmap="gray")
        for a in axes[i]:
            a.set_xticks([])
            a.set_yticks([])
    axes[0, 0].set_title("frame", fontsize=7)
    axes[0, 1].set_title("recon", fontsize=7)
    for j in range(k):
        axes[0, 2 + j].set_title(f"slot {j}", fontsize=7)
    if title:
        fig.suptitle(title, fontsize=8)
    save_figure(fig, path, dpi=80)


def _plot_rollout(frames: np.ndarray, slots_pred: np.ndarray, hol_pred: np.ndarray, context: int,
                  path: Path) -> None:
    from icml25.plots import _plt, save_figure

    plt = _plt()
    h = slots_pred.shape[0]
    fig, axes = plt.subplots(3, h, figsize=(1.0 * h, 3.2))
    for j in range(h):
        for i, (row, name) in enumerate(((frames[context + j], "truth"), (slots_pred[j], "SOLD"),
                                         (hol_pred[j], "holistic"))):
            axes[i, j].imshow(row.transpose(1, 2, 0))
            axes[i, j].set_xticks([])
            axes[i, j].set_yticks([])
            if j == 0:
                axes[i, j].set_ylabel(name, fontsize=7)
        axes[0, j].set_title(f"+{j + 1}", fontsize=7)
    save_figure(fig, path, dpi=80)


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int, rl: bool = False, task: str = "main") -> Report:
    """The experiment list on the picked budget; ``rl=True`` adds behaviour learning (:func:`behaviour`);
    ``task="ae-lr"`` runs the autoencoder learning-rate tuning (:func:`autoencoder_lr`) instead; ``task="rl-long"``
    the main run with behaviour learning on :data:`sold.config.RL_LONG_BUDGETS` (20 000 env steps, 3 seeds);
    ``task="savi-long"`` the main run with 8000 pre-training steps (:data:`sold.config.SAVI_LONG_BUDGETS`);
    ``task="speed-width"`` the update cost as SOLD's transformers shrink (:func:`speed_width`)."""
    from sold.errors import SoldError

    if task not in TASKS:
        raise SoldError(f"task must be one of {sorted(TASKS)}, got {task!r}")
    exps = TASKS[task] or (EXPERIMENTS + ([behaviour] if rl else []))
    _WANT_RL[0] = rl or task == "rl-long"
    budgets = TASK_BUDGETS.get(task, BUDGETS)
    try:
        return run_experiments("sold", exps, budgets, quick=quick, smoke=smoke, out=out, seed=seed)
    finally:
        _CACHE.clear()
        _SELECTED.clear()
        _WANT_RL[0] = False
