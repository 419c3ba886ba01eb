"""KEA: two SAC modules, one environment stream, one buffer, a per-step switch (Yang et al., ICML 2025).

* A^SAC (novelty-augmented): reward ``β_e·r_ext + β_i·r_int`` with ``r_int`` from RND or NovelD, recomputed for
  every sampled minibatch with the current RND (:mod:`kea.intrinsic`).
* A^B (standard): reward ``β_e·r_ext`` only; its updates are held back until the end of the first episode with
  positive extrinsic return (``standard_update="first_success"``, the paper's semantics; "never" is the released
  code's effective behaviour, "always" trains it from the start).
* Switch (:meth:`KEA._behaviour`): after each step the normalised novelty ``z(s_{t+1})`` of the new state is computed; the
  next action comes from A^B where ``z > σ`` (``switch_threshold``, default 1), from A^SAC elsewhere.

Baselines are special cases of the same class (same code, same hyper-parameters, same seeds):
plain SAC = ``intrinsic="none", standard_module=False``; RND-SAC / NovelD-SAC = ``standard_module=False``;
KEA with σ = +∞ acts exactly like RND-SAC (each module draws from its own generator, so A^B's training does not
perturb A^SAC's random stream; the two modules have separate Adam optimisers, which equals one Adam over the summed
loss because Adam is element-wise).

Shapes: observations ``(obs_dim,)`` per step, ``(B, obs_dim)`` in minibatches; discrete actions ``(B,)``,
continuous ``(B, act_dim)``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces

from kea.buffer import KEAReplayBuffer
from kea.intrinsic import RND, noveld_reward
from kea.sac import ContinuousSAC, DiscreteSAC, KEAConfigError

STANDARD_UPDATES = ("first_success", "never", "always")
INTRINSICS = ("rnd", "noveld", "none")


@dataclass
class Trace:
    """What ``learn`` records per environment step and per episode (used by the metrics and ``reproduce``)."""

    episode_returns: list[float] = field(default_factory=list)
    episode_ends: list[int] = field(default_factory=list)
    first_success_episode: int | None = None
    gate_open_step: int | None = None
    switched: list[bool] = field(default_factory=list)
    high_novelty: list[bool] = field(default_factory=list)
    entropy: list[float] = field(default_factory=list)
    state_keys: list[bytes] = field(default_factory=list)
    seconds: float = 0.0


class KEA:
    """KEA agent in the SB3 style: ``KEA(env, ...).learn(total_steps)``, ``predict(obs)``.

    Keyword-only args (defaults are the official DeepSea configuration scaled to one environment):

    * ``intrinsic``: "rnd" | "noveld" | "none"; ``standard_module``: build A^B and switch (False = plain SAC /
      RND-SAC / NovelD-SAC); ``switch_threshold`` σ (1.0; ±inf allowed, NaN rejected);
      ``standard_update``: "first_success" | "never" | "always".
    * ``beta_e`` (1.0; the paper uses N on DeepSea), ``beta_i`` (0.3), ``alpha`` (0.1 discrete / "auto"
      continuous), ``gamma`` (0.99), ``tau`` (0.005), ``lr`` (3e-4), ``hidden`` ((64, 64)), ``dropout``
      (0.1 discrete, 0 continuous), ``dropout_in_targets`` (True).
    * ``batch_size`` (64), ``buffer_size`` (100_000), ``learning_starts`` (2000 random steps), ``train_freq`` (16),
      ``gradient_steps`` (8), ``policy_freq`` (2) and ``policy_steps`` (2): every ``policy_freq`` critic steps,
      ``policy_steps`` actor steps on the same minibatch (as released: as many actor as critic steps).
    * RND: ``ir_feat_dim`` (16), ``ir_hidden`` ((16, 32)), ``ir_lr`` (5e-4), ``ir_train_freq`` (16),
      ``ir_epochs`` (2), ``ir_clip`` (2), ``ir_momentum`` (0.974 = the released 40-transition window for one env);
      NovelD ``noveld_alpha`` (0.5), ``noveld_round`` (decimals for episodic visit keys of continuous states).
    * ``seed``, ``device`` ("cpu").
    """

    def __init__(self, env: gym.Env, *, intrinsic: str = "rnd", standard_module: bool = True,
                 switch_threshold: float = 1.0, standard_update: str = "first_success", beta_e: float = 1.0,
                 beta_i: float = 0.3, alpha: float | str | None = None, gamma: float = 0.99, tau: float = 0.005,
                 lr: float = 3e-4, hidden: tuple[int, ...] = (64, 64), dropout: float | None = None,
                 dropout_in_targets: bool = True, batch_size: int = 64, buffer_size: int = 100_000,
                 learning_starts: int = 2000, train_freq: int = 16, gradient_steps: int = 8, policy_freq: int = 2,
                 policy_steps: int = 2, ir_feat_dim: int = 16, ir_hidden: tuple[int, ...] = (16, 32),
                 ir_lr: float = 5e-4, ir_train_freq: int = 16, ir_epochs: int = 2, ir_clip: float = 2.0,
                 ir_momentum: float = 0.974, noveld_alpha: float = 0.5, noveld_round: int = 2, seed: int = 0,
                 device: str = "cpu") -> None:
        if not isinstance(env.observation_space, spaces.Box) or len(env.observation_space.shape) != 1:
            raise KEAConfigError(f"env.observation_space must be a 1-D Box, got {env.observation_space!r}")
        if isinstance(env.action_space, spaces.Discrete):
            self.discrete = True
        elif isinstance(env.action_space, spaces.Box):
            self.discrete = False
        else:
            raise KEAConfigError(f"env.action_space must be Discrete or Box, got {type(env.action_space).__name__}")
        if intrinsic not in INTRINSICS:
            raise KEAConfigError(f"intrinsic must be one of {INTRINSICS}, got {intrinsic!r}")
        if standard_update not in STANDARD_UPDATES:
            raise KEAConfigError(f"standard_update must be one of {STANDARD_UPDATES}, got {standard_update!r}")
        threshold = float(switch_threshold)
        if math.isnan(threshold):
            raise KEAConfigError("switch_threshold must be a number or ±inf, got NaN")
        if not (beta_e >= 0) or math.isinf(beta_e):
            raise KEAConfigError(f"beta_e (extrinsic reward weight) must be a finite number >= 0, got {beta_e!r}")
        if not (beta_i >= 0) or math.isinf(beta_i):
            raise KEAConfigError(f"beta_i (intrinsic reward weight) must be a finite number >= 0, got {beta_i!r}")
        if standard_module and intrinsic == "none":
            raise KEAConfigError("standard_module=True needs a novelty signal: intrinsic must be 'rnd' or 'noveld'")
        for name, val in (("batch_size", batch_size), ("buffer_size", buffer_size), ("train_freq", train_freq),
                          ("gradient_steps", gradient_steps), ("policy_freq", policy_freq),
                          ("policy_steps", policy_steps), ("ir_train_freq", ir_train_freq), ("ir_epochs", ir_epochs)):
            if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val <= 0:
                raise KEAConfigError(f"{name} must be an integer > 0, got {val!r}")
        if learning_starts < 0:
            raise KEAConfigError(f"learning_starts must be >= 0, got {learning_starts!r}")
        if batch_size > buffer_size:
            raise KEAConfigError(f"batch_size={batch_size} is larger than buffer_size={buffer_size}")
        if batch_size > max(learning_starts, train_freq):
            raise KEAConfigError(
                f"batch_size={batch_size} is larger than the buffer at learning start "
                f"(learning_starts={learning_starts}, train_freq={train_freq}); raise learning_starts")
        if not (0.0 <= noveld_alpha <= 1.0):
            raise KEAConfigError(f"noveld_alpha must be in [0, 1], got {noveld_alpha!r}")
        if not (ir_clip > 0) or math.isinf(ir_clip):
            raise KEAConfigError(f"ir_clip must be a finite number > 0, got {ir_clip!r}")
        if device != "cpu":
            from icml25.device import resolve_device

            device = str(resolve_device(device))
        self.env, self.device = env, torch.device(device)
        self.obs_dim = int(env.observation_space.shape[0])
        self.intrinsic, self.has_standard = intrinsic, bool(standard_module)
        self.switch_threshold, self.standard_update = threshold, standard_update
        self.beta_e, self.beta_i = float(beta_e), float(beta_i)
        self.batch_size, self.learning_starts = int(batch_size), int(learning_starts)
        self.train_freq, self.gradient_steps = int(train_freq), int(gradient_steps)
        self.policy_freq, self.policy_steps = int(policy_freq), int(policy_steps)
        self.ir_train_freq, self.ir_epochs = int(ir_train_freq), int(ir_epochs)
        self.noveld_alpha, self.noveld_round, self.ir_clip = float(noveld_alpha), int(noveld_round), float(ir_clip)
        self.seed = int(seed)
        if alpha is None:
            alpha = 0.1 if self.discrete else "auto"
        if dropout is None:
            dropout = 0.1 if self.discrete else 0.0
        self.config = dict(
            intrinsic=intrinsic, standard_module=bool(standard_module), switch_threshold=threshold,
            standard_update=standard_update, beta_e=float(beta_e), beta_i=float(beta_i), alpha=alpha, gamma=gamma,
            tau=tau, lr=lr, hidden=list(hidden), dropout=dropout, dropout_in_targets=dropout_in_targets,
            batch_size=batch_size, buffer_size=buffer_size, learning_starts=learning_starts, train_freq=train_freq,
            gradient_steps=gradient_steps, policy_freq=policy_freq, policy_steps=policy_steps,
            ir_feat_dim=ir_feat_dim, ir_hidden=list(ir_hidden), ir_lr=ir_lr, ir_train_freq=ir_train_freq,
            ir_epochs=ir_epochs, ir_clip=ir_clip, ir_momentum=ir_momentum, noveld_alpha=noveld_alpha,
            noveld_round=noveld_round, seed=seed)
        module_cls = DiscreteSAC if self.discrete else ContinuousSAC
        kw = dict(observation_space=env.observation_space, action_space=env.action_space, hidden=tuple(hidden),
                  dropout=dropout, dropout_in_targets=dropout_in_targets, alpha=alpha, gamma=gamma, tau=tau, lr=lr)
        self.sac = module_cls(**kw, seed=self.seed * 1000 + 1).to(self.device)
        self.standard = module_cls(**kw, seed=self.seed * 1000 + 2).to(self.device) if self.has_standard else None
        self.rnd = (RND(obs_dim=self.obs_dim, feat_dim=ir_feat_dim, hidden=tuple(ir_hidden), lr=ir_lr,
                        momentum=ir_momentum, clip=ir_clip, seed=self.seed * 1000 + 3).to(self.device)
                    if intrinsic != "none" else None)
        low, high = env.observation_space.low, env.observation_space.high
        unit = bool(np.all(low == 0) and np.all(high == 1))
        self._ir_scale = None
        if not unit and np.all(np.isfinite(low)) and np.all(np.isfinite(high)):
            # RND input scaled to [-1, 1] by the Box bounds (e.g. MountainCar's velocity is O(0.07))
            self._ir_scale = (torch.as_tensor((low + high) / 2, dtype=torch.float32, device=self.device),
                              torch.as_tensor((high - low) / 2, dtype=torch.float32, device=self.device))
        self.buffer = KEAReplayBuffer(int(buffer_size), env.observation_space, env.action_space)
        self.rng = np.random.default_rng(self.seed)
        env.action_space.seed(self.seed)
        self.num_timesteps = 0
        self.n_critic_updates = 0
        self.n_actor_updates = 0
        self.gate_open = standard_update == "always"
        self.trace = Trace()
        self.last_losses: dict[str, float] = {}
        self._obs: np.ndarray | None = None
        self._flag = False
        self._ep_return = 0.0
        self._ep_visits: set[bytes] = set()
        self._recent: list[np.ndarray] = []

    # ---------------------------------------------------------------- acting
    def _tensor(self, obs: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(obs, dtype=torch.float32, device=self.device)

    def _check_obs(self, obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs, dtype=np.float32)
        if obs.shape[-1:] != (self.obs_dim,) or obs.ndim not in (1, 2):
            raise KEAConfigError(f"observation shape {obs.shape} does not match the network input "
                                 f"({self.obs_dim},) or (batch, {self.obs_dim})")
        return obs

    def _ir_in(self, obs: torch.Tensor) -> torch.Tensor:
        if self._ir_scale is None:
            return obs
        return (obs - self._ir_scale[0]) / self._ir_scale[1]

    def _novelty(self, obs: np.ndarray, *, update: bool) -> tuple[float, float]:
        """``(z(s), e(s))`` of one observation: normalised and raw RND novelty."""
        e = self.rnd.error(self._ir_in(self._tensor(obs)[None]))  # (obs_dim,) -> (1, obs_dim)
        return float(self.rnd.normalise(e, update=update)[0]), float(e[0])

    def _behaviour(self, obs: np.ndarray) -> tuple[Any, float]:
        """Action of the acting module (A^B where the switch flag is set) and its policy entropy (discrete)."""
        module = self.standard if (self._flag and self.standard is not None) else self.sac
        a, extra = module.act(self._tensor(obs)[None])
        if self.discrete:
            p = extra[0]
            ent = float(-(p * torch.log(p.clamp_min(1e-12))).sum())
            return int(a[0]), ent
        return a[0].cpu().numpy(), float("nan")

    def predict(self, observation: np.ndarray, state: Any = None, episode_start: Any = None,
                deterministic: bool = True, module: str = "auto") -> tuple[np.ndarray, None]:
        """SB3-style ``predict``: obs ``(obs_dim,)`` or ``(B, obs_dim)`` -> actions, ``None``.

        ``module``: "sac" (novelty-augmented), "standard" (A^B) or "auto" (A^B once its updates have started —
        the paper-intended evaluation — otherwise A^SAC).
        """
        obs = self._check_obs(observation)
        if module not in ("auto", "sac", "standard"):
            raise KEAConfigError(f"module must be 'auto', 'sac' or 'standard', got {module!r}")
        if module == "standard" and self.standard is None:
            raise KEAConfigError("module='standard' but this agent has no standard module")
        use_b = module == "standard" or (module == "auto" and self.standard is not None and self.gate_open
                                         and self.n_critic_updates > 0)
        m = self.standard if use_b else self.sac
        batched = obs.ndim == 2
        was = m.training
        m.eval()
        try:
            a, _ = m.act(self._tensor(obs if batched else obs[None]), deterministic=deterministic)
        finally:
            m.train(was)
        a = a.cpu().numpy()
        return (a if batched else a[0]), None

    # ---------------------------------------------------------------- learning
    def _visit_key(self, obs: np.ndarray) -> bytes:
        return np.round(obs, self.noveld_round).tobytes()

    def _reset_episode(self) -> np.ndarray:
        obs, _ = self.env.reset(seed=self.seed if not self.trace.episode_ends and self.num_timesteps == 0 else None)
        obs = self._check_obs(obs)
        self._ep_return = 0.0
        self._ep_visits = {self._visit_key(obs)}
        self._flag = False
        if self.rnd is not None and self.standard is not None:
            z, _ = self._novelty(obs, update=False)
            self._flag = z > self.switch_threshold
        return obs

    def learn(self, total_steps: int, *, callback: Callable[[KEA], None] | None = None,
              progress: bool = False) -> KEA:
        """Collect ``total_steps`` environment steps, training as configured; ``callback(self)`` after each
        episode. Can be called repeatedly (continues the stream)."""
        if isinstance(total_steps, bool) or not isinstance(total_steps, (int, np.integer)) or total_steps < 0:
            raise KEAConfigError(f"total_steps must be an integer >= 0, got {total_steps!r}")
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=int(total_steps), desc="kea", leave=False)
        t0 = time.perf_counter()
        if self._obs is None:
            self._obs = self._reset_episode()
        for _ in range(int(total_steps)):
            obs = self._obs
            warm = self.num_timesteps < self.learning_starts
            if warm:
                action = self.env.action_space.sample()
                ent = float("nan")
            else:
                action, ent = self._behaviour(obs)
            switched = bool(self._flag and self.standard is not None and not warm)
            next_obs, r, terminated, truncated, _ = self.env.step(action)
            next_obs = self._check_obs(next_obs)
            self.num_timesteps += 1
            key = self._visit_key(next_obs)
            first = key not in self._ep_visits
            self._ep_visits.add(key)
            hi = False
            if self.rnd is not None:
                z, _ = self._novelty(next_obs, update=True)
                hi = z > 1.0
                self._flag = z > self.switch_threshold
                self._recent.append(next_obs)
            self.buffer.add_transition(obs, next_obs, action, float(r), bool(terminated), first)
            self.trace.switched.append(switched)
            self.trace.entropy.append(ent)
            self.trace.high_novelty.append(hi)
            self.trace.state_keys.append(key)
            self._ep_return += float(r)
            if self.rnd is not None and len(self._recent) >= self.ir_train_freq:
                batch = self._ir_in(self._tensor(np.stack(self._recent)))  # (ir_train_freq, obs_dim)
                self.rnd.train_on(batch, epochs=self.ir_epochs)
                self._recent = []
            if self.num_timesteps >= self.learning_starts and self.num_timesteps % self.train_freq == 0:
                for _ in range(self.gradient_steps):
                    self._update()
            if terminated or truncated:
                self.trace.episode_returns.append(self._ep_return)
                self.trace.episode_ends.append(self.num_timesteps)
                if self._ep_return > 0 and self.trace.first_success_episode is None:
                    self.trace.first_success_episode = len(self.trace.episode_returns)
                if (self._ep_return > 0 and not self.gate_open and self.standard is not None
                        and self.standard_update == "first_success"):
                    self.gate_open = True
                    self.trace.gate_open_step = self.num_timesteps
                next_obs = self._reset_episode()
                if callback is not None:
                    callback(self)
            self._obs = next_obs
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        self.trace.seconds += time.perf_counter() - t0
        return self

    def intrinsic_rewards(self, obs: torch.Tensor, next_obs: torch.Tensor, first_visit: torch.Tensor) -> torch.Tensor:
        """``r_int`` ``(B,)`` recomputed with the current RND (statistics read, not updated)."""
        if self.rnd is None:
            return torch.zeros(obs.shape[0], device=self.device)
        e_next = self.rnd.error(self._ir_in(next_obs))
        if self.intrinsic == "rnd":
            return self.rnd.normalise(e_next, update=False)
        return noveld_reward(self.rnd.scaled(e_next), self.rnd.scaled(self.rnd.error(self._ir_in(obs))), first_visit,
                             alpha=self.noveld_alpha, clip=self.ir_clip)

    def _update(self) -> None:
        """One critic step of each active module (+ actor steps every ``policy_freq``) and Polyak updates."""
        data, fv = self.buffer.sample_with(self.batch_size, self.rng)
        obs, next_obs = data.observations.float(), data.next_observations.float()
        r_ext = data.rewards.reshape(-1)  # (B, 1) -> (B,)
        done = data.dones.reshape(-1)  # (B, 1) -> (B,)
        actions = data.actions.reshape(-1) if self.discrete else data.actions
        r_int = self.intrinsic_rewards(obs, next_obs, torch.as_tensor(fv, device=self.device))
        modules = [("sac", self.sac, self.beta_e * r_ext + self.beta_i * r_int)]
        if self.standard is not None and self.gate_open:
            modules.append(("standard", self.standard, self.beta_e * r_ext))
        self.n_critic_updates += 1
        do_actor = self.n_critic_updates % self.policy_freq == 0
        for name, m, reward in modules:
            y = m.target(reward, next_obs, done)
            loss = m.critic_loss(obs, actions, y)
            m.critic_opt.zero_grad(set_to_none=True)
            loss.backward()
            m.critic_opt.step()
            self.last_losses[f"{name}/critic"] = float(loss.detach())
            if do_actor:
                for _ in range(self.policy_steps):
                    a_loss, stat = m.actor_loss(obs)
                    m.actor_opt.zero_grad(set_to_none=True)
                    a_loss.backward()
                    m.actor_opt.step()
                    m.alpha_update(stat)
                    self.last_losses[f"{name}/actor"] = float(a_loss.detach())
            m.polyak()
        if do_actor:
            self.n_actor_updates += self.policy_steps

    # ---------------------------------------------------------------- persistence
    def modules(self) -> torch.nn.ModuleDict:
        mods = {"sac": self.sac}
        if self.standard is not None:
            mods["standard"] = self.standard
        if self.rnd is not None:
            mods["rnd"] = self.rnd
        return torch.nn.ModuleDict(mods)

    def save(self, path, *, env_config: dict[str, Any] | None = None) -> None:
        """Weights (safetensors) + config JSON via ``icml25.checkpoint.save_model``."""
        from icml25.checkpoint import save_model

        save_model(path, self.modules(), {"agent": self.config, "env": env_config or {},
                                          "gate_open": self.gate_open})

    @classmethod
    def load(cls, path, env: gym.Env) -> KEA:
        """Rebuild an agent for ``env`` from :meth:`save`'s folder (strict shapes)."""
        from icml25.checkpoint import load_model

        holder: dict[str, KEA] = {}

        def build(cfg: dict[str, Any]) -> torch.nn.ModuleDict:
            a = dict(cfg["agent"])
            a["hidden"], a["ir_hidden"] = tuple(a["hidden"]), tuple(a["ir_hidden"])
            agent = cls(env, **a)
            agent.gate_open = bool(cfg.get("gate_open", False))
            holder["agent"] = agent
            return agent.modules()

        load_model(path, build)
        return holder["agent"]
