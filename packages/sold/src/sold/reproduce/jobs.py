"""World-model jobs of one seed: stage A (:func:`ae_job`, an autoencoder pre-trained at one learning rate), the
trivial open-loop controls (:func:`controls`) and stage B (:func:`wm_job`, a world model trained to a validation
plateau)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from sold.config import Config
from sold.reproduce.common import _build_ae, _data


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
