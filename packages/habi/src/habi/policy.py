"""Habitual inference (HI): the fast, planner-free decision rule of Habi.

For a state ``s`` (normalised with the teacher's normaliser)::

    z_k ~ p(z | s) = N(μ_p(s), σ_p(s)²),  k = 1..N_c            (N_c = 5 in the paper)
    a_k = D(z_k)
    a   = clip(a_{k*}, -1, 1),  k* = argmax_k score(s, z_k, a_k)

``scorer`` chooses the critic: ``"habi"`` (default here: the paper's decision-space critic ``C(z, a)``, planner-free),
``"planner"`` (the teacher's online ``q_min(s, a)``; the official MuJoCo default), ``"planner_target"`` (the
teacher's target critic) or ``"none"`` (only valid with ``N_c = 1``). ``latent="mean"`` is the explicit
``z = μ_p(s)`` ablation (N_c must then be 1).

Cost per decision with the default scorer: both prior MLPs, the decoder and the critic, once each, on a batch of
``N_c`` rows.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F

from habi.data import GaussianNormalizer
from habi.errors import HabiConfigError
from habi.model import SIGMA_FLOOR, HabiConfig, Synergy
from habi.nets import FusedTwinMLP

SCORERS = ("habi", "planner", "planner_target", "none")
LATENTS = ("sample", "mean")


def select_candidates(actions: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """Pick ``actions[b, argmax_k scores[b, k]]``; ``actions (B, N, act_dim)``, ``scores (B, N)`` -> ``(B, act_dim)``."""
    idx = scores.argmax(dim=1)
    return actions[torch.arange(actions.shape[0]), idx]


def check_inference_options(num_candidates: int, scorer: str, latent: str) -> None:
    if num_candidates < 1:
        raise HabiConfigError(f"num_candidates must be >= 1, got {num_candidates}")
    if scorer not in SCORERS:
        raise HabiConfigError(f"scorer must be one of {SCORERS}, got {scorer!r}")
    if latent not in LATENTS:
        raise HabiConfigError(f"latent must be one of {LATENTS}, got {latent!r}")
    if scorer == "none" and num_candidates != 1:
        raise HabiConfigError(f"scorer='none' needs num_candidates=1 (nothing to choose between), got {num_candidates}")
    if latent == "mean" and num_candidates != 1:
        raise HabiConfigError(f"latent='mean' gives identical candidates; use num_candidates=1, got {num_candidates}")


class HabitualPolicy:
    """Habi's habitual policy: ``act(observation) -> action`` for one raw observation (numpy in/out).

    Args:
        model: trained :class:`habi.model.Synergy`.
        normalizer: the teacher's state normaliser.
        num_candidates: N_c (paper 5).
        scorer: see the module docstring.
        planner: the teacher (:class:`habi.planner.DiffusionPlanner`), needed only for the planner scorers.
        latent: ``"sample"`` (paper) or ``"mean"`` (``z = μ_p(s)``).
        backend: how ``act`` (one observation) runs: ``"numpy"`` (default) or ``"torch"``, the compiled batch-1
            paths of :mod:`habi.fast` (same maths, tested equal given the same draws; ``act_batch`` too), or
            ``"reference"``, the plain batched torch path.
        seed: seed of the numpy generator that draws the compiled paths' latents.
    """

    def __init__(self, *, model: Synergy, normalizer: GaussianNormalizer, num_candidates: int = 5,
                 scorer: Literal["habi", "planner", "planner_target", "none"] = "habi", planner: Any = None,
                 latent: Literal["sample", "mean"] = "sample", backend: str = "numpy", seed: int = 0) -> None:
        check_inference_options(num_candidates, scorer, latent)
        if scorer.startswith("planner") and planner is None:
            raise HabiConfigError(f"scorer={scorer!r} needs the planner (pass planner=... or use scorer='habi')")
        if num_candidates == 1:
            scorer = "none"  # one candidate: the critic cannot change the choice, skip its cost
        self.model, self.normalizer, self.planner = model.eval(), normalizer, planner
        self.num_candidates, self.scorer, self.latent = num_candidates, scorer, latent
        self.cfg: HabiConfig = model.cfg
        self._mean = torch.tensor(normalizer.mean, dtype=torch.float32)
        self._std = torch.tensor(normalizer.std, dtype=torch.float32)
        self._prior = FusedTwinMLP(model.prior.mu, model.prior.sigma)  # weights snapshotted (frozen policy)
        if backend not in ("numpy", "torch", "reference"):
            raise HabiConfigError(f"backend must be 'numpy', 'torch' or 'reference', got {backend!r}")
        self.backend, self._rng, self._fast = backend, np.random.default_rng(seed), None
        self._mean_np = np.asarray(normalizer.mean, dtype=np.float32)
        self._std_np = np.asarray(normalizer.std, dtype=np.float32)

    def act_normalized(self, s: torch.Tensor, *, eps: torch.Tensor | None = None) -> torch.Tensor:
        """Habitual inference for normalised states ``s (B, obs_dim) -> (B, act_dim)`` in [-1, 1].

        ``eps (B, N_c, d_z)`` optionally supplies the standard-normal latent draws."""
        with torch.inference_mode():
            return self._decide(s, eps)

    def _decide(self, s: torch.Tensor, eps: torch.Tensor | None = None) -> torch.Tensor:
        b, n, m = s.shape[0], self.num_candidates, self.model
        mu, pre_sigma = self._prior(s)  # (B, d_z) each: the two prior MLPs, fused
        sigma = F.softplus(pre_sigma) + SIGMA_FLOOR
        if self.latent == "mean":
            z = mu
        else:
            eps = torch.randn(b, n, mu.shape[-1]) if eps is None else eps
            z = torch.addcmul(mu[:, None], sigma[:, None], eps).reshape(b * n, -1)  # (B, N, d_z) -> (B·N, d_z)
        need_s = self.cfg.conditional_decoder or self.scorer.startswith("planner")
        s_rep = s.repeat_interleave(n, dim=0) if (need_s and n > 1) else s  # (B·N, obs)
        a = m.decode(z, s_rep if self.cfg.conditional_decoder else None)  # (B·N, act)
        if self.scorer == "none":
            out = a
        else:
            if self.scorer == "habi":
                # C(z, a) = q_mean + q_std · f([z, a]) with q_std > 0: the argmax only needs f
                q = m.critic.net(torch.cat([z, a], dim=-1)).squeeze(-1)
            else:
                q = self.planner.q_min(s_rep, a, target=self.scorer == "planner_target")
            out = select_candidates(a.reshape(b, n, -1), q.reshape(b, n))  # (B·N, ·) -> (B, N, ·)
        return out.clamp(-1.0, 1.0)

    def _fast_path(self):
        if self._fast is None:
            from habi.fast import FastHabit, NormalStream

            self._fast = FastHabit(self, backend=self.backend)  # weights snapshotted (frozen policy)
            self._noise = NormalStream(self._rng, (self.num_candidates, self.cfg.latent_dim))
        return self._fast

    def act_batch(self, observations: np.ndarray) -> np.ndarray:
        """Raw observations ``(B, obs_dim)`` -> actions ``(B, act_dim)``.

        With the compiled backends (default) the latents come from the policy's own generator in stream order, so
        ``act_batch(obs)`` returns exactly what ``[act(o) for o in obs]`` would from the same generator state;
        ``backend="reference"`` runs the plain torch path with torch's global generator."""
        obs = np.asarray(observations, dtype=np.float32)
        if obs.ndim != 2 or obs.shape[1] != self.cfg.obs_dim:
            raise HabiConfigError(f"observations must have shape (B, {self.cfg.obs_dim}), got {obs.shape}")
        if self.backend != "reference":
            fast = self._fast_path()
            s = (obs - self._mean_np) / self._std_np  # (B, obs)
            eps = None if self.latent == "mean" else self._noise.take_many(len(obs))  # (B, N_c, d_z)
            return fast.decide_batch(s, eps)
        with torch.inference_mode():
            s = (torch.from_numpy(obs) - self._mean) / self._std
            return self._decide(s).numpy()

    def act(self, observation: np.ndarray) -> np.ndarray:
        """One raw observation ``(obs_dim,)`` -> one action ``(act_dim,)``."""
        obs = np.asarray(observation, dtype=np.float32)
        if obs.shape != (self.cfg.obs_dim,):
            raise HabiConfigError(f"observation must have shape ({self.cfg.obs_dim},), got {obs.shape}")
        if self.backend != "reference":
            fast = self._fast_path()
            s = ((obs - self._mean_np) / self._std_np)[None]  # (obs,) -> (1, obs)
            return fast.decide(s, None if self.latent == "mean" else self._noise.take())
        with torch.inference_mode():
            s = ((torch.from_numpy(obs) - self._mean) / self._std)[None]  # (obs,) -> (1, obs)
            return self._decide(s)[0].numpy()

    # ----------------------------------------------------------------- persistence
    def save(self, path: str | Path) -> Path:
        from icml25.checkpoint import save_model

        return save_model(path, self.model, {"kind": "habi.HabitualPolicy", "habi": asdict(self.cfg),
                                             "normalizer": self.normalizer.to_dict(),
                                             "num_candidates": self.num_candidates, "scorer": self.scorer,
                                             "latent": self.latent})

    @classmethod
    def from_pretrained(cls, run_dir: str | Path, *, num_candidates: int | None = None, scorer: str | None = None,
                        latent: str | None = None, backend: str = "numpy", seed: int = 0) -> HabitualPolicy:
        """Load a policy saved by ``habi habitize`` (``run_dir`` or ``run_dir/habi``).

        ``backend`` and ``seed`` choose how ``act`` runs (see the class docstring).
        The planner scorers load the teacher from the sibling folder ``planner`` of the policy folder.
        """
        from icml25.checkpoint import CheckpointError, load_config, load_model

        root = Path(run_dir)
        path = root / "habi" if (root / "habi").is_dir() else root
        meta = load_config(path)
        if meta.get("kind") != "habi.HabitualPolicy":
            raise CheckpointError(f"{str(path)!r} is not a habi policy checkpoint (kind={meta.get('kind')!r})")
        cfg = HabiConfig(**meta["habi"])
        model = load_model(path, lambda _m: Synergy(cfg=cfg))
        nc = meta["num_candidates"] if num_candidates is None else num_candidates
        sc = meta["scorer"] if scorer is None else scorer
        if sc == "none" and nc != 1 and num_candidates is None:
            nc = 1
        planner = None
        if sc.startswith("planner"):
            from habi.planner import DiffusionPlanner

            planner = DiffusionPlanner.from_pretrained(path.parent / "planner")
        return cls(model=model, normalizer=GaussianNormalizer.from_dict(meta["normalizer"]), num_candidates=nc,
                   scorer=sc, planner=planner, latent=meta.get("latent", "sample") if latent is None else latent,
                   backend=backend, seed=seed)
