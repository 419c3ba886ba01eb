"""EARL-BO: the per-iteration driver (Cheon et al., ICML 2025, Algorithm 1).

At every real BO iteration ``k`` with data ``D_k``:

1. fit the GP (:func:`earl_bo.gp_env.fit_gp`) to ``D_k`` (x normalised to the unit cube, y standardised with D_k's
   statistics) and build the GP virtual environment (:class:`earl_bo.gp_env.GPEnv`);
2. for episodes ``e = 1..E`` of ``H`` imagined steps from ``D_k``: the first ``E_off`` follow TuRBO-1 (trust-region
   Thompson sampling in the imagined GP) and are learned by advantage-weighted behaviour cloning plus value regression;
   the rest follow the policy and are learned by PPO; an update after every ``U`` episodes (the ``U`` episodes of a
   round are simulated together as one batch);
3. query ``x_{k+1} = unnormalize(sigmoid(mu(D_k)))``, the policy's mean action.

``device`` (default the CPU) holds the agent (encoder, actor, critic, Adam state) and the GP virtual environment
(imagined data sets, incremental Cholesky factors, Thompson draws); the GP's hyper-parameter fit to the real ``D_k``
(botorch, a few dozen points) and the real BO loop stay on the CPU. Random numbers are drawn by CPU generators and
moved to the device, so a seed gives the same random stream on every device.

The agent (encoder + actor + critic) is pre-trained once on GP-sampled tasks (multi-task pre-training,
:mod:`earl_bo.pretrain`: a fixed number of rounds, or :meth:`EARLBO.pretrain_until_plateau` until its validation
regret stops improving) and then fine-tuned on the problem, warm-started from one iteration to the next.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from earl_bo.errors import EarlBoError
from earl_bo.gp_env import DTYPE, GPEnv, GPHyper, fit_gp
from earl_bo.ppo import ActorCritic, awr_weights, clipped_surrogate, gae, normalise, squash, unsquash
from earl_bo.turbo import TurboState, candidates

DEVICES = ("auto", "cpu", "cuda")
"""Devices of :class:`EARLBO` (``cuda:N`` too): ``auto`` picks CUDA when available, else the CPU (never MPS: the GP
virtual environment computes in float64, which MPS does not support)."""


def resolve_device(device=None, *, name: str = "device") -> torch.device:
    """``device`` (``None`` = the CPU, ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or a ``torch.device``) as a
    ``torch.device``; a bad value raises :class:`EarlBoError` naming ``name`` (the CLI passes ``--device``)."""
    if device is None:
        return torch.device("cpu")
    if isinstance(device, torch.device):
        device = str(device)
    if not isinstance(device, str) or device.split(":", 1)[0] not in DEVICES:
        raise EarlBoError(f"{name} must be one of {', '.join(DEVICES)} (or cuda:N), got {device!r}")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise EarlBoError(f"{name} {device!r} asked for, but torch.cuda.is_available() is False (use cpu or auto)")
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        raise EarlBoError(f"{name} must be one of {', '.join(DEVICES)} (or cuda:N), got {device!r}") from exc
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise EarlBoError(f"{name} {device!r}: only {torch.cuda.device_count()} CUDA device(s) are visible")
    return dev


def check_bounds(bounds) -> np.ndarray:
    """``bounds`` as a float64 array ``[2, d]`` (rows lb, ub) with ``lb < ub`` everywhere, else a clear error."""
    try:
        b = np.asarray(bounds, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise EarlBoError(f"bounds must be numbers of shape (2, d) (rows lb, ub), got {bounds!r}") from exc
    if b.ndim != 2 or b.shape[0] != 2 or b.shape[1] < 1:
        raise EarlBoError(f"bounds must have shape (2, d) (lb and ub, each of shape (d,)), got {b.shape}")
    if not np.isfinite(b).all():
        raise EarlBoError("bounds must be finite")
    bad = np.flatnonzero(b[0] >= b[1])
    if bad.size:
        i = int(bad[0])
        raise EarlBoError(f"bounds: lb must be < ub in every dimension; dimension {i} has lb={b[0, i]} >= ub={b[1, i]}")
    return b


def check_data(x, y, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate the observed data ``X [n, d]``, ``y [n]`` against the bounds ``[2, d]``."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).reshape(-1) if np.ndim(y) else np.asarray([y], dtype=np.float64)
    d = bounds.shape[1]
    if x.ndim != 2 or x.shape[1] != d:
        raise EarlBoError(f"X must have shape (n, {d}) to match the bounds' dimension {d}, got {x.shape}")
    if x.shape[0] != y.shape[0]:
        raise EarlBoError(f"X and y lengths differ: X has {x.shape[0]} rows, y has {y.shape[0]} values")
    if x.shape[0] < 2:
        raise EarlBoError(f"need at least 2 observed points (X, y) to fit the GP, got {x.shape[0]}")
    if not np.isfinite(x).all():
        raise EarlBoError("X must be finite (found NaN or inf)")
    if not np.isfinite(y).all():
        i = int(np.flatnonzero(~np.isfinite(y))[0])
        raise EarlBoError(f"y must be finite; y[{i}] = {y[i]}")
    tol = 1e-9 * (bounds[1] - bounds[0])
    out = (x < bounds[0] - tol) | (x > bounds[1] + tol)
    if out.any():
        i = int(np.flatnonzero(out.any(1))[0])
        raise EarlBoError(f"X[{i}] = {x[i].tolist()} lies outside the bounds [lb, ub]")
    return x, y


def standardise(y: torch.Tensor) -> tuple[torch.Tensor, float, float]:
    """``(y - mean) / std`` with D_k's statistics (std 1 when all y are equal)."""
    m = float(y.mean())
    s = float(y.std()) if y.numel() > 1 else 1.0
    if not math.isfinite(s) or s < 1e-12:
        s = 1.0
    return (y - m) / s, m, s


@dataclass
class Rollout:
    """One batch of ``B`` imagined episodes of ``H`` steps from ``D_k`` (``n`` real points)."""

    x: torch.Tensor  # [B, n + H, d] the final data sets (the state at step t is the prefix of length n + t)
    y: torch.Tensor  # [B, n + H]
    u: torch.Tensor  # [B, H, d] pre-squash actions
    logp: torch.Tensor  # [B, H] behaviour log-probs under the policy that acted (for TuRBO actions: current policy)
    values: torch.Tensor  # [B, H]
    rewards: torch.Tensor  # [B, H]
    off: torch.Tensor  # [B] True = a TuRBO (off-policy) episode
    n: int


@dataclass
class TrainLog:
    """What training at one real iteration did."""

    off_policy_episodes: int = 0
    on_policy_episodes: int = 0
    updates: int = 0
    mean_return: list[float] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    """The training loss of the last gradient epoch of each update."""
    seconds: float = 0.0


class EARLBO:
    """EARL-BO: RL for multi-step lookahead BO with an Attention-DeepSets encoder.

    Parameters (keyword-only after ``bounds``)
    ----------
    bounds : ``[2, d]`` array, rows lb and ub of the search box.
    horizon : H, imagined steps per episode (lookahead).
    episodes : E, imagined episodes per real iteration.
    off_policy_episodes : E_off, the first episodes that follow TuRBO (0 = no TuRBO stage).
    update_every : U, episodes per update (simulated together).
    seed : seeds the networks, the imagined episodes and the policy noise.
    width, heads, blocks : encoder size; lr, clip, epochs, gae_lambda, vf_coef, ent_coef, min_std : PPO;
    awr_beta : temperature of the advantage weights of the TuRBO stage; turbo_candidates : Thompson-sampling
    candidates per imagined TuRBO step; pretrain_tasks : GP-prior tasks of multi-task pre-training (0 = none);
    warm_start : keep the agent from one real iteration to the next (False = a fresh agent each iteration).
    device : where the agent and the GP virtual environment live (:func:`resolve_device`: ``None``/``"cpu"``, ``"auto"``,
    ``"cuda"``, ``"cuda:N"``); the same seed draws the same random numbers on every device.
    """

    def __init__(self, bounds, *, horizon: int = 3, episodes: int = 64, off_policy_episodes: int = 16,
                 update_every: int = 8, seed: int = 0, width: int = 64, heads: int = 4, blocks: int = 1,
                 lr: float = 3e-4, clip: float = 0.2, epochs: int = 4, gae_lambda: float = 0.95,
                 vf_coef: float = 0.5, ent_coef: float = 0.0, min_std: float = 0.05, awr_beta: float = 1.0,
                 turbo_candidates: int = 256, pretrain_tasks: int = 4, warm_start: bool = True,
                 init_state: dict | None = None, action: str = "box", device=None) -> None:
        self.device = resolve_device(device)
        self.bounds = check_bounds(bounds)
        self.dim = self.bounds.shape[1]
        for name, v in (("horizon", horizon), ("episodes", episodes), ("update_every", update_every),
                        ("epochs", epochs), ("width", width), ("heads", heads), ("blocks", blocks),
                        ("turbo_candidates", turbo_candidates)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise EarlBoError(f"{name} must be an integer >= 1, got {v!r}")
        if not isinstance(off_policy_episodes, (int, np.integer)) or off_policy_episodes < 0:
            raise EarlBoError(f"off_policy_episodes must be an integer >= 0, got {off_policy_episodes!r}")
        if off_policy_episodes > episodes:
            raise EarlBoError(f"off_policy_episodes (E_off={off_policy_episodes}) must be <= episodes (E={episodes})")
        if pretrain_tasks < 0:
            raise EarlBoError(f"pretrain_tasks must be >= 0, got {pretrain_tasks}")
        for name, v in (("lr", lr), ("clip", clip), ("min_std", min_std), ("awr_beta", awr_beta)):
            if not (math.isfinite(v) and v > 0):
                raise EarlBoError(f"{name} must be a finite number > 0, got {v!r}")
        if not 0 <= gae_lambda <= 1:
            raise EarlBoError(f"gae_lambda must be in [0, 1], got {gae_lambda}")
        if width % heads:
            raise EarlBoError(f"width ({width}) must be divisible by heads ({heads})")
        self.horizon, self.episodes, self.off_policy_episodes = int(horizon), int(episodes), int(off_policy_episodes)
        self.update_every, self.seed = int(update_every), int(seed)
        from earl_bo.ppo import ACTIONS

        if action not in ACTIONS:
            raise EarlBoError(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
        self.net_kw = dict(dim=self.dim, width=width, heads=heads, blocks=blocks, min_std=min_std, action=action)
        self.lr, self.clip, self.epochs, self.gae_lambda = lr, clip, int(epochs), gae_lambda
        self.vf_coef, self.ent_coef, self.awr_beta = vf_coef, ent_coef, awr_beta
        self.turbo_candidates, self.pretrain_tasks, self.warm_start = int(turbo_candidates), int(pretrain_tasks), warm_start
        self.gen = torch.Generator().manual_seed(self.seed)
        self.turbo = TurboState(dim=self.dim)
        self._seen = 0
        self.agent: ActorCritic | None = None
        self.opt: torch.optim.Optimizer | None = None
        self.pretrained = False
        self.logs: list[TrainLog] = []
        self.last_model = None
        self.episode_kinds: list[str] = []  # "turbo" / "policy" per imagined episode of the last iteration
        self.init_state = init_state
        if init_state is not None:
            self.load(init_state)

    # ------------------------------------------------------------------ agent
    def _new_agent(self) -> None:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            self.agent = ActorCritic(**self.net_kw)  # initialised on the CPU: the same weights on every device
        self.agent.to(self.device)
        self.opt = torch.optim.Adam(self.agent.parameters(), lr=self.lr)

    def state(self) -> dict:
        """The agent's weights and optimiser state (``init_state`` of another :class:`EARLBO` of the same d)."""
        if self.agent is None:
            self._new_agent()
        return {"agent": self.agent.state_dict(), "opt": self.opt.state_dict()}

    def load(self, state: dict) -> None:
        """Load :meth:`state` (a pre-trained agent: no further pre-training before the first query)."""
        self._new_agent()
        try:
            self.agent.load_state_dict(state["agent"])
        except (KeyError, RuntimeError) as exc:
            raise EarlBoError(f"init_state does not fit this agent (d={self.dim}, width, heads, blocks): {exc}") from exc
        if "opt" in state:
            self.opt.load_state_dict(state["opt"])
            for g in self.opt.param_groups:
                g["lr"] = self.lr
        self.pretrained = True

    def pretrain(self, *, tasks: int | None = None, n_points: int | None = None) -> None:
        """Multi-task pre-training for a fixed number of rounds: one GP-sampled task each
        (:func:`earl_bo.pretrain.sample_task`, BO-like data sets of up to ``n_points``, default ``3 d + 4``)."""
        from earl_bo.pretrain import sample_task

        if self.agent is None:
            self._new_agent()
        tasks = self.pretrain_tasks if tasks is None else tasks
        n_init = max(4, self.dim)
        n = max(n_points or (3 * self.dim + 4), n_init)
        for _ in range(tasks):
            x, y, hyper, length = sample_task(self.dim, n_init=n_init, n_max=n, generator=self.gen)
            self.train_on(x, y, hyper, turbo_length=length)
        self.pretrained = True

    def pretrain_until_plateau(self, **kw):
        """Multi-task pre-training until the validation regret plateaus (:func:`earl_bo.pretrain.pretrain_until_plateau`,
        its keywords); returns the validation :class:`icml25.train.Curve`."""
        from earl_bo.pretrain import pretrain_until_plateau

        return pretrain_until_plateau(self, **kw)

    # ------------------------------------------------------------------ one rollout batch
    @torch.no_grad()
    def rollout(self, env: GPEnv, off: torch.Tensor, *, turbo_length: float) -> Rollout:
        """Simulate ``B = len(off)`` episodes together; TuRBO acts in the episodes flagged ``off``."""
        assert self.agent is not None
        b, h, n, d, dev = off.numel(), self.horizon, env.n0, self.dim, env.device
        off = off.to(dev)
        env.reset(b)
        u_all = torch.zeros(b, h, d, device=dev)
        logp = torch.zeros(b, h, device=dev)
        values = torch.zeros(b, h, device=dev)
        rewards = torch.zeros(b, h, device=dev)
        ls = env.hyper.lengthscale
        for t in range(h):
            m = n + t
            xs = env.x[:, :m].float()
            ys = env.y[:, :m].float()
            steps_left = torch.full((b,), (h - t) / h, device=dev)
            mu, log_std, v = self.agent(xs, ys, None, steps_left)
            u = mu + log_std.exp() * torch.randn(mu.shape, generator=self.gen).to(dev)
            if bool(off.any()):
                idx = env.y[:, :m].argmax(-1)
                centre = env.x[torch.arange(b, device=dev), idx]  # incumbent of each imagined data set
                cand = candidates(centre, ls, turbo_length, n=self.turbo_candidates, generator=self.gen)
                a_ts = env.thompson(cand).float()
                u = torch.where(off.unsqueeze(-1), unsquash(a_ts), u)
            lp = ActorCritic.log_prob(u, mu, log_std)
            a = squash(u).to(DTYPE).clamp(0.0, 1.0)
            _, r, _ = env.step(a)
            u_all[:, t], logp[:, t], values[:, t], rewards[:, t] = u, lp, v, r.float()
        return Rollout(x=env.x.float().clone(), y=env.y.float().clone(), u=u_all, logp=logp, values=values,
                       rewards=rewards, off=off.clone(), n=n)

    # ------------------------------------------------------------------ update
    def update(self, ro: Rollout) -> float:
        """PPO on the policy's episodes, advantage-weighted cloning on TuRBO's, value regression on all; returns the
        loss of the last gradient epoch."""
        assert self.agent is not None and self.opt is not None
        b, h, n, dev = ro.u.shape[0], self.horizon, ro.n, ro.u.device
        adv, ret = gae(ro.rewards, ro.values, gamma=1.0, lam=self.gae_lambda)
        # flatten (episode, step) -> transitions; the state of step t is the prefix of length n + t
        xs = ro.x.unsqueeze(1).expand(b, h, *ro.x.shape[1:]).reshape(b * h, *ro.x.shape[1:])  # [B*H, n+H, d]
        ys = ro.y.unsqueeze(1).expand(b, h, ro.y.shape[1]).reshape(b * h, -1)  # [B*H, n+H]
        sizes = (n + torch.arange(h, device=dev)).repeat(b)  # [B*H]
        mask = torch.arange(n + h, device=dev).unsqueeze(0) < sizes.unsqueeze(1)  # [B*H, n+H]
        steps_left = ((h - torch.arange(h, device=dev)) / h).repeat(b).float()
        u = ro.u.reshape(b * h, -1)
        logp_old = ro.logp.reshape(-1)
        adv_f, ret_f = adv.reshape(-1), ret.reshape(-1)
        off = ro.off.repeat_interleave(h)
        on = ~off
        adv_n = torch.zeros_like(adv_f)
        if on.any():
            adv_n[on] = normalise(adv_f[on])
        if off.any():
            adv_n[off] = normalise(adv_f[off])
        w = awr_weights(adv_n, beta=self.awr_beta)
        for _ in range(self.epochs):
            mu, log_std, v = self.agent(xs, ys, mask, steps_left)
            lp = ActorCritic.log_prob(u, mu, log_std)
            loss = self.vf_coef * (v - ret_f).pow(2).mean()
            if on.any():
                loss = loss + clipped_surrogate(lp[on], logp_old[on], adv_n[on], clip=self.clip) * on.float().mean()
            if off.any():
                loss = loss - (w[off] * lp[off]).mean() / self.dim * off.float().mean()
            if self.ent_coef:
                loss = loss - self.ent_coef * log_std.sum()
            self.opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.agent.parameters(), 1.0)
            self.opt.step()
        return float(loss.detach())

    def train_on(self, x: torch.Tensor, y: torch.Tensor, hyper: GPHyper, *, turbo_length: float) -> TrainLog:
        """Algorithm 1's inner loop on one GP virtual environment (``x`` unit cube, ``y`` standardised)."""
        if self.agent is None:
            self._new_agent()
        t0 = time.perf_counter()
        log = TrainLog()
        env = GPEnv(x, y, hyper, horizon=self.horizon, batch=self.update_every,
                    seed=int(torch.randint(0, 2**31 - 1, (1,), generator=self.gen)), device=self.device)
        e = 0
        self.episode_kinds = []
        while e < self.episodes:
            b = min(self.update_every, self.episodes - e)
            off = torch.arange(e, e + b) < self.off_policy_episodes
            ro = self.rollout(env, off, turbo_length=turbo_length)
            self.episode_kinds += ["turbo" if o else "policy" for o in off.tolist()]
            log.loss.append(self.update(ro))
            log.off_policy_episodes += int(off.sum())
            log.on_policy_episodes += int((~off).sum())
            log.updates += 1
            log.mean_return.append(float(ro.rewards.sum(-1).mean()))
            e += b
        log.seconds = time.perf_counter() - t0
        return log

    # ------------------------------------------------------------------ the real query
    @torch.no_grad()
    def policy_mean(self, x_unit: torch.Tensor, y_std: torch.Tensor) -> torch.Tensor:
        """The deterministic query ``sigmoid(mu(D))`` in the unit cube, ``[d]`` (float64, on the CPU)."""
        assert self.agent is not None
        dev = self.device
        mu, _, _ = self.agent(x_unit.to(dev, torch.float32).unsqueeze(0), y_std.to(dev, torch.float32).unsqueeze(0),
                              None, torch.ones(1, device=dev))
        return squash(mu[0]).to("cpu", DTYPE)

    def suggest(self, X, y) -> np.ndarray:
        """The next query ``x_{k+1} [d]`` (in the bounds) given the observed ``X [n, d]``, ``y [n]`` (maximisation)."""
        x, yv = check_data(X, y, self.bounds)
        # the real TuRBO state follows the observed values (behaviour policy of the off-policy stage)
        if self._seen == 0:
            self.turbo.best_value = float(yv.max())
        else:
            for v in yv[self._seen:]:
                self.turbo.update(float(v))
            if self.turbo.restart:
                self.turbo = TurboState(dim=self.dim, best_value=float(yv.max()))
        self._seen = len(yv)
        lb, ub = self.bounds
        xu = torch.as_tensor((x - lb) / (ub - lb), dtype=DTYPE).clamp(0, 1)
        ys, _, _ = standardise(torch.as_tensor(yv, dtype=DTYPE))
        model, hyper = fit_gp(xu, ys)
        self.last_model = model
        if self.agent is None or not self.warm_start:
            if self.init_state is not None:
                self.load(self.init_state)
            else:
                self._new_agent()
                self.pretrained = False
        if not self.pretrained and self.pretrain_tasks > 0:
            self.pretrain()
        self.logs.append(self.train_on(xu, ys, hyper, turbo_length=self.turbo.length))
        a = self.policy_mean(xu, ys).numpy()
        return lb + a * (ub - lb)
