"""KEA: two SAC modules, one environment stream, one buffer, a per-step switch (Yang et al., ICML 2025).

* A^SAC (novelty-augmented): reward ``β_e·r_ext + β_i·r_int`` with ``r_int`` from RND or NovelD, recomputed for
  every sampled minibatch with the current RND (:mod:`kea.intrinsic`).
* A^B (standard): reward ``β_e·r_ext`` only; its updates are held back until the end of the first *successful*
  episode (``standard_update="first_success"``, the paper's semantics; "never" is the released code's effective
  behaviour, "always" trains it from the start). Success (``success_gate``): "auto" = the env's ``info["is_success"]``
  where it reports one, else ``return >= success_threshold`` (positive return when no threshold is given);
  "positive_return" = the released code's intended check ``return > 0``. A :class:`KEAGateWarning` is issued when a
  ``learn`` call ends with episodes finished but the gate never opened.
* Switch: after each step the switch statistic of the new state is computed — KEA-RND: the normalised RND novelty
  ``z(s_{t+1})``; KEA-NovelD: its NovelD reward ``r_NovelD(s_t, s_{t+1})`` (``switch_on="intrinsic"``, default;
  ``switch_on="rnd"`` switches KEA-NovelD on RND's ``z`` instead) — and the next action comes from A^B where it
  exceeds σ (``switch_threshold``, default 1), from A^SAC elsewhere, per environment.

Environment stream: a gymnasium ``VectorEnv`` with ``autoreset_mode=SAME_STEP`` (``kea.envs.make_vec_env``; the
paper uses 4 parallel environments) or a single ``Env`` (wrapped into a 1-env ``SyncVectorEnv``). Counters
(``learning_starts``, ``train_freq``, ``ir_train_freq``, ``num_timesteps``) are in transitions (all environments):
``gradient_steps`` updates per ``train_freq`` transitions (released: 8 per 16). Replay is prioritised
(:class:`kea.buffer.PrioritizedReplayBuffer`; priorities ``|δ₁|+|δ₂|`` of A^SAC's twin critics, plus A^B's once it
trains; β annealed 0.4 → 1 over ``per_beta_steps`` transitions) or uniform (``per=False``).

Baselines are special cases of the same class (same code, same hyper-parameters, same seeds):
plain SAC = ``intrinsic="none", standard_module=False``; RND-SAC / NovelD-SAC = ``standard_module=False``.
KEA with σ = +∞ acts exactly like RND-SAC while A^B's TD errors do not enter the priorities (gate closed, or
uniform replay): each module draws from its own generator and A^SAC acts on every environment at every step.

Shapes: observations ``(n_envs, obs_dim)`` per vector step, ``(B, obs_dim)`` in minibatches; discrete actions
``(B,)``, continuous ``(B, act_dim)``.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces

from kea.buffer import PrioritizedReplayBuffer
from kea.intrinsic import NOVELD_FORMS, RND
from kea.sac import ContinuousSAC, DiscreteSAC, KEAConfigError

STANDARD_UPDATES = ("first_success", "never", "always")
INTRINSICS = ("rnd", "noveld", "none")
SUCCESS_GATES = ("auto", "positive_return")
SWITCH_ON = ("intrinsic", "rnd")


class KEAGateWarning(UserWarning):
    """The standard module's delayed-update gate has not opened (no episode met the success test)."""


@dataclass
class Trace:
    """What ``learn`` records per transition and per episode (used by the metrics and ``reproduce``)."""

    episode_returns: list[float] = field(default_factory=list)
    episode_ends: list[int] = field(default_factory=list)
    """``num_timesteps`` when each episode ended."""
    episode_success: list[bool] = field(default_factory=list)
    distinct_states: list[int] = field(default_factory=list)
    """Distinct states acted in over the whole run, after each episode."""
    distinct_states_learn: list[int] = field(default_factory=list)
    """Distinct states acted in after the random warm-up (the agent's own actions only), after each episode."""
    first_success_episode: int | None = None
    gate_open_step: int | None = None
    switched: list[bool] = field(default_factory=list)
    """Per transition: the action came from A^B."""
    signal: list[float] = field(default_factory=list)
    """Per transition: the switch statistic of the state acted in (NaN in warm-up or without a novelty signal)."""
    seconds: float = 0.0


def _as_vector_env(env: Any) -> tuple[gym.vector.VectorEnv, bool]:
    if isinstance(env, gym.vector.VectorEnv):
        if env.metadata.get("autoreset_mode") != gym.vector.AutoresetMode.SAME_STEP:
            raise KEAConfigError("a vector env must be built with autoreset_mode=gymnasium.vector.AutoresetMode."
                                 "SAME_STEP (the true final observation is needed); use kea.envs.make_vec_env")
        return env, True
    if not isinstance(env, gym.Env):
        raise KEAConfigError(f"env must be a gymnasium Env or VectorEnv, got {type(env).__name__}")
    return gym.vector.SyncVectorEnv([lambda: env], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP), False


class KEA:
    """KEA agent in the SB3 style: ``KEA(env, ...).learn(total_steps)``, ``predict(obs)``.

    Keyword-only args (defaults are the official DeepSea configuration):

    * ``intrinsic``: "rnd" | "noveld" | "none"; ``standard_module``: build A^B and switch (False = plain SAC /
      RND-SAC / NovelD-SAC); ``switch_threshold`` σ (1.0; ±inf allowed, NaN rejected); ``switch_on``:
      "intrinsic" (the agent's own intrinsic reward: RND z or NovelD) | "rnd"; ``standard_update``:
      "first_success" | "never" | "always"; ``success_gate``: "auto" | "positive_return";
      ``success_threshold`` (None).
    * ``beta_e`` (1.0; the paper uses N on DeepSea), ``beta_i`` (0.3), ``alpha`` (0.1 discrete / "auto"
      continuous), ``gamma`` (0.99), ``tau`` (0.005), ``lr`` (3e-4), ``hidden`` ((64, 64)), ``dropout``
      (0.1 discrete, 0 continuous), ``dropout_in_targets`` (True).
    * ``batch_size`` (64), ``buffer_size`` (100_000), ``learning_starts`` (2000 random transitions), ``train_freq``
      (16 transitions), ``gradient_steps`` (8), ``policy_freq`` (2) and ``policy_steps`` (2): every
      ``policy_freq`` critic steps, ``policy_steps`` actor steps on the same minibatch (as released).
    * Replay: ``per`` (True), ``per_alpha`` (0.6), ``per_beta0`` (0.4), ``per_beta_steps`` (None = anneal to 1 by
      the end of each ``learn`` call; ``reproduce`` passes the run's total transitions).
    * RND: ``ir_feat_dim`` (16), ``ir_hidden`` ((16, 32)), ``ir_lr`` (5e-4), ``ir_train_freq`` (16),
      ``ir_epochs`` (2), ``ir_clip`` (2), ``ir_momentum`` (None = 0.9^(n_envs/4): the released 40-transition
      window); NovelD ``noveld_alpha`` (0.5), ``noveld_round`` (decimals for visit keys of continuous states),
      ``noveld_form`` ("paper": NovelD's never-negative reward scaled by RND's running sd; "centred": the earlier
      form normalised by its own running mean and sd, see :mod:`kea.intrinsic`).
    * ``seed``, ``device`` ("cpu").
    """

    def __init__(self, env: Any, *, intrinsic: str = "rnd", standard_module: bool = True,
                 switch_threshold: float = 1.0, switch_on: str = "intrinsic", standard_update: str = "first_success",
                 success_gate: str = "auto", success_threshold: float | None = None, beta_e: float = 1.0,
                 beta_i: float = 0.3, alpha: float | str | None = None, gamma: float = 0.99, tau: float = 0.005,
                 lr: float = 3e-4, hidden: tuple[int, ...] = (64, 64), dropout: float | None = None,
                 dropout_in_targets: bool = True, batch_size: int = 64, buffer_size: int = 100_000,
                 learning_starts: int = 2000, train_freq: int = 16, gradient_steps: int = 8, policy_freq: int = 2,
                 policy_steps: int = 2, per: bool = True, per_alpha: float = 0.6, per_beta0: float = 0.4,
                 per_beta_steps: int | None = None, ir_feat_dim: int = 16, ir_hidden: tuple[int, ...] = (16, 32),
                 ir_lr: float = 5e-4, ir_train_freq: int = 16, ir_epochs: int = 2, ir_clip: float = 2.0,
                 ir_momentum: float | None = None, noveld_alpha: float = 0.5, noveld_round: int = 2,
                 noveld_form: str = "paper", seed: int = 0,
                 device: str = "cpu") -> None:
        venv, is_vec = _as_vector_env(env)
        obs_space, act_space = venv.single_observation_space, venv.single_action_space
        if not isinstance(obs_space, spaces.Box) or len(obs_space.shape) != 1:
            raise KEAConfigError(f"env.observation_space must be a 1-D Box, got {obs_space!r}")
        if isinstance(act_space, spaces.Discrete):
            self.discrete = True
        elif isinstance(act_space, spaces.Box):
            self.discrete = False
        else:
            raise KEAConfigError(f"env.action_space must be Discrete or Box, got {type(act_space).__name__}")
        if intrinsic not in INTRINSICS:
            raise KEAConfigError(f"intrinsic must be one of {INTRINSICS}, got {intrinsic!r}")
        if standard_update not in STANDARD_UPDATES:
            raise KEAConfigError(f"standard_update must be one of {STANDARD_UPDATES}, got {standard_update!r}")
        if success_gate not in SUCCESS_GATES:
            raise KEAConfigError(f"success_gate must be one of {SUCCESS_GATES}, got {success_gate!r}")
        if switch_on not in SWITCH_ON:
            raise KEAConfigError(f"switch_on must be one of {SWITCH_ON}, got {switch_on!r}")
        if success_threshold is not None and not math.isfinite(float(success_threshold)):
            raise KEAConfigError(f"success_threshold must be a finite number or None, got {success_threshold!r}")
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
        if noveld_form not in NOVELD_FORMS:
            raise KEAConfigError(f"noveld_form must be one of {NOVELD_FORMS}, got {noveld_form!r}")
        if not (ir_clip > 0) or math.isinf(ir_clip):
            raise KEAConfigError(f"ir_clip must be a finite number > 0, got {ir_clip!r}")
        if not (0.0 <= per_alpha <= 1.0):
            raise KEAConfigError(f"per_alpha must be in [0, 1], got {per_alpha!r}")
        if not (0.0 <= per_beta0 <= 1.0):
            raise KEAConfigError(f"per_beta0 must be in [0, 1], got {per_beta0!r}")
        if per_beta_steps is not None and (isinstance(per_beta_steps, bool) or per_beta_steps <= 0):
            raise KEAConfigError(f"per_beta_steps must be an integer > 0 or None, got {per_beta_steps!r}")
        if device != "cpu":
            from icml25.device import resolve_device

            device = str(resolve_device(device))
        self.env, self.venv, self.device = env, venv, torch.device(device)
        self.n_envs = int(venv.num_envs)
        if ir_momentum is None:
            ir_momentum = 0.9 ** (self.n_envs / 4)
        self.obs_dim = int(obs_space.shape[0])
        self.observation_space, self.action_space = obs_space, act_space
        self.intrinsic, self.has_standard = intrinsic, bool(standard_module)
        self.switch_threshold, self.standard_update = threshold, standard_update
        self.switch_on, self.success_gate = switch_on, success_gate
        self.success_threshold = None if success_threshold is None else float(success_threshold)
        self.beta_e, self.beta_i = float(beta_e), float(beta_i)
        self.batch_size, self.learning_starts = int(batch_size), int(learning_starts)
        self.train_freq, self.gradient_steps = int(train_freq), int(gradient_steps)
        self.policy_freq, self.policy_steps = int(policy_freq), int(policy_steps)
        self.ir_train_freq, self.ir_epochs = int(ir_train_freq), int(ir_epochs)
        self.noveld_alpha, self.noveld_round, self.ir_clip = float(noveld_alpha), int(noveld_round), float(ir_clip)
        self.noveld_form = noveld_form
        self.per_beta0, self.per_beta_steps = float(per_beta0), per_beta_steps
        self.seed = int(seed)
        if alpha is None:
            alpha = 0.1 if self.discrete else "auto"
        if dropout is None:
            dropout = 0.1 if self.discrete else 0.0
        self.config = dict(
            intrinsic=intrinsic, standard_module=bool(standard_module), switch_threshold=threshold,
            switch_on=switch_on, standard_update=standard_update, success_gate=success_gate,
            success_threshold=self.success_threshold, beta_e=float(beta_e), beta_i=float(beta_i), alpha=alpha,
            gamma=gamma, tau=tau, lr=lr, hidden=list(hidden), dropout=dropout, dropout_in_targets=dropout_in_targets,
            batch_size=batch_size, buffer_size=buffer_size, learning_starts=learning_starts, train_freq=train_freq,
            gradient_steps=gradient_steps, policy_freq=policy_freq, policy_steps=policy_steps, per=bool(per),
            per_alpha=per_alpha, per_beta0=per_beta0, per_beta_steps=per_beta_steps, ir_feat_dim=ir_feat_dim,
            ir_hidden=list(ir_hidden), ir_lr=ir_lr, ir_train_freq=ir_train_freq, ir_epochs=ir_epochs,
            ir_clip=ir_clip, ir_momentum=ir_momentum, noveld_alpha=noveld_alpha, noveld_round=noveld_round,
            noveld_form=noveld_form, seed=seed)
        module_cls = DiscreteSAC if self.discrete else ContinuousSAC
        kw = dict(observation_space=obs_space, action_space=act_space, hidden=tuple(hidden),
                  dropout=dropout, dropout_in_targets=dropout_in_targets, alpha=alpha, gamma=gamma, tau=tau, lr=lr)
        self.sac = module_cls(**kw, seed=self.seed * 1000 + 1).to(self.device)
        self.standard = module_cls(**kw, seed=self.seed * 1000 + 2).to(self.device) if self.has_standard else None
        self.rnd = (RND(obs_dim=self.obs_dim, feat_dim=ir_feat_dim, hidden=tuple(ir_hidden), lr=ir_lr,
                        momentum=ir_momentum, clip=ir_clip, seed=self.seed * 1000 + 3).to(self.device)
                    if intrinsic != "none" else None)
        low, high = obs_space.low, obs_space.high
        unit = bool(np.all(low == 0) and np.all(high == 1))
        self._ir_scale = None
        if not unit and np.all(np.isfinite(low)) and np.all(np.isfinite(high)):
            # RND input scaled to [-1, 1] by the Box bounds (e.g. MountainCar's velocity is O(0.07))
            self._ir_scale = (torch.as_tensor((low + high) / 2, dtype=torch.float32, device=self.device),
                              torch.as_tensor((high - low) / 2, dtype=torch.float32, device=self.device))
        self.buffer = PrioritizedReplayBuffer(int(buffer_size), self.obs_dim,
                                              action_shape=() if self.discrete else tuple(act_space.shape),
                                              discrete=self.discrete, alpha=per_alpha, prioritized=per)
        self.rng = np.random.default_rng(self.seed)
        self.venv.action_space.seed(self.seed)
        self.num_timesteps = 0
        self.n_critic_updates = 0
        self.n_actor_updates = 0
        self.gate_open = standard_update == "always"
        self.trace = Trace()
        self.last_losses: dict[str, float] = {}
        self.last_batch_indices: np.ndarray | None = None
        self._warned = False
        self._obs: np.ndarray | None = None
        self._flags = np.zeros(self.n_envs, bool)
        self._signal = np.full(self.n_envs, np.nan)
        self._ep_return = np.zeros(self.n_envs)
        self._ep_visits: list[set[bytes]] = [set() for _ in range(self.n_envs)]
        self._visited: set[bytes] = set()
        self._visited_learn: set[bytes] = set()  # states visited by the agent's own actions (after the warm-up)
        self._recent: list[np.ndarray] = []
        self._beta_end: int | None = None

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

    def _errors(self, obs: np.ndarray) -> torch.Tensor:
        """Raw RND novelty ``e(s)`` of ``(n, obs_dim)`` observations -> ``(n,)``."""
        return self.rnd.error(self._ir_in(self._tensor(obs)))

    def switch_signal(self, e_next: torch.Tensor, e_cur: torch.Tensor, first_visit: torch.Tensor, *,
                      update: bool) -> torch.Tensor:
        """The switch statistic ``(n,)`` of transitions ``s -> s'``: RND's ``z(s')`` or the NovelD reward.

        ``update=True`` folds the values into the running statistics (collected stream only)."""
        z = self.rnd.normalise(e_next, update=update)
        nd = (self.rnd.noveld(e_next, e_cur, first_visit, alpha=self.noveld_alpha, update=update,
                              form=self.noveld_form) if self.intrinsic == "noveld" else None)
        if self.intrinsic == "noveld" and self.switch_on == "intrinsic":
            return nd
        return z

    def _behaviour(self, obs: np.ndarray) -> np.ndarray:
        """Actions ``(n_envs, …)``: A^SAC acts on every environment (its random stream never depends on the switch),
        A^B's action replaces it where the environment's flag is set."""
        a, _ = self.sac.act(self._tensor(obs))
        a = a.cpu().numpy()
        if self.standard is not None and self._flags.any():
            b, _ = self.standard.act(self._tensor(obs))
            b = b.cpu().numpy()
            a = np.where(self._flags.reshape((-1,) + (1,) * (a.ndim - 1)), b, a)
        return a

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

    def _is_success(self, ret: float, final_info: dict[str, Any] | None, i: int) -> bool:
        if self.success_gate == "positive_return":
            return ret > 0
        if final_info is not None and "is_success" in final_info:
            mask = final_info.get("_is_success")
            if mask is None or bool(mask[i]):
                return bool(final_info["is_success"][i])
        if self.success_threshold is not None:
            return ret >= self.success_threshold
        return ret > 0

    def _start_flags(self, obs: np.ndarray, envs: np.ndarray) -> None:
        """Flags for the first action of new episodes in ``envs``: KEA-RND switches on ``z(s_0)`` (statistics read,
        not updated); a NovelD signal needs a transition, so A^SAC takes the first action."""
        if self.rnd is None or self.standard is None or not envs.any():
            self._flags[envs], self._signal[envs] = False, np.nan
            return
        if self.intrinsic == "noveld" and self.switch_on == "intrinsic":
            self._flags[envs], self._signal[envs] = False, np.nan
            return
        z = self.rnd.normalise(self._errors(obs[envs]), update=False).cpu().numpy()
        self._signal[envs] = z
        self._flags[envs] = z > self.switch_threshold

    def _beta(self) -> float:
        end = self.per_beta_steps or self._beta_end or 1
        return self.per_beta0 + (1.0 - self.per_beta0) * min(1.0, self.num_timesteps / end)

    def learn(self, total_steps: int, *, callback: Callable[[KEA], None] | None = None,
              progress: bool = False) -> KEA:
        """Collect at least ``total_steps`` transitions (whole vector steps), training as configured;
        ``callback(self)`` after each finished episode. Can be called repeatedly (continues the stream)."""
        if isinstance(total_steps, bool) or not isinstance(total_steps, (int, np.integer)) or total_steps < 0:
            raise KEAConfigError(f"total_steps must be an integer >= 0, got {total_steps!r}")
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=int(total_steps), desc="kea", leave=False)
        t0 = time.perf_counter()
        n = self.n_envs
        end = self.num_timesteps + int(total_steps)
        self._beta_end = end
        if self._obs is None:
            obs, _ = self.venv.reset(seed=self.seed)
            self._obs = self._check_obs(obs)
            for i in range(n):
                self._ep_visits[i] = {self._visit_key(self._obs[i])}
            self._start_flags(self._obs, np.ones(n, bool))
        while self.num_timesteps < end:
            obs = self._obs
            warm = self.num_timesteps < self.learning_starts
            if warm:
                actions = np.asarray(self.venv.action_space.sample())
                switched = np.zeros(n, bool)
            else:
                actions = self._behaviour(obs)
                switched = self._flags.copy() if self.standard is not None else np.zeros(n, bool)
            signal = self._signal.copy() if not warm else np.full(n, np.nan)
            next_obs, r, terminated, truncated, info = self.venv.step(actions)
            next_obs = self._check_obs(next_obs)
            done = np.logical_or(terminated, truncated)
            real_next = next_obs.copy()
            if done.any():
                for i in np.flatnonzero(done):
                    real_next[i] = info["final_obs"][i]
            first = np.zeros(n, bool)
            for i in range(n):
                key = self._visit_key(real_next[i])
                first[i] = key not in self._ep_visits[i]
                self._ep_visits[i].add(key)
                self._visited.add(self._visit_key(obs[i]))
                if not warm:
                    self._visited_learn.add(self._visit_key(obs[i]))
            prev_steps = self.num_timesteps
            self.num_timesteps += n
            if self.rnd is not None:
                e_next, e_cur = self._errors(real_next), self._errors(obs)
                sig = self.switch_signal(e_next, e_cur, self._tensor(first),
                                         update=True).cpu().numpy()
                self._signal = sig.astype(float)
                self._flags = sig > self.switch_threshold
                self._recent.extend(real_next)
            self.buffer.add(obs, real_next, actions, np.asarray(r, np.float32), terminated, first, switched)
            self.trace.switched.extend(bool(x) for x in switched)
            self.trace.signal.extend(float(x) for x in signal)
            self._ep_return += np.asarray(r, float)
            if self.rnd is not None and len(self._recent) >= self.ir_train_freq:
                batch = self._ir_in(self._tensor(np.stack(self._recent)))  # (≥ ir_train_freq, obs_dim)
                self.rnd.train_on(batch, epochs=self.ir_epochs)
                self._recent = []
            if self.num_timesteps >= self.learning_starts:
                k = self.num_timesteps // self.train_freq - max(prev_steps, self.learning_starts - 1) // self.train_freq
                for _ in range(max(k, 0) * self.gradient_steps):
                    self._update()
            if done.any():
                final_info = info.get("final_info")
                for i in np.flatnonzero(done):
                    ret = float(self._ep_return[i])
                    ok = self._is_success(ret, final_info, int(i))
                    self.trace.episode_returns.append(ret)
                    self.trace.episode_ends.append(self.num_timesteps)
                    self.trace.episode_success.append(ok)
                    self.trace.distinct_states.append(len(self._visited))
                    self.trace.distinct_states_learn.append(len(self._visited_learn))
                    if ok and self.trace.first_success_episode is None:
                        self.trace.first_success_episode = len(self.trace.episode_returns)
                    if (ok and not self.gate_open and self.standard is not None
                            and self.standard_update == "first_success"):
                        self.gate_open = True
                        self.trace.gate_open_step = self.num_timesteps
                    self._ep_return[i] = 0.0
                    self._ep_visits[i] = {self._visit_key(next_obs[i])}
                    if callback is not None:
                        callback(self)
                self._start_flags(next_obs, done)
            self._obs = next_obs
            if bar is not None:
                bar.update(n)
        if bar is not None:
            bar.close()
        self.trace.seconds += time.perf_counter() - t0
        if (self.standard is not None and self.standard_update == "first_success" and not self.gate_open
                and self.trace.episode_returns and not self._warned):
            self._warned = True
            warnings.warn(
                f"KEA: the standard module's gate has not opened after {len(self.trace.episode_returns)} episodes "
                f"({self.num_timesteps} transitions): no episode met the success test (success_gate="
                f"{self.success_gate!r}, success_threshold={self.success_threshold}); A^B is untrained and acts as a "
                "near-uniform policy (the released code's behaviour). Set success_threshold or report "
                "info['is_success'].", KEAGateWarning, stacklevel=2)
        return self

    def module_rewards(self, r_ext: torch.Tensor, r_int: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per-module rewards ``(B,)``: A^SAC ``β_e r_ext + β_i r_int``, A^B ``β_e r_ext`` (never ``r_int``)."""
        out = {"sac": self.beta_e * r_ext + self.beta_i * r_int}
        if self.standard is not None:
            out["standard"] = self.beta_e * r_ext
        return out

    def intrinsic_rewards(self, obs: torch.Tensor, next_obs: torch.Tensor, first_visit: torch.Tensor) -> torch.Tensor:
        """``r_int`` ``(B,)`` recomputed with the current RND (statistics read, not updated)."""
        if self.rnd is None:
            return torch.zeros(obs.shape[0], device=self.device)
        e_next = self.rnd.error(self._ir_in(next_obs))
        if self.intrinsic == "rnd":
            return self.rnd.normalise(e_next, update=False)
        return self.rnd.noveld(e_next, self.rnd.error(self._ir_in(obs)), first_visit, alpha=self.noveld_alpha,
                               update=False, form=self.noveld_form)

    def _update(self) -> None:
        """One critic step of each active module on ONE shared minibatch (+ actor steps every ``policy_freq``),
        Polyak updates, and the minibatch's new priorities."""
        idx, b, w = self.buffer.sample(self.batch_size, self.rng, beta=self._beta())
        self.last_batch_indices = idx
        obs, next_obs = self._tensor(b["obs"]), self._tensor(b["next_obs"])
        r_ext, done = self._tensor(b["rewards"]), self._tensor(b["dones"])
        actions = torch.as_tensor(b["actions"], device=self.device)
        weights = self._tensor(w) if self.buffer.prioritized else None
        r_int = self.intrinsic_rewards(obs, next_obs, self._tensor(b["first_visit"]))
        rewards = self.module_rewards(r_ext, r_int)
        modules = [("sac", self.sac)]
        if self.standard is not None and self.gate_open:
            modules.append(("standard", self.standard))
        self.n_critic_updates += 1
        do_actor = self.n_critic_updates % self.policy_freq == 0
        td = torch.zeros(obs.shape[0])
        for name, m in modules:
            y = m.target(rewards[name], next_obs, done)
            loss, td_m = m.critic_loss_td(obs, actions, y, weights)
            td = td + td_m.cpu()
            m.critic_opt.zero_grad(set_to_none=True)
            loss.backward()
            m.critic_opt.step()
            self.last_losses[f"{name}/critic"] = float(loss.detach())
            if do_actor:
                for _ in range(self.policy_steps):
                    a_loss, stat = m.actor_loss(obs, weights)
                    m.actor_opt.zero_grad(set_to_none=True)
                    a_loss.backward()
                    m.actor_opt.step()
                    m.alpha_update(stat)
                    self.last_losses[f"{name}/actor"] = float(a_loss.detach())
            m.polyak()
        self.buffer.update_priorities(idx, td.numpy())
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
