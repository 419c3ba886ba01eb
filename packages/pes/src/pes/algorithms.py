"""PES and SL-PG (Montenegro, Mussi, Papini, Metelli, "Convergence Analysis of Policy Gradient Methods with Dynamic
Stochasticity", ICML 2025), and fixed-σ GPOMDP / PGPE as their special case.

**PES (Algorithm 1).** For phases ``p = 0..P−1`` run ``K_p`` iterations of fixed-σ policy gradient at
``σ_p = max(σ_0 (p+1)^{−y}, σ_min)``, each phase warm-started from the last θ::

    θ_{k+1} = θ_k + ζ_p · step(ĝ(θ_k; σ_p))        ĝ: GPOMDP (AB) or PGPE (PB), batch N, horizon T

and deploy the last iterate θ_P as the deterministic policy ``μ_θ``. Theory: last-iterate convergence to the optimal
*deterministic* policy with Õ(ε^{−5}) samples. ``P = 1`` is plain fixed-σ GPOMDP / PGPE (bit for bit, same RNG).
Options: Adam state carried across phases (released code since 2025-01-25, default) or reset at each phase
(``reset_optimizer=True``); each phase warm-started from the last iterate (default) or from the phase's best iterate
(``warm_start="best"``: the θ whose batch had the highest mean return at the phase's σ, later iterates winning ties;
after the last phase that θ is returned).
``reset_optimizer=True, warm_start="best"`` is the earlier MagicRL release ("PES v2.0" / "PEL v2.0", 2025-01-10: a
fresh PG subroutine per phase started from its ``best_theta``; :meth:`PES.earlier_release`). The theory's step
``ζ_p ∝ σ_p²`` is ``lr_schedule="sigma2"`` (``ζ_p = lr (σ_p/σ_0)²``).

**SL-PG.** σ = g(ν) learned jointly (:mod:`pes.sigma`): the σ-gradient comes from the noise's likelihood ratio
(PB ``(‖θ' − θ‖² − dσ²)/σ³``, AB per step ``(‖a − μ‖² − d_A σ²)/σ³`` accumulated GPOMDP-style), the chain rule
``∂J/∂ν = ∂J/∂σ · dσ/dν``, and ν is updated once per phase (averaging the phase's σ-gradients) by its own Adam
(``sigma_lr = 0.01``). Defaults follow the paper's runs: ``exp`` with one iteration per phase (ν updated each
iteration). Theory: Õ(ε^{−3}), but only to the optimal *stochastic* (hyper)policy.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from pes.envs import check_exploration, check_gamma, check_horizon
from pes.errors import PesError
from pes.estimators import ESTIMATORS, estimate
from pes.optim import make_optimizer
from pes.sigma import Parameterization, schedule

LR_SCHEDULES = ("constant", "sigma2")
WARM_STARTS = ("last", "best")


def _positive_int(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise PesError(f"{name} must be an integer >= 1, got {v!r}")
    return int(v)


def _positive(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise PesError(f"{name} must be a positive finite number, got {v!r}")
    return float(v)


class _PolicyGradientRun:
    """What PES and SL-PG share: validation, the rollout + estimate step, the history, and evaluation."""

    def __init__(self, env: Any, *, exploration: str, phases: int, iters_per_phase: int, sigma0: float,
                 sigma_exponent: float, lr: float, batch: int, horizon: int | None, gamma: float | None, seed: int,
                 sigma_min: float, optimizer: str, estimator: str, baseline: bool, theta0: Any,
                 eval_every: int, eval_episodes: int) -> None:
        self.env = env
        self.exploration = check_exploration(exploration)
        self.phases = _positive_int("phases", phases)
        self.iters_per_phase = _positive_int("iters_per_phase", iters_per_phase)
        self.sigma0 = _positive("sigma0", sigma0)
        self.sigma_exponent = _positive("sigma_exponent", sigma_exponent)
        self.lr = _positive("lr", lr)
        self.batch = _positive_int("batch", batch)
        env_h = getattr(env, "horizon", None)
        self.horizon = check_horizon(horizon if horizon is not None else env_h if env_h is not None else 0)
        self.gamma = check_gamma(gamma if gamma is not None else getattr(env, "gamma", 1.0))
        if not (isinstance(sigma_min, (int, float)) and math.isfinite(sigma_min) and sigma_min >= 0):
            raise PesError(f"sigma_min must be a finite number >= 0, got {sigma_min!r}")
        self.sigma_min = float(sigma_min)
        if estimator not in ESTIMATORS:
            raise PesError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
        self.estimator, self.baseline = estimator, bool(baseline)
        self.optimizer_name = optimizer
        self.opt = make_optimizer(optimizer, self.lr)
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)
        self.theta = (np.zeros(env.theta_dim) if theta0 is None else env.check_theta(theta0).copy())
        self.eval_every = _positive_int("eval_every", eval_every)
        self.eval_episodes = _positive_int("eval_episodes", eval_episodes)
        self.history: list[dict[str, Any]] = []
        self.samples = 0
        self.iteration = 0
        self.seconds = 0.0

    @property
    def iterations(self) -> int:
        return self.phases * self.iters_per_phase

    def _rollout(self, sigma: float):
        return self.env.rollout(self.theta, sigma=sigma, batch=self.batch, rng=self.rng,
                                exploration=self.exploration, horizon=self.horizon)

    def _record(self, sigma: float, batch_return: float, force: bool = False) -> None:
        k = self.iteration
        rec: dict[str, Any] = {"iteration": k, "samples": self.samples, "sigma": float(sigma),
                               "batch_return": float(batch_return)}
        if force or k % self.eval_every == 0 or k == self.iterations:
            rec["theta"] = self.theta.tolist()
            rec.update(evaluate(self.env, self.theta, sigma=sigma, exploration=self.exploration,
                                episodes=self.eval_episodes, seed=10_000_019 + self.seed + k,
                                horizon=self.horizon, gamma=self.gamma))
        self.history.append(rec)

    def curve(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """``(samples, values)`` of a recorded key (e.g. ``"J_D"``, ``"J_stochastic"``, ``"sigma"``; ``"theta"``, the
        iterate at each evaluation, gives values of shape ``[n, d_Θ]``)."""
        rows = [h for h in self.history if key in h]
        return np.array([h["samples"] for h in rows], dtype=float), np.array([h[key] for h in rows], dtype=float)


def evaluate(env: Any, theta: np.ndarray, *, sigma: float = 0.0, exploration: str = "action", episodes: int = 10,
             seed: int = 0, horizon: int | None = None, gamma: float | None = None) -> dict[str, float]:
    """Deterministic performance ``J_D(θ)`` (and the stochastic objective at σ) of a linear policy.

    Exact on an environment with ``exact_return`` (:class:`~pes.envs.LQR`: ``J_D``, and ``J_A`` / ``J_P`` at σ;
    :class:`~pes.clipped.ClippedRegulator`: quadrature, its ``J_A`` a common-random-number Monte Carlo) evaluated at
    its own horizon and γ; otherwise the Monte-Carlo mean of ``episodes`` deterministic rollouts (σ = 0) with their
    own RNG (``seed``)."""
    if hasattr(env, "exact_return") and (horizon is None or horizon == env.horizon) and \
            (gamma is None or gamma == env.gamma):
        out = {"J_D": float(env.exact_return(theta))}
        if sigma > 0 and getattr(env, "exact_stochastic", True):
            out["J_stochastic"] = float(env.exact_return(theta, sigma, exploration))
        return out
    g = gamma if gamma is not None else env.gamma
    ro = env.rollout(theta, sigma=0.0, batch=episodes, rng=np.random.default_rng(seed), exploration="deterministic",
                     horizon=horizon)
    return {"J_D": float(ro.returns(g).mean())}


class PES(_PolicyGradientRun):
    """Policy gradient with Phases of Evolving Stochasticity (Algorithm 1); see the module docstring.

    Args (keyword-only): ``exploration`` ``"action"`` (GPOMDP) or ``"parameter"`` (PGPE); ``phases`` P;
    ``iters_per_phase`` K_p; ``sigma0`` σ_0; ``sigma_exponent`` y; ``lr`` step (Adam by default); ``batch`` N;
    ``horizon`` T and ``gamma`` γ (default: the environment's); ``seed``; ``sigma_min`` floor; ``optimizer``
    ``"adam"|"sgd"``; ``reset_optimizer`` (fresh Adam each phase; the released code carries it over);
    ``warm_start`` ``"last"|"best"`` (each phase starts from the last iterate, or from the previous phase's
    best-batch iterate, and the last phase's best-batch iterate is returned, as the earlier release did);
    ``lr_schedule`` ``"constant"|"sigma2"``; ``estimator`` ``"gpomdp"|"reinforce"`` (AB); ``baseline``;
    ``theta0`` (default 0); ``eval_every`` / ``eval_episodes`` for the recorded curves.

    Attributes after :meth:`learn`: ``theta [d_Θ]`` (the last iterate), ``history`` (one dict per iteration:
    ``samples`` = iterations × batch × horizon so far, ``sigma``, ``batch_return`` (the stochastic batch mean), and
    every ``eval_every`` iterations ``theta`` (the iterate), ``J_D`` and ``J_stochastic``), ``sigmas [P]``.
    """

    def __init__(self, env: Any, *, exploration: str = "action", phases: int = 10, iters_per_phase: int = 50,
                 sigma0: float = 1.0, sigma_exponent: float = 1.0, lr: float = 0.01, batch: int = 100,
                 horizon: int | None = None, gamma: float | None = None, seed: int = 0, sigma_min: float = 0.0,
                 optimizer: str = "adam", reset_optimizer: bool = False, warm_start: str = "last",
                 lr_schedule: str = "constant", estimator: str = "gpomdp", baseline: bool = False,
                 theta0: Any = None, eval_every: int = 10, eval_episodes: int = 10) -> None:
        super().__init__(env, exploration=exploration, phases=phases, iters_per_phase=iters_per_phase,
                         sigma0=sigma0, sigma_exponent=sigma_exponent, lr=lr, batch=batch, horizon=horizon,
                         gamma=gamma, seed=seed, sigma_min=sigma_min, optimizer=optimizer, estimator=estimator,
                         baseline=baseline, theta0=theta0, eval_every=eval_every, eval_episodes=eval_episodes)
        if lr_schedule not in LR_SCHEDULES:
            raise PesError(f"lr_schedule must be one of {LR_SCHEDULES}, got {lr_schedule!r}")
        self.lr_schedule = lr_schedule
        if warm_start not in WARM_STARTS:
            raise PesError(f"warm_start must be one of {WARM_STARTS}, got {warm_start!r}")
        self.warm_start = warm_start
        self.reset_optimizer = bool(reset_optimizer)
        self.sigmas = schedule(self.phases, sigma0=self.sigma0, sigma_exponent=self.sigma_exponent,
                               sigma_min=self.sigma_min)
        if self.sigmas[-1] <= 0:
            raise PesError("the schedule reaches sigma = 0; set sigma_min > 0")

    def learn(self, callback: Callable[[PES], None] | None = None) -> PES:
        t0 = time.perf_counter()
        if not self.history:
            self._record(self.sigmas[0], float("nan"), force=True)
        for p, sigma in enumerate(self.sigmas):
            if p > 0 and self.reset_optimizer:
                self.opt.reset()
            scale = (sigma / self.sigma0) ** 2 if self.lr_schedule == "sigma2" else 1.0
            best_theta, best_perf = None, -np.inf
            for _ in range(self.iters_per_phase):
                ro = self._rollout(float(sigma))
                g, _ = estimate(ro, self.theta, float(sigma), exploration=self.exploration, gamma=self.gamma,
                                estimator=self.estimator, baseline=self.baseline)
                perf = float(ro.returns(self.gamma).mean())
                if perf >= best_perf:                      # the released update_best_theta: ties go to the later
                    best_theta, best_perf = self.theta.copy(), perf
                self.theta = self.opt.step(self.theta, g, scale=scale)
                if not np.isfinite(self.theta).all():
                    raise FloatingPointError(f"theta diverged at iteration {self.iteration + 1} (lr={self.lr})")
                self.iteration += 1
                self.samples += self.batch * self.horizon
                self._record(float(sigma), perf)
                if callback is not None:
                    callback(self)
            if self.warm_start == "best" and best_theta is not None:
                # the earlier release: the next phase starts from this phase's best-batch iterate, and after the
                # last phase that iterate is the one returned (its ``last_param``); the phase's last record is
                # re-evaluated at the swapped θ (same count, so every method's curve has the same sample grid)
                self.theta = best_theta
                if self.history:
                    last = self.history.pop()
                    self._record(last["sigma"], last["batch_return"], force="J_D" in last)
        self.seconds += time.perf_counter() - t0
        return self

    @classmethod
    def earlier_release(cls, env: Any, **kwargs: Any) -> PES:
        """PES as the earlier MagicRL release ran it (before 2025-01-25): a fresh Adam at each phase, each phase
        warm-started from the previous phase's best-batch iterate, and the last phase's best-batch iterate returned
        (``reset_optimizer=True, warm_start="best"``)."""
        return cls(env, **({"reset_optimizer": True, "warm_start": "best"} | kwargs))


def fixed_sigma(env: Any, *, sigma: float, iterations: int, **kwargs: Any) -> PES:
    """Plain GPOMDP (``exploration="action"``) or PGPE (``"parameter"``) at a fixed σ: PES with one phase."""
    return PES(env, phases=1, iters_per_phase=iterations, sigma0=sigma, **kwargs)


PB_SIGMA_SCORES = ("sampling", "released")


class SLPG(_PolicyGradientRun):
    """Stochasticity-Learning Policy Gradient: θ and σ = g(ν) learned jointly (see the module docstring).

    Args as :class:`PES`, plus ``parameterization`` ``"exp"|"hyper"|"sigmoid"``; ``sigma_lr`` (ν's own Adam,
    0.01); ``sigma_exponent`` is the ``y`` of ``hyper``; ``pb_sigma_score`` ``"sampling"`` (the σ-score against the
    mean the θ' were drawn from: correct) or ``"released"`` (against the already-updated mean, as the released
    code does). Defaults: ``phases=500, iters_per_phase=1`` (ν updated every iteration, as in the paper's runs).
    ``sigma_min`` floors σ (default 0: none). Attributes: ``theta``, ``sigma`` (current), ``nu``, ``history``.
    """

    def __init__(self, env: Any, *, exploration: str = "action", parameterization: str = "exp",
                 phases: int = 500, iters_per_phase: int = 1, sigma0: float = 1.0, sigma_exponent: float = 1.0,
                 lr: float = 0.01, sigma_lr: float = 0.01, batch: int = 100, horizon: int | None = None,
                 gamma: float | None = None, seed: int = 0, sigma_min: float = 0.0, optimizer: str = "adam",
                 estimator: str = "gpomdp", baseline: bool = False, pb_sigma_score: str = "sampling",
                 theta0: Any = None, eval_every: int = 10, eval_episodes: int = 10) -> None:
        super().__init__(env, exploration=exploration, phases=phases, iters_per_phase=iters_per_phase,
                         sigma0=sigma0, sigma_exponent=sigma_exponent, lr=lr, batch=batch, horizon=horizon,
                         gamma=gamma, seed=seed, sigma_min=sigma_min, optimizer=optimizer, estimator=estimator,
                         baseline=baseline, theta0=theta0, eval_every=eval_every, eval_episodes=eval_episodes)
        self.param = Parameterization(parameterization, exponent=self.sigma_exponent)
        self.parameterization = parameterization
        self.sigma_lr = _positive("sigma_lr", sigma_lr)
        if pb_sigma_score not in PB_SIGMA_SCORES:
            raise PesError(f"pb_sigma_score must be one of {PB_SIGMA_SCORES}, got {pb_sigma_score!r}")
        self.pb_sigma_score = pb_sigma_score
        self.nu = float(self.param.inverse(self.sigma0))
        self.nu_opt = make_optimizer("adam", self.sigma_lr)

    @property
    def sigma(self) -> float:
        return max(float(self.param.sigma(self.nu)), self.sigma_min)

    def learn(self, callback: Callable[[SLPG], None] | None = None) -> SLPG:
        t0 = time.perf_counter()
        if not self.history:
            self._record(self.sigma, float("nan"), force=True)
        for _ in range(self.phases):
            sigma = self.sigma
            sgrads = []
            for _ in range(self.iters_per_phase):
                ro = self._rollout(sigma)
                released = self.exploration == "parameter" and self.pb_sigma_score == "released"
                g, gs = estimate(ro, self.theta, sigma, exploration=self.exploration, gamma=self.gamma,
                                 estimator=self.estimator, baseline=self.baseline, sigma_grad=not released)
                self.theta = self.opt.step(self.theta, g)
                if released:  # the released code scores σ against the mean *after* the θ step
                    _, gs = estimate(ro, self.theta, sigma, exploration=self.exploration, gamma=self.gamma,
                                     baseline=self.baseline, sigma_grad=True, sigma_score_theta=self.theta)
                if not np.isfinite(self.theta).all():
                    raise FloatingPointError(f"theta diverged at iteration {self.iteration + 1} (lr={self.lr})")
                sgrads.append(gs)
                self.iteration += 1
                self.samples += self.batch * self.horizon
                self._record(sigma, float(ro.returns(self.gamma).mean()))
                if callback is not None:
                    callback(self)
            gnu = float(np.mean(sgrads)) * float(self.param.dsigma(self.nu))     # chain rule ∂J/∂ν
            self.nu = self.param.clip(float(self.nu_opt.step(np.array([self.nu]), np.array([gnu]))[0]))
        self.seconds += time.perf_counter() - t0
        return self
