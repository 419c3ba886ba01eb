"""The goal-directed teacher: a Diffusion-QL planner (DDPM actor + twin-Q critic, best-of-N by Q).

Training (Wang et al. 2023, Diffusion-QL), per minibatch ``(s, a, r, s', d)``::

    L_critic = Σ_k ‖Q_k(s, a) - y‖²,   y = r + γ (1 - d) min_k Q'_k(s', a'),  a' ~ π_ema(·|s')
    L_actor  = L_BC-diffusion(a | s) + η · ( -Q_1(s, a_π) / mean|Q_2(s, a_π)| ),   a_π ~ π_θ(·|s) (reparameterised)

Decision (Habi's planner, ``planner_num_candidates = 50``, temperature 0.5): sample N candidates
``a_1..a_N ~ π(·|s)`` and return ``argmax_i q_min(s, a_i)`` of the online critic. This argmax rule is the one that
generates the habit's targets, so it is the default for the planner baseline too (audit note). The official
planner's own evaluation instead draws one candidate from ``softmax(w · Q_target)``; ``decision="softmax"`` with
``weight_temperature=w`` selects that rule.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from habi.config import PlannerConfig, PlannerTrainConfig, check_planner_config  # noqa: F401 (defined in the light habi.config)
from habi.data import GaussianNormalizer, qlearning_dataset
from habi.diffusion import DDPM
from habi.errors import HabiConfigError
from habi.nets import FusedTwinMLP, TwinQ


class PlannerNets(nn.Module):
    """All planner weights: actor, its EMA (used to act), critic and target critic."""

    def __init__(self, *, cfg: PlannerConfig) -> None:
        super().__init__()
        kw = dict(obs_dim=cfg.obs_dim, act_dim=cfg.act_dim, steps=cfg.steps, hidden=cfg.hidden, t_dim=cfg.time_dim,
                  schedule=cfg.schedule)
        self.actor = DDPM(**kw)
        self.ema_actor = DDPM(**kw)
        self.critic = TwinQ(obs_dim=cfg.obs_dim, act_dim=cfg.act_dim, hidden=cfg.hidden)
        self.critic_target = TwinQ(obs_dim=cfg.obs_dim, act_dim=cfg.act_dim, hidden=cfg.hidden)
        self.ema_actor.load_state_dict(self.actor.state_dict())
        self.critic_target.load_state_dict(self.critic.state_dict())
        for p in list(self.ema_actor.parameters()) + list(self.critic_target.parameters()):
            p.requires_grad_(False)


class DiffusionPlanner:
    """Frozen Diffusion-QL planner: ``act(observation) -> action`` (one raw observation, numpy in/out).

    ``candidates(s)`` exposes the best-of-N machinery used to generate Habi's goal-directed behaviour.
    ``act`` runs a compiled batch-1 path of :mod:`habi.fast` (``backend="numpy"`` by default, or ``"torch"``;
    same maths, tested equal given the same draws, which come from a numpy generator seeded with ``seed``);
    ``backend="reference"`` uses the plain batched path. Batched calls (``act_batch``, ``candidates``) always use
    the reference path.
    """

    def __init__(self, *, config: PlannerConfig, nets: PlannerNets, normalizer: GaussianNormalizer,
                 backend: str = "numpy", seed: int = 0) -> None:
        self.config, self.nets, self.normalizer = config, nets, normalizer
        self.nets.eval()
        if backend not in ("numpy", "torch", "reference"):
            raise HabiConfigError(f"backend must be 'numpy', 'torch' or 'reference', got {backend!r}")
        self.backend = backend
        self._rng = np.random.default_rng(seed)
        self._fast = None  # built on the first fast act() (weights snapshotted: the planner is frozen)
        self._mean = np.asarray(normalizer.mean, dtype=np.float32)
        self._std = np.asarray(normalizer.std, dtype=np.float32)
        # twin critics evaluated together (weights snapshotted: the planner is frozen)
        self._q = FusedTwinMLP(nets.critic.q1, nets.critic.q2)
        self._q_target = FusedTwinMLP(nets.critic_target.q1, nets.critic_target.q2)

    # ----------------------------------------------------------------- scoring
    @torch.no_grad()
    def q_min(self, s: torch.Tensor, a: torch.Tensor, *, target: bool = False) -> torch.Tensor:
        """``min(Q_1, Q_2)`` of the online (or target) critic; ``s (B, obs), a (B, act) -> (B,)`` (s normalised)."""
        q1, q2 = (self._q_target if target else self._q)(torch.cat([s, a], dim=-1))
        return torch.minimum(q1, q2).squeeze(-1)

    @torch.no_grad()
    def candidates(self, s: torch.Tensor, *, n: int | None = None, target: bool = False,
                   noise: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Sample ``n`` candidates per state and their values; ``s (B, obs)`` normalised ->
        ``actions (B, n, act_dim)``, ``q (B, n)``. ``noise (T, B·n, act_dim)``: optional standard-normal draws."""
        c = self.config
        n = c.num_candidates if n is None else n
        if n < 1:
            raise HabiConfigError(f"num_candidates must be >= 1, got {n}")
        b = s.shape[0]
        s_rep = s.repeat_interleave(n, dim=0)  # (B·n, obs)
        a = self.nets.ema_actor.sample(s_rep, temperature=c.temperature, temperature_all_steps=c.temperature_all_steps,
                                       noise=noise)
        q = self.q_min(s_rep, a, target=target)
        return a.reshape(b, n, c.act_dim), q.reshape(b, n)  # (B·n, ·) -> (B, n, ·)

    @torch.no_grad()
    def act_normalized(self, s: torch.Tensor, *, noise: torch.Tensor | None = None) -> torch.Tensor:
        """Decision for normalised states ``s (B, obs) -> (B, act_dim)``."""
        c = self.config
        a, q = self.candidates(s, target=c.decision == "softmax", noise=noise)
        if c.decision == "argmax":
            idx = q.argmax(dim=1)
        else:
            idx = torch.multinomial(torch.softmax(c.weight_temperature * q, dim=1), 1).squeeze(1)
        return a[torch.arange(a.shape[0]), idx]

    def act_batch(self, observations: np.ndarray) -> np.ndarray:
        """Raw observations ``(B, obs_dim)`` -> actions ``(B, act_dim)`` in [-1, 1]."""
        obs = np.asarray(observations, dtype=np.float32)
        if obs.ndim != 2 or obs.shape[1] != self.config.obs_dim:
            raise HabiConfigError(f"observations must have shape (B, {self.config.obs_dim}), got {obs.shape}")
        with torch.no_grad():
            return self.act_normalized(torch.from_numpy(self.normalizer(obs))).numpy()

    def act(self, observation: np.ndarray) -> np.ndarray:
        """One raw observation ``(obs_dim,)`` -> one action ``(act_dim,)``."""
        obs = np.asarray(observation, dtype=np.float32)
        if obs.shape != (self.config.obs_dim,):
            raise HabiConfigError(f"observation must have shape ({self.config.obs_dim},), got {obs.shape}")
        if self.backend == "reference":
            return self.act_batch(obs[None])[0]
        if self._fast is None:
            from habi.fast import FastPlanner, NormalStream

            c = self.config
            self._fast = FastPlanner(self, backend=self.backend)
            self._noise = NormalStream(self._rng, (c.steps, c.num_candidates, c.act_dim))
        s = ((obs - self._mean) / self._std)[None]  # (obs,) -> (1, obs)
        return self._fast.decide(s, self._noise.take(), self._rng)

    # ----------------------------------------------------------------- persistence
    def save(self, path: str | Path) -> Path:
        from icml25.checkpoint import save_model

        return save_model(path, self.nets, {"kind": "habi.DiffusionPlanner", "planner": asdict(self.config),
                                            "normalizer": self.normalizer.to_dict()})

    @classmethod
    def from_pretrained(cls, run_dir: str | Path, *, backend: str = "numpy", seed: int = 0,
                        **overrides: Any) -> DiffusionPlanner:
        """Load a planner saved by ``habi train-planner`` (``run_dir`` or ``run_dir/planner``).

        ``overrides`` replace decision-time fields of the config (e.g. ``num_candidates``, ``decision``);
        ``backend`` and ``seed`` choose how ``act`` runs (see the class docstring)."""
        from icml25.checkpoint import CheckpointError, load_config, load_model

        path = Path(run_dir)
        if (path / "planner").is_dir():
            path = path / "planner"
        meta = load_config(path)
        if meta.get("kind") != "habi.DiffusionPlanner":
            raise CheckpointError(f"{str(path)!r} is not a habi planner checkpoint (kind={meta.get('kind')!r})")
        saved = {"time_dim": 16, **meta["planner"]}  # checkpoints older than the time_dim field used 16
        cfg = PlannerConfig(**{**saved, **overrides})
        arch = PlannerConfig(**saved)
        nets = load_model(path, lambda _m: PlannerNets(cfg=arch))
        return cls(config=cfg, nets=nets, normalizer=GaussianNormalizer.from_dict(meta["normalizer"]), backend=backend,
                   seed=seed)


def _soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    with torch.no_grad():
        for pt, ps in zip(target.parameters(), source.parameters(), strict=True):
            pt.lerp_(ps, tau)


class PlannerTrainer:
    """Diffusion-QL training one step at a time (:meth:`step`), so a caller can evaluate the planner between steps
    (``icml25.train.train_until_plateau``) and keep its best weights (:meth:`state` / :meth:`load`).

    ``data`` is a D4RL-layout data set; its ``qlearning_dataset`` rows are normalised with a normaliser fitted on
    them (saved with the planner and reused by Habi). ``device``: where the networks and the rows live.
    """

    def __init__(self, data: dict[str, np.ndarray], *, config: PlannerConfig, train: PlannerTrainConfig,
                 seed: int = 0, device: torch.device | str = "cpu") -> None:
        torch.manual_seed(seed)
        self.rng = np.random.default_rng(seed)
        q = qlearning_dataset(data)
        if q["observations"].shape[1] != config.obs_dim or q["actions"].shape[1] != config.act_dim:
            raise HabiConfigError(f"data sizes (obs {q['observations'].shape[1]}, act {q['actions'].shape[1]}) do "
                                  f"not match the planner config (obs {config.obs_dim}, act {config.act_dim})")
        self.config, self.train, self.device = config, train, device
        self.norm = GaussianNormalizer.fit(q["observations"])
        S, A = torch.from_numpy(self.norm(q["observations"])), torch.from_numpy(q["actions"])
        S2, R = torch.from_numpy(self.norm(q["next_observations"])), torch.from_numpy(q["rewards"])
        D = torch.from_numpy(q["terminals"])
        self.S, self.A, self.S2, self.R, self.D = (t.to(device) for t in (S, A, S2, R, D))
        self.nets = PlannerNets(cfg=config).to(device)
        self.nets.train()
        self.opt_a = torch.optim.Adam(self.nets.actor.parameters(), lr=train.lr, foreach=True)
        self.opt_c = torch.optim.Adam(self.nets.critic.parameters(), lr=train.lr, foreach=True)
        self.steps_done = 0

    def step(self) -> dict[str, float]:
        """One critic and one actor update (plus the target/EMA soft updates); returns the losses."""
        nets, train = self.nets, self.train
        nets.train()
        idx = torch.from_numpy(self.rng.integers(0, self.S.shape[0], size=train.batch_size)).to(self.device)
        s, a, r, s2, d = self.S[idx], self.A[idx], self.R[idx], self.S2[idx], self.D[idx]
        # critic: TD with the EMA actor's next action and the target twin critic
        with torch.no_grad():
            a2 = nets.ema_actor.sample(s2)
            y = r + train.gamma * (1.0 - d) * nets.critic_target.q_min(s2, a2)
        q1, q2 = nets.critic(s, a)
        critic_loss = ((q1 - y) ** 2).mean() + ((q2 - y) ** 2).mean()
        self.opt_c.zero_grad(set_to_none=True)
        critic_loss.backward()
        nn.utils.clip_grad_norm_(nets.critic.parameters(), train.grad_clip)
        self.opt_c.step()
        # actor: diffusion BC + eta * normalised Q
        bc = nets.actor.loss(a, s)
        a_pi = nets.actor.sample(s)
        for p in nets.critic.parameters():
            p.requires_grad_(False)
        q1p, q2p = nets.critic(s, a_pi)
        for p in nets.critic.parameters():
            p.requires_grad_(True)
        q_loss = -q1p.mean() / q2p.abs().mean().detach().clamp(min=1e-6)
        actor_loss = bc + train.eta * q_loss
        self.opt_a.zero_grad(set_to_none=True)
        actor_loss.backward()
        nn.utils.clip_grad_norm_(nets.actor.parameters(), train.grad_clip)
        self.opt_a.step()
        _soft_update(nets.critic_target, nets.critic, train.tau)
        _soft_update(nets.ema_actor, nets.actor, train.tau)
        self.steps_done += 1
        return {"critic_loss": critic_loss.item(), "bc_loss": bc.item(), "q_loss": q_loss.item(),
                "q_mean": q1.detach().mean().item()}

    def state(self) -> dict[str, torch.Tensor]:
        """A copy of every planner weight (on the CPU), e.g. the best ones seen by a validation loop."""
        return {k: v.detach().cpu().clone() for k, v in self.nets.state_dict().items()}

    def planner(self, state: dict[str, torch.Tensor] | None = None) -> DiffusionPlanner:
        """A frozen CPU :class:`DiffusionPlanner` from a copy of the current weights (or of ``state``)."""
        nets = PlannerNets(cfg=self.config)
        nets.load_state_dict(self.state() if state is None else state)
        return DiffusionPlanner(config=self.config, nets=nets, normalizer=self.norm)


def train_planner(data: dict[str, np.ndarray], *, config: PlannerConfig, train: PlannerTrainConfig,
                  seed: int = 0, log: Any = None, progress: bool = True,
                  device: torch.device | str = "cpu") -> DiffusionPlanner:
    """Train a Diffusion-QL planner on a D4RL-layout data set for ``train.steps`` steps; returns the frozen
    :class:`DiffusionPlanner` (:class:`PlannerTrainer` does the steps).

    ``device``: where the networks and the data set live while training; the planner comes back on the CPU (its
    decisions run there, batch 1).

    ``log(step, **metrics)`` (e.g. ``RunDir.log``) receives losses every ``steps // 20`` steps.
    """
    from tqdm.auto import tqdm

    tr = PlannerTrainer(data, config=config, train=train, seed=seed, device=device)
    every = max(1, train.steps // 20)
    t0 = time.perf_counter()
    for step in tqdm(range(1, train.steps + 1), desc="train planner", disable=not progress, mininterval=2.0):
        m = tr.step()
        if log is not None and (step % every == 0 or step == train.steps):
            log(step, stage="planner", **m, seconds=round(time.perf_counter() - t0, 2))
    return DiffusionPlanner(config=config, nets=tr.nets.cpu(), normalizer=tr.norm)
