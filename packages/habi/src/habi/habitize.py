"""Habitization: train :class:`habi.model.Synergy` on the planner's goal-directed behaviour.

Per minibatch of teacher rows ``(s, a_i, Q_i, a*)`` (Habi, Sec. 3; official ``mode=train``)::

    critic   L_C = mean_b ( C(z_q, a_i) - Q_i )²,   z_q ~ q(z | s, a_i)   (no gradient into the encoders)
    habit    L   = mean_b [ mean_j (D(z)_j - a*_j)² + η_KL · KL(q(z|s,a*) ‖ p(z|s)) - η · C(z, D(z)) ],
             z ~ q(z | s, a*)  (reparameterised)
    weight   L_η = -log η_KL · (ℓ(KL) - log10 KL_target)                  (:class:`habi.losses.AdaptiveKLWeight`)

η (the Q term) is 0 in every official task config, so it is 0 by default here too. Optimiser: Adam with cosine
annealing for the habit and the critic; plain Adam (no schedule) for ``log η_KL``.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import torch
from torch import nn

from habi.config import HabiConfig, HabitizeConfig  # noqa: F401 (defined in the light habi.config)
from habi.errors import HabiConfigError
from habi.losses import AdaptiveKLWeight, gaussian_kl
from habi.model import Synergy


class Habitizer:
    """Holds the model, the adaptive KL weight and the optimisers; :meth:`step` does one update of all three."""

    def __init__(self, *, model: Synergy, config: HabitizeConfig) -> None:
        self.model, self.config = model, config
        self.kl_weight = AdaptiveKLWeight(target=config.kld_target, init=config.kl_init, mode=config.kl_mode).to(
            next(model.parameters()).device)
        self.opt_habit = torch.optim.Adam(model.habit_parameters(), lr=config.lr, foreach=True)
        self.opt_critic = torch.optim.Adam(model.critic.parameters(), lr=config.lr, foreach=True)
        self.opt_kl = torch.optim.Adam(self.kl_weight.parameters(), lr=config.kl_lr, foreach=True)
        self.sched = [torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=config.steps)
                      for o in (self.opt_habit, self.opt_critic)]

    def step(self, s: torch.Tensor, a_i: torch.Tensor, q_i: torch.Tensor, a_star: torch.Tensor) -> dict[str, float]:
        """One update; ``s (B, obs)``, ``a_i (B, act)``, ``q_i (B,)``, ``a_star (B, act)``."""
        m, c = self.model, self.config
        m.train()
        # habitual critic on posterior latents of the stored candidates (encoders frozen for this loss)
        with torch.no_grad():
            mu_c, sig_c = m.encode_posterior(s, a_i)
            z_c = mu_c + sig_c * torch.randn_like(mu_c)
        critic_loss = (((m.critic(z_c, a_i) - q_i) / m.critic.q_std) ** 2).mean()  # standardised units
        self.opt_critic.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.opt_critic.step()
        # habit: reconstruction of a* + adaptive KL (+ optional Q term)
        mu_q, sig_q = m.encode_posterior(s, a_star)
        z = mu_q + sig_q * torch.randn_like(mu_q)
        mu_p, sig_p = m.encode_prior(s)
        a_hat = m.decode(z, s)
        recon = ((a_hat - a_star) ** 2).mean(-1)  # (B,)
        kl = gaussian_kl(mu_q, sig_q, mu_p, sig_p)  # (B,)
        loss = (recon + self.kl_weight.eta * kl).mean()
        if c.eta != 0.0:
            loss = loss - c.eta * m.critic(z, a_hat).mean()
        self.opt_habit.zero_grad(set_to_none=True)
        loss.backward()
        self.opt_habit.step()
        m.critic.zero_grad(set_to_none=True)  # the Q term must not move the critic
        # dual update of log eta_KL
        kl_loss = self.kl_weight.loss(kl)
        self.opt_kl.zero_grad(set_to_none=True)
        kl_loss.backward()
        self.opt_kl.step()
        for sch in self.sched:
            sch.step()
        kd = kl.detach()
        return {"recon": recon.detach().mean().item(), "kl_mean": float(kd.mean()),
                "kl_geomean": float(10 ** torch.log10(kd.clamp(min=1e-12)).mean()),
                "eta_kl": float(self.kl_weight.eta), "critic_loss": critic_loss.item()}


def check_teacher(teacher: dict[str, np.ndarray], habi: HabiConfig) -> None:
    """Refuse teacher rows with a missing key, NaN/inf, no rows, or sizes that differ from ``habi``."""
    for k in ("states", "candidates", "values", "best_actions"):
        if k not in teacher:
            raise HabiConfigError(f"teacher data: missing key {k!r}")
        if not np.all(np.isfinite(teacher[k])):
            raise HabiConfigError(f"teacher data: {k!r} contains NaN/inf")
    if len(teacher["states"]) == 0:
        raise HabiConfigError("teacher data is empty")
    if teacher["states"].shape[1] != habi.obs_dim or teacher["best_actions"].shape[1] != habi.act_dim:
        raise HabiConfigError(f"teacher data sizes (obs {teacher['states'].shape[1]}, act "
                         f"{teacher['best_actions'].shape[1]}) do not match the habi config "
                         f"(obs {habi.obs_dim}, act {habi.act_dim})")


def make_habitizer(teacher: dict[str, np.ndarray], *, habi: HabiConfig, config: HabitizeConfig, seed: int = 0,
                   device: torch.device | str = "cpu") -> tuple[Habitizer, Any]:
    """A fresh :class:`Habitizer` on a new :class:`Synergy` (critic standardised by the teacher Q's mean/sd) and
    ``step() -> metrics``, one update on a minibatch drawn with replacement from the teacher rows (seeded)."""
    check_teacher(teacher, habi)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    S, A = torch.from_numpy(teacher["states"]), torch.from_numpy(teacher["candidates"])
    Q, B = torch.from_numpy(teacher["values"]).float(), torch.from_numpy(teacher["best_actions"])
    model = Synergy(cfg=habi)
    with torch.no_grad():
        model.critic.q_mean.fill_(float(Q.mean()))
        model.critic.q_std.fill_(max(float(Q.std()), 1e-6))
    model = model.to(device)
    S, A, Q, B = (t.to(device) for t in (S, A, Q, B))
    trainer = Habitizer(model=model, config=config)

    def step() -> dict[str, float]:
        idx = torch.from_numpy(rng.integers(0, len(S), size=config.batch_size)).to(device)
        return trainer.step(S[idx], A[idx], Q[idx], B[idx])

    return trainer, step


def habitize(teacher: dict[str, np.ndarray], *, habi: HabiConfig, config: HabitizeConfig, seed: int = 0,
             log: Any = None, progress: bool = True,
             device: torch.device | str = "cpu") -> tuple[Synergy, list[dict[str, float]]]:
    """Train the habitual model on the teacher rows of :func:`habi.teacher.generate_goal_directed_behavior`.

    ``device``: where the model and the teacher rows live while training; the model comes back on the CPU.

    Returns the model and the logged trajectory (every ``steps // 50`` steps: recon, KL means, η_KL, critic loss).
    """
    from tqdm.auto import tqdm

    trainer, one_step = make_habitizer(teacher, habi=habi, config=config, seed=seed, device=device)
    model = trainer.model
    hist: list[dict[str, float]] = []
    every = max(1, config.steps // 50)
    t0 = time.perf_counter()
    for step in tqdm(range(1, config.steps + 1), desc="habitize", disable=not progress, mininterval=2.0):
        out = one_step()
        if step % every == 0 or step == config.steps:
            out = {"step": step, **out, "seconds": round(time.perf_counter() - t0, 2)}
            hist.append(out)
            if log is not None:
                log(step, stage="habitize", **{k: v for k, v in out.items() if k != "step"})
    model.cpu().eval()
    return model, hist


def log10_gap(kl: float, target: float) -> float:
    """``|log10 KL - log10 target|`` (decades from the target)."""
    return abs(math.log10(max(kl, 1e-12)) - math.log10(target))


def freeze(module: nn.Module) -> nn.Module:
    for p in module.parameters():
        p.requires_grad_(False)
    return module.eval()
