"""World models on a frozen representation: SOLD's slot model and the holistic baseline, trained and scored alike.

Both pair a frozen autoencoder (``SAVi`` or ``HolisticAE``) with a residual autoregressive dynamics model and a TwoHot
reward head. The dynamics loss of SOLD (Sec. 3.2) from a context of ``c`` steps over a horizon ``H``::

    L_dyn = MSE(ŝ_{c+1:c+H}, s_{c+1:c+H}) + MSE(decode(ŝ_{c+1:c+H}), x_{c+1:c+H})

(``image_loss_steps > 0`` decodes only that many randomly chosen predicted steps per update, for CPU speed)
and the reward loss ``−log p(r_t)`` over the steps with a finite reward (the first reward of an episode is NaN).

Action convention: episode arrays store at ``t`` the action that *led to* frame ``t``; the dynamics take the action
taken *after* step ``t``, i.e. ``actions_after[t] = actions[t + 1]`` (:func:`actions_after`).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from sold.aggregator import PerStepMLP, SlotAggregationTransformer
from sold.dreamer import TwoHot
from sold.dynamics import OCVPDynamics
from sold.errors import SoldError, check_context
from sold.holistic import GRUDynamics, HolisticAE
from sold.rollout import GrowingHistory
from sold.savi import SAVi, as_video


def actions_after(actions: np.ndarray | torch.Tensor) -> torch.Tensor:
    """``[..., T, A]`` led-to actions → the action taken after each step (the last step gets zeros)."""
    a = torch.as_tensor(np.asarray(actions) if not isinstance(actions, torch.Tensor) else actions,
                        dtype=torch.float32)
    return torch.cat([a[..., 1:, :], torch.zeros_like(a[..., :1, :])], -2)


class _WorldModel(nn.Module):
    kind = ""
    dynamics: nn.Module
    reward: nn.Module

    def __init__(self, *, twohot: TwoHot, dyn_lr: float, reward_lr: float, dyn_clip: float = 3.0,
                 reward_clip: float = 10.0, image_loss: bool = True, image_loss_steps: int = 0):
        super().__init__()
        self.image_loss_steps = image_loss_steps
        self._gen = torch.Generator().manual_seed(0)
        self.twohot = twohot
        self.dyn_lr, self.reward_lr, self.dyn_clip, self.reward_clip = dyn_lr, reward_lr, dyn_clip, reward_clip
        self.image_loss = image_loss

    def _make_opts(self) -> None:
        self.dyn_opt = torch.optim.Adam(self.dynamics.parameters(), lr=self.dyn_lr)
        self.reward_opt = torch.optim.Adam(self.reward.parameters(), lr=self.reward_lr)

    # representation: implemented by the subclasses
    def encode(self, video) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def decode_image(self, latents: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def image_size(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def predict_next(self, history: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """``history [B, T, ...]``, ``actions [B, T, A]`` (after each step) → the next latent ``[B, ...]``."""
        return self.dynamics(history, actions)[:, -1]

    def predictor(self):
        """A ``predict_next`` for one imagined rollout: with the dynamics' cache (:class:`CachedPredictor`) where
        that is exact, else :meth:`predict_next` (which recomputes the whole history at every step)."""
        return CachedPredictor(self.dynamics) if getattr(self.dynamics, "can_cache", False) else self.predict_next

    @torch.no_grad()
    def encode_episodes(self, frames: np.ndarray, *, chunk: int = 16) -> torch.Tensor:
        """Encode whole episodes ``[E, T, 3, H, W]`` with the frozen representation (running encoding)."""
        return torch.cat([self.encode(frames[i: i + chunk]) for i in range(0, len(frames), chunk)])

    def losses(self, latents: torch.Tensor, frames: torch.Tensor, acts_after: torch.Tensor,
               rewards: torch.Tensor | None, *, context: int, horizon: int) -> dict[str, torch.Tensor]:
        """Dynamics loss (latent + decoded-image MSE over ``horizon`` open-loop steps) and reward loss."""
        seq = latents.shape[1]
        check_context(context, context, horizon, seq)
        pred = self.dynamics.rollout(latents[:, :context], acts_after[:, : context + horizon - 1], horizon)
        target = latents[:, context: context + horizon]
        out = {"latent_mse": ((pred - target) ** 2).mean()}
        if self.image_loss:
            tgt = frames[:, context: context + horizon]
            if 0 < self.image_loss_steps < horizon:  # CPU: decode a random subset of the predicted steps
                keep = torch.randperm(horizon, generator=self._gen)[: self.image_loss_steps]
                pred_img, tgt = pred[:, keep], tgt[:, keep]
            else:
                pred_img = pred
            out["image_mse"] = ((self.decode_image(pred_img) - tgt) ** 2).mean()
        out["dyn_loss"] = out["latent_mse"] + out.get("image_mse", 0.0)
        if rewards is not None:
            logits = self.reward(latents)                                        # [B, T, bins]
            mask = torch.isfinite(rewards)
            nll = -self.twohot.log_prob(logits, torch.nan_to_num(rewards))
            out["reward_loss"] = (nll * mask).sum() / mask.sum().clamp_min(1)
        return out

    def train_step(self, latents, frames, acts_after, rewards, *, context: int, horizon: int) -> dict[str, float]:
        self.dynamics.train()
        out = self.losses(latents, frames, acts_after, rewards, context=context, horizon=horizon)
        self.dyn_opt.zero_grad(set_to_none=True)
        if "reward_loss" in out:
            self.reward_opt.zero_grad(set_to_none=True)
            (out["dyn_loss"] + out["reward_loss"]).backward()
            nn.utils.clip_grad_norm_(self.reward.parameters(), self.reward_clip)
            self.reward_opt.step()
        else:
            out["dyn_loss"].backward()
        nn.utils.clip_grad_norm_(self.dynamics.parameters(), self.dyn_clip)
        self.dyn_opt.step()
        self.dynamics.eval()
        return {k: float(v.detach()) if isinstance(v, torch.Tensor) else float(v) for k, v in out.items()}

    @torch.no_grad()
    def open_loop_mse(self, latents: torch.Tensor, frames, acts_after: torch.Tensor, *, context: int,
                      horizon: int) -> np.ndarray:
        """Per-horizon pixel MSE ``[horizon]`` of open-loop predictions from each episode's first ``context`` frames."""
        self.dynamics.eval()
        x = as_video(frames, self.image_size)
        pred = self.dynamics.rollout(latents[:, :context], acts_after[:, : context + horizon - 1], horizon)
        img = self.decode_image(pred)
        return ((img - x.to(img.device)[:, context: context + horizon]) ** 2).mean(dim=(0, 2, 3, 4)).cpu().numpy()


class CachedPredictor(GrowingHistory):
    """``predict_next(history, actions)`` for a rollout that grows by one step per call, feeding only the new step
    through the dynamics' ``step`` (key/value cache for OCVP, hidden state for the GRU). The first call encodes the
    whole history; each later call must extend the previous history by exactly one step (the earlier steps and
    actions unchanged), as :meth:`sold.dreamer.ImaginationLearner.imagine` does. Same outputs and gradients as
    ``predict_next`` (tested)."""


class SlotWorldModel(_WorldModel):
    """SOLD's world model: frozen :class:`SAVi`, :class:`OCVPDynamics` and a slot-aggregation reward head."""

    kind = "slots"

    def __init__(self, *, savi: SAVi, action_dim: int, twohot: TwoHot, token_dim: int = 64, num_layers: int = 2,
                 heads: int = 4, ff_dim: int = 128, dropout: float = 0.1, dyn_lr: float = 1e-3,
                 reward_lr: float = 1e-3, image_loss: bool = True, head_hidden: int = 128, image_loss_steps: int = 0,
                 train_cache: bool = False, time_causal: bool = True, final_norm: bool = True):
        super().__init__(twohot=twohot, dyn_lr=dyn_lr, reward_lr=reward_lr, image_loss=image_loss,
                         image_loss_steps=image_loss_steps)
        self.savi = savi.requires_grad_(False).eval()
        self.dynamics = OCVPDynamics(slot_dim=savi.slot_dim, action_dim=action_dim, token_dim=token_dim,
                                     num_layers=num_layers, heads=heads, ff_dim=ff_dim, dropout=dropout,
                                     cache_in_training=train_cache, time_causal=time_causal,
                                     final_norm=final_norm)
        self.reward = SlotAggregationTransformer(slot_dim=savi.slot_dim, out_dim=twohot.num_bins,
                                                 token_dim=token_dim, num_layers=num_layers, heads=heads,
                                                 ff_dim=ff_dim, head_hidden=head_hidden, zero_init_head=True)
        self._make_opts()

    @property
    def image_size(self) -> int:
        return self.savi.image_size

    @torch.no_grad()
    def encode(self, video) -> torch.Tensor:
        return self.savi.encode(video)

    def decode_image(self, latents: torch.Tensor) -> torch.Tensor:
        return self.savi.decode(latents)[0]


class HolisticWorldModel(_WorldModel):
    """The baseline: frozen :class:`HolisticAE`, :class:`GRUDynamics` and a per-step MLP reward head."""

    kind = "holistic"

    def __init__(self, *, ae: HolisticAE, action_dim: int, twohot: TwoHot, hidden: int = 128,
                 dyn_lr: float = 1e-3, reward_lr: float = 1e-3, image_loss: bool = True, head_hidden: int = 128,
                 image_loss_steps: int = 0):
        super().__init__(twohot=twohot, dyn_lr=dyn_lr, reward_lr=reward_lr, image_loss=image_loss,
                         image_loss_steps=image_loss_steps)
        self.ae = ae.requires_grad_(False).eval()
        self.dynamics = GRUDynamics(latent_dim=ae.latent_dim, action_dim=action_dim, hidden=hidden)
        self.reward = PerStepMLP(in_dim=ae.latent_dim, out_dim=twohot.num_bins, hidden=head_hidden,
                                 zero_init_head=True)
        self._make_opts()

    @property
    def image_size(self) -> int:
        return self.ae.image_size

    @torch.no_grad()
    def encode(self, video) -> torch.Tensor:
        return self.ae.encode(video)

    def decode_image(self, latents: torch.Tensor) -> torch.Tensor:
        return self.ae.decode(latents)


def n_params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def pretrain_autoencoder(model: nn.Module, frames: np.ndarray, *, steps: int, batch: int, seq_len: int, lr: float,
                         seed: int, warmup: int = 50, clip: float = 0.05, actions: np.ndarray | None = None,
                         progress: bool = False) -> list[float]:
    """Unsupervised pre-training (image MSE) on random windows ``[batch, seq_len]`` of ``frames [E, T, 3, H, W]``
    uint8; Adam with a per-step linear warm-up from ``lr / warmup`` and gradient-norm clipping at ``clip``.
    Window offsets are uniform over ``[0, T − seq_len]`` inclusive. Returns the loss curve."""
    from icml25.train import check_finite
    from icml25.train import progress as bar

    e, t = frames.shape[:2]
    if seq_len > t:
        raise SoldError(f"seq_len ({seq_len}) must be <= the episode length ({t})")
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    dev = next(model.parameters()).device  # windows are cut on the CPU and moved to the model's device
    curve = []
    model.train()
    for step in bar(range(steps), desc=f"pretrain {type(model).__name__}", disable=not progress):
        for g in opt.param_groups:
            g["lr"] = lr * min(1.0, (step + 1) / max(warmup, 1))
        idx, off = rng.integers(0, e, batch), rng.integers(0, t - seq_len + 1, batch)
        video = torch.as_tensor(np.stack([frames[i, o: o + seq_len] for i, o in zip(idx, off)])).to(dev)
        if actions is not None and getattr(model, "action_conditioned", False):
            # pair frame t with the action taken *at* frame t (= the led-to action of frame t + 1)
            acts = actions_after(np.stack([actions[i, o: o + seq_len + 1] for i, o in zip(idx, off)]))[:, :seq_len]
            loss = model.loss(video, acts.to(dev))
        else:
            loss = model.loss(video)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        curve.append(check_finite(loss, step=step, what="autoencoder loss"))
    model.eval()
    return curve


def sample_windows(n_episodes: int, length: int, seq_len: int, batch: int, rng: np.random.Generator):
    """``(episode, offset)`` pairs, offsets uniform over ``[0, length − seq_len]`` inclusive."""
    if seq_len > length:
        raise SoldError(f"sequence length ({seq_len}) exceeds the episode length ({length})")
    return rng.integers(0, n_episodes, batch), rng.integers(0, length - seq_len + 1, batch)


def train_world_model(wm: _WorldModel, latents: torch.Tensor, frames: np.ndarray, actions: np.ndarray,
                      rewards: np.ndarray | None, *, steps: int, batch: int, context: int, horizon: int,
                      seed: int, progress: bool = False) -> list[float]:
    """Train dynamics (and reward head) on pre-encoded episodes ``latents [E, T, ...]``; returns the loss curve."""
    from icml25.train import progress as bar

    e, t = latents.shape[:2]
    seq = context + horizon
    check_context(context, context, horizon, t)
    rng = np.random.default_rng(seed)
    x = torch.as_tensor(frames)
    acts = actions_after(actions)
    rew = torch.as_tensor(rewards) if rewards is not None else None
    curve = []
    for _ in bar(range(steps), desc=f"train {wm.kind} dynamics", disable=not progress):
        idx, off = sample_windows(e, t, seq, batch, rng)
        sl = [slice(o, o + seq) for o in off]
        lat = torch.stack([latents[i, s] for i, s in zip(idx, sl)])
        vid = as_video(torch.stack([x[i, s] for i, s in zip(idx, sl)]), wm.image_size)
        a = torch.stack([acts[i, s] for i, s in zip(idx, sl)])
        r = torch.stack([rew[i, s] for i, s in zip(idx, sl)]) if rew is not None else None
        out = wm.train_step(lat, vid, a, r, context=context, horizon=horizon)
        curve.append(out["dyn_loss"])
    return curve
