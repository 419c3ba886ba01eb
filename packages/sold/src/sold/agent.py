"""``SOLD``: the online agent (pre-trained SAVi → slot world model → behaviour learned in imagination).

Schedule (Sec. 3.4 and the released configuration, scaled by :class:`sold.config.AgentConfig`): ``seed_steps`` random
environment steps, then every ``update_every`` environment steps ``updates_per`` updates, each: a batch of
``batch`` sequences of length ``max_context + dyn_horizon`` from the replay buffer, re-encoded by the frozen SAVi from
the window's first frame; one world-model step (dynamics + reward, :mod:`sold.world`); one actor and one critic step
in imagination from the window's first ``context`` steps (:class:`sold.dreamer.ImaginationLearner`).

Acting: SAVi tracks the slots recurrently from the episode's first frame and the actor sees the whole episode history
(released behaviour; ``act_history`` caps it at the training window).

``representation="holistic"`` builds the baseline agent (holistic autoencoder, GRU dynamics, MLP heads) with the same
code, so only the representation differs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from sold.aggregator import PerStepMLP, SlotAggregationTransformer
from sold.buffer import SequenceReplayBuffer
from sold.config import AgentConfig, AutoencoderConfig
from sold.data import collect_episodes
from sold.dreamer import ImaginationLearner, TwoHot
from sold.errors import SoldError, check_context
from sold.holistic import HolisticAE
from sold.savi import SAVi, as_video, frames_to_video
from sold.world import HolisticWorldModel, SlotWorldModel, actions_after, pretrain_autoencoder


def build_savi(cfg: AutoencoderConfig, *, image_size: int, action_dim: int) -> SAVi:
    return SAVi(image_size=image_size, num_slots=cfg.num_slots, slot_dim=cfg.slot_dim, feat_dim=cfg.feat_dim,
                enc_channels=cfg.enc_channels, enc_layers=cfg.enc_layers, kernel=cfg.kernel, enc_stride=cfg.enc_stride,
                dec_channels=cfg.dec_channels, broadcast=cfg.broadcast, first_iters=cfg.first_iters,
                later_iters=cfg.later_iters, heads=cfg.heads, action_dim=action_dim,
                action_conditioned=cfg.action_conditioned, slot_init=cfg.slot_init, attn_scale=cfg.attn_scale)


def build_holistic_ae(cfg: AutoencoderConfig, *, image_size: int) -> HolisticAE:
    return HolisticAE(image_size=image_size, latent_dim=cfg.holistic_latent, channels=cfg.holistic_channels)


@dataclass
class TrainingTrace:
    env_steps: int = 0
    updates: int = 0
    episode_returns: list[float] = field(default_factory=list)
    episode_success: list[bool] = field(default_factory=list)
    env_seconds: float = 0.0
    update_seconds: float = 0.0


class SOLD:
    """The SOLD agent on any gymnasium env with square ``[H, W, 3]`` uint8 image observations and a bounded ``Box``
    action space (the agent acts in ``[−1, 1]^A``, mapped affinely to the box; random actions come from
    ``env.action_space``). Segmentation masks are not needed (only the FG-ARI read-outs of ``reproduce`` use them).

    ``autoencoder``: a pre-trained :class:`SAVi` (``representation="slots"``) or :class:`HolisticAE` (``"holistic"``);
    when ``None`` it is pre-trained on ``cfg.pretrain_episodes`` random episodes first (:meth:`pretrain`).
    """

    def __init__(self, env, *, config: AgentConfig | None = None, ae_config: AutoencoderConfig | None = None,
                 autoencoder=None, representation: str = "slots", seed: int = 0, device: str | torch.device = "cpu"):
        if representation not in ("slots", "holistic"):
            raise SoldError(f"representation must be 'slots' or 'holistic', got {representation!r}")
        self.cfg = config or AgentConfig()
        self.ae_cfg = ae_config or AutoencoderConfig()
        c = self.cfg
        check_context(c.min_context, c.max_context, c.dyn_horizon, c.max_context + c.dyn_horizon)
        obs_shape = getattr(env.observation_space, "shape", None)
        if obs_shape is None or len(obs_shape) != 3 or obs_shape[-1] != 3 or obs_shape[0] != obs_shape[1]:
            raise SoldError(f"the env must give square [H, W, 3] image observations, got shape {obs_shape}")
        act_shape = getattr(env.action_space, "shape", None)
        if act_shape is None or len(act_shape) != 1:
            raise SoldError(f"the env must have a 1-D Box action space, got {env.action_space}")
        self.env, self.seed, self.representation = env, seed, representation
        self.device = torch.device(device)  # where the networks and the sampled windows live (the env is on the CPU)
        self.image_size, self.action_dim = int(obs_shape[0]), int(act_shape[0])
        low, high = (np.asarray(getattr(env.action_space, k), np.float64).reshape(-1) for k in ("low", "high"))
        if not (np.isfinite(low).all() and np.isfinite(high).all() and (high > low).all()):
            raise SoldError(f"the env's Box action space must have finite bounds with high > low, got {env.action_space}")
        self._act_low, self._act_high = low, high
        self.rng = np.random.default_rng(seed)
        env.action_space.seed(seed)
        torch.manual_seed(seed)
        self.twohot = TwoHot(c.num_bins, c.bin_low, c.bin_high)
        self.autoencoder = autoencoder
        if autoencoder is not None:
            self._check_autoencoder(autoencoder)
            self._build()
        self.buffer = SequenceReplayBuffer(capacity_steps=c.buffer_steps, inclusive_last=not c.exclusive_offsets)
        self.trace = TrainingTrace()

    # ------------------------------------------------------------------ construction
    def _check_autoencoder(self, ae) -> None:
        want = SAVi if self.representation == "slots" else HolisticAE
        if not isinstance(ae, want):
            raise SoldError(f"representation {self.representation!r} needs a {want.__name__}, got {type(ae).__name__}")
        if ae.image_size != self.image_size:
            raise SoldError(f"the autoencoder expects {ae.image_size}×{ae.image_size} images, the env gives "
                            f"{self.image_size}×{self.image_size}")
        if isinstance(ae, SAVi) and ae.action_dim != self.action_dim and ae.action_conditioned:
            raise SoldError(f"action-size mismatch: SAVi action_dim {ae.action_dim}, env {self.action_dim}")

    def _build(self) -> None:
        c, th = self.cfg, self.twohot
        if self.representation == "slots":
            d = self.autoencoder.slot_dim
            self.world = SlotWorldModel(savi=self.autoencoder, action_dim=self.action_dim, twohot=th,
                                        token_dim=c.token_dim, num_layers=c.num_layers, heads=c.heads,
                                        ff_dim=c.ff_dim, dropout=c.dynamics_dropout, dyn_lr=c.dyn_lr,
                                        reward_lr=c.reward_lr, head_hidden=c.head_hidden,
                                        image_loss_steps=c.image_loss_steps,
                                        train_cache=c.train_cache, time_causal=c.time_causal,
                                        final_norm=c.final_norm)

            def head(out: int, zero: bool):
                return SlotAggregationTransformer(slot_dim=d, out_dim=out, token_dim=c.token_dim,
                                                  num_layers=c.num_layers, heads=c.heads, ff_dim=c.ff_dim,
                                                  head_hidden=c.head_hidden, zero_init_head=zero)
        else:
            z = self.autoencoder.latent_dim
            self.world = HolisticWorldModel(ae=self.autoencoder, action_dim=self.action_dim, twohot=th,
                                            hidden=c.holistic_hidden, dyn_lr=c.dyn_lr, reward_lr=c.reward_lr,
                                            head_hidden=c.head_hidden, image_loss_steps=c.image_loss_steps)

            def head(out: int, zero: bool):
                return PerStepMLP(in_dim=z, out_dim=out, hidden=c.head_hidden, zero_init_head=zero)

        self.learner = ImaginationLearner(
            actor=head(2 * self.action_dim, False), critic=head(c.num_bins, c.zero_init_critic),
            action_dim=self.action_dim, twohot=th, horizon=c.imag_horizon, gamma=c.gamma, lam=c.lam,
            entropy_coef=c.entropy_coef, actor_lr=c.actor_lr, critic_lr=c.critic_lr, target_decay=c.target_decay,
            clamp_pre_tanh=c.clamp_pre_tanh, clip_imagined_actions=c.clip_imagined_actions,
            entropy_weighting=c.entropy_weighting)
        # the optimisers hold the same Parameter objects, so moving after building them is safe (no state yet)
        self.autoencoder.to(self.device)
        self.world.to(self.device)
        self.learner.to(self.device)

    def pretrain(self, *, episodes: int | None = None, steps: int | None = None, progress: bool = False) -> list[float]:
        """Pre-train the autoencoder without supervision on random-action episodes of the env."""
        a = self.ae_cfg
        eps = collect_episodes(self.env, episodes or a.pretrain_episodes, seed=self.seed + 50_000)
        frames = frames_to_video(eps.frames)
        acts = np.stack([[self.from_env_action(x) for x in ep] for ep in eps.actions]).astype(np.float32)
        if self.representation == "slots":
            self.autoencoder = build_savi(a, image_size=self.image_size, action_dim=self.action_dim)
        else:
            self.autoencoder = build_holistic_ae(a, image_size=self.image_size)
        self.autoencoder.to(self.device)
        curve = pretrain_autoencoder(self.autoencoder, frames, steps=steps or a.pretrain_steps, batch=a.batch,
                                     seq_len=a.seq_len, lr=a.lr if self.representation == "slots" else a.holistic_lr,
                                     seed=self.seed, warmup=a.warmup, clip=a.grad_clip,
                                     actions=acts, progress=progress)
        self._build()
        return curve

    # ------------------------------------------------------------------ action scaling
    def to_env_action(self, a: np.ndarray) -> np.ndarray:
        """The agent's action in ``[−1, 1]^A`` (clipped) → the env's box ``[low, high]`` (affine; the identity for
        ColorReach2D's ``[−1, 1]^2``)."""
        a = np.clip(np.asarray(a, np.float64).reshape(-1), -1.0, 1.0)
        return (self._act_low + (a + 1.0) * 0.5 * (self._act_high - self._act_low)).astype(np.float32)

    def from_env_action(self, a: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`to_env_action` (random actions from ``env.action_space`` → ``[−1, 1]^A``)."""
        a = np.asarray(a, np.float64).reshape(-1)
        return np.clip(2.0 * (a - self._act_low) / (self._act_high - self._act_low) - 1.0, -1.0, 1.0).astype(np.float32)

    # ------------------------------------------------------------------ acting
    @torch.no_grad()
    def _encode_history(self, obs_history: np.ndarray) -> torch.Tensor:
        video = frames_to_video(np.asarray(obs_history))                            # [1, T, 3, H, W]
        if video.shape[-1] != self.image_size or video.shape[-2] != self.image_size:
            raise SoldError(f"observations must be {self.image_size}×{self.image_size}×3, got "
                            f"{tuple(np.asarray(obs_history).shape[-3:])}")
        return self.world.encode(torch.as_tensor(video).to(self.device))

    @torch.no_grad()
    def predict(self, obs_history, *, deterministic: bool = True) -> np.ndarray:
        """Action ``[A]`` for the last frame of ``obs_history [T, H, W, 3]`` (uint8) of the current episode."""
        if self.autoencoder is None:
            raise SoldError("the agent has no autoencoder yet: call pretrain() or learn() first")
        lat = self._encode_history(obs_history)
        if self.cfg.act_history:
            lat = lat[:, -self.cfg.act_history:]
        return self.learner.act(lat, deterministic=deterministic)[0].cpu().numpy()

    # ------------------------------------------------------------------ learning
    def _update(self, timings: dict[str, float] | None = None) -> dict[str, float]:
        """One update; ``timings`` (if given) accumulates the seconds of its three parts: ``encode`` (sample +
        re-encode the window with the frozen autoencoder), ``world_model`` (dynamics + reward step) and
        ``imagination`` (actor + critic step)."""
        c = self.cfg
        t0 = time.perf_counter()
        ctx = int(self.rng.integers(c.min_context, c.max_context + 1))
        seq = c.max_context + c.dyn_horizon
        frames, acts, rews = self.buffer.sample(c.batch, seq, self.rng)
        video = as_video(torch.as_tensor(frames_to_video(frames)).to(self.device), self.image_size)
        lat = self.world.encode(video)                                              # frozen, re-encoded per window
        a_after = actions_after(acts).to(self.device)
        t1 = time.perf_counter()
        out = self.world.train_step(lat, video, a_after, torch.as_tensor(rews).to(self.device), context=ctx,
                                    horizon=seq - ctx)
        t2 = time.perf_counter()
        out.update(self.learner.update(self.world.predictor(), self.world.reward, lat[:, :ctx],
                                       a_after[:, : ctx - 1]))
        if timings is not None:
            for k, v in (("encode", t1 - t0), ("world_model", t2 - t1), ("imagination", time.perf_counter() - t2)):
                timings[k] = timings.get(k, 0.0) + v
        return out

    def learn(self, total_steps: int, *, progress: bool = False, callback=None) -> SOLD:
        """Interact for ``total_steps`` environment steps, learning online (see the module docstring)."""
        if total_steps < 1:
            raise SoldError(f"total_steps must be >= 1, got {total_steps}")
        if self.autoencoder is None:
            self.pretrain(progress=progress)
        c, env = self.cfg, self.env
        from icml25.train import progress as bar

        obs, info = env.reset(seed=int(self.rng.integers(2**31)))
        hist = [obs]
        self.buffer.start(obs, self.action_dim)
        ep_ret, ep_success = 0.0, False
        for _ in bar(range(total_steps), desc=f"SOLD ({self.representation})", disable=not progress):
            t0 = time.perf_counter()
            if self.trace.env_steps < c.seed_steps:
                action = self.from_env_action(env.action_space.sample())
            else:
                action = np.clip(self.predict(np.stack(hist), deterministic=False), -1, 1)
            obs, r, term, trunc, info = env.step(self.to_env_action(action))
            self.buffer.add(obs, action, r)
            hist.append(obs)
            ep_ret += r
            ep_success = bool(info.get("success", False))
            self.trace.env_steps += 1
            self.trace.env_seconds += time.perf_counter() - t0
            if term or trunc:
                self.trace.episode_returns.append(ep_ret)
                self.trace.episode_success.append(ep_success)
                obs, info = env.reset(seed=int(self.rng.integers(2**31)))
                hist = [obs]
                self.buffer.start(obs, self.action_dim)
                ep_ret = 0.0
            if self.trace.env_steps >= c.seed_steps and self.trace.env_steps % c.update_every == 0 \
                    and self.buffer.can_sample(c.max_context + c.dyn_horizon):
                t1 = time.perf_counter()
                for _ in range(c.updates_per):
                    out = self._update()
                    self.trace.updates += 1
                self.trace.update_seconds += time.perf_counter() - t1
                if callback is not None:
                    callback(self, out)
        return self

    def evaluate(self, env, episodes: int, *, seed: int) -> dict[str, float]:
        """Deterministic (mode) episodes: final-step success (primary), any-step success and the mean return."""
        final, anyst, rets = [], [], []
        for i in range(episodes):
            obs, info = env.reset(seed=seed + i)
            hist, done, ret, hit = [obs], False, 0.0, False
            while not done:
                obs, r, term, trunc, info = env.step(self.to_env_action(self.predict(np.stack(hist))))
                hist.append(obs)
                ret += r
                hit = hit or bool(info.get("success", False))
                done = term or trunc
            final.append(float(info.get("success", False)))
            anyst.append(float(hit))
            rets.append(ret)
        return {"success": float(np.mean(final)), "any_success": float(np.mean(anyst)), "return": float(np.mean(rets))}
