"""A bounded-reward task where σ moves the optimal stochastic policy: an unstable scalar system with a saturated
actuator and a Gaussian-bump reward.

On the LQR, additive Gaussian action noise does not move the optimal gain (certainty equivalence: ``K*`` maximises
``J_A(·, σ)`` for every σ), so a fixed-σ learner can reach the deterministic optimum and PES has nothing to fix. Here
the actuator saturates, so noise changes what a gain does::

    x_{t+1} = a x_t + b · clip(u_t, −u_max, u_max),     r_t = exp(−x_t² / (2 w²)) ∈ (0, 1],     x_0 ~ U(−x0, x0)

with a linear policy ``μ_θ(x) = θ x`` (``d_S = d_A = d_Θ = 1``). Action-based exploration samples
``u = θ x + σ ε`` and the *environment* clips it (the score uses the sampled action: the estimator stays unbiased
for this objective, pes.md "Correction to pitfall (i)"); the mean action ``E[clip(θx + σε)]`` is a smoothed
saturation whose slope at 0 shrinks with σ, so the best stochastic gain grows with σ. Parameter-based exploration
smooths ``J_D`` over θ, and ``J_D`` has a cliff on one side of its optimum (an unstable closed loop for
``|a + bθ| ≥ 1`` near ``θ = −(a − 1)/b``, a chattering limit cycle for ``θ < −(a + 1)/b``), so the best smoothed gain
moves away from the cliff. Defaults (``a = 1.2``, ``b = 1``, ``u_max = 1``, ``w = 0.5``, ``x0 = 3``, ``T = 20``,
``γ = 0.99``): the deterministic optimum is the dead-beat gain ``θ* = −a/b`` (``J* ≈ 16.32``); the best AB gain at
σ = 1 is near −4 and deploys with a deterministic gap of about 5.

Returns (``J = E Σ_{t<T} γ^t r_t``):

* ``J_D(θ)``: the dynamics are deterministic given ``x_0``, so ``J_D`` is a 1-D integral over ``x_0``: Gauss–Legendre
  quadrature with ``quad_nodes`` nodes (1000: within about 1e-5 of a 200 001-point midpoint rule where the closed
  loop is stable, about 5e-3 in the chattering region);
* ``J_P(θ, σ) = E_{θ' ~ N(θ, σ²)} J_D(θ')``: Gauss–Hermite over θ' (``gh_nodes``) of that quadrature;
* ``J_A(θ, σ)``: Monte Carlo with ``mc_samples`` trajectories on fixed common random numbers (seed ``mc_seed``), the
  same draws for every θ, so differences and argmaxes over θ are smooth; an estimate, not exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pes.envs import Rollouts, check_exploration, check_gamma, check_horizon, sample_thetas
from pes.errors import PesError


@dataclass
class ClippedRegulator:
    """Unstable scalar regulator with a saturated actuator and a bounded Gaussian-bump reward (module docstring).

    Args: ``a`` (open-loop gain, > 1: unstable), ``b`` (input gain, ≠ 0), ``u_max`` (> 0: actuator limit), ``width``
    w (> 0: reward bump), ``x0_bound`` (x_0 uniform in ±bound), ``horizon`` T, ``gamma`` γ, ``quad_nodes``,
    ``gh_nodes``, ``mc_samples``, ``mc_seed`` (see the module docstring).
    """

    a: float = 1.2
    b: float = 1.0
    u_max: float = 1.0
    width: float = 0.5
    x0_bound: float = 3.0
    horizon: int = 20
    gamma: float = 0.99
    quad_nodes: int = 1000
    gh_nodes: int = 61
    mc_samples: int = 4000
    mc_seed: int = 12345
    name: str = "clipped-regulator"
    _cache: dict = field(default_factory=dict, repr=False)

    state_dim = 1
    action_dim = 1
    theta_dim = 1
    exact_stochastic = False
    """``J_A`` here is a Monte-Carlo estimate, so learners record only the exact ``J_D`` on their curves."""

    def __post_init__(self) -> None:
        for key in ("a", "b", "u_max", "width", "x0_bound"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise PesError(f"{key} must be a finite number, got {v!r}")
        for key in ("u_max", "width", "x0_bound"):
            if getattr(self, key) <= 0:
                raise PesError(f"{key} must be > 0, got {getattr(self, key)!r}")
        if self.b == 0:
            raise PesError("b must be non-zero (the actuator must act on the state)")
        self.horizon = check_horizon(self.horizon)
        self.gamma = check_gamma(self.gamma)
        for key in ("quad_nodes", "gh_nodes", "mc_samples"):
            check_horizon(getattr(self, key), name=key)
        x, w = np.polynomial.legendre.leggauss(self.quad_nodes)
        self._x0 = x * self.x0_bound                                   # [Q] quadrature nodes of x_0
        self._w0 = w / 2.0                                             # [Q] weights of the uniform density
        rng = np.random.default_rng(self.mc_seed)
        self._mc_x0 = rng.uniform(-self.x0_bound, self.x0_bound, self.mc_samples)           # [S]
        self._mc_eps = rng.standard_normal((self.horizon, self.mc_samples))                  # [T, S]

    # ------------------------------------------------------------------ policy
    def check_theta(self, theta: Any) -> np.ndarray:
        """θ as ``[1]`` (or ``[M, 1]`` for a batch) float64; a wrong size or a non-finite value raises."""
        th = np.asarray(theta, dtype=np.float64)
        if th.shape[-1:] != (1,) or th.ndim > 2:
            raise PesError(f"theta must have 1 entry (d_A x d_S = 1 x 1) for {self.name}, got shape {th.shape}")
        if not np.isfinite(th).all():
            raise PesError("theta must be finite (found NaN or inf)")
        return th

    def reward(self, x: np.ndarray) -> np.ndarray:
        return np.exp(-np.square(x) / (2.0 * self.width ** 2))

    def step(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``a x + b clip(u, ±u_max)`` (the environment clips; the policy's sampled ``u`` is kept for the score)."""
        return self.a * x + self.b * np.clip(u, -self.u_max, self.u_max)

    # ------------------------------------------------------------------ simulation
    def rollout(self, theta: np.ndarray, *, sigma: float, batch: int, rng: np.random.Generator,
                exploration: str = "action", horizon: int | None = None) -> Rollouts:
        """``batch`` trajectories in parallel; same layout and RNG use as :meth:`pes.envs.LQR.rollout`."""
        check_exploration(exploration, allow_deterministic=True)
        theta = self.check_theta(theta)
        T = check_horizon(horizon if horizon is not None else self.horizon)
        n = check_horizon(batch, name="batch")
        thetas = sample_thetas(theta, sigma, n, rng, exploration)   # [n, 1]
        k = thetas[:, 0]
        x = rng.uniform(-self.x0_bound, self.x0_bound, size=n)
        states = np.empty((n, T, 1))
        actions = np.empty((n, T, 1))
        means = np.empty((n, T, 1))
        rewards = np.empty((n, T))
        ab = exploration == "action" and sigma > 0
        for t in range(T):
            mu = k * x
            u = mu + sigma * rng.standard_normal(n) if ab else mu
            states[:, t, 0], means[:, t, 0], actions[:, t, 0] = x, mu, u
            rewards[:, t] = self.reward(x)
            x = self.step(x, u)
        return Rollouts(states=states, actions=actions, means=means, rewards=rewards, thetas=thetas)

    # ------------------------------------------------------------------ returns
    def _deterministic(self, k: np.ndarray) -> np.ndarray:
        """``J_D`` for gains ``k [M]`` by quadrature over x_0."""
        x = np.broadcast_to(self._x0, (k.size, self._x0.size)).copy()    # [M, Q]
        kk = k[:, None]
        total = np.zeros_like(x)
        disc = 1.0
        for _ in range(self.horizon):
            total += disc * self.reward(x)
            x = self.step(x, kk * x)
            disc *= self.gamma
        return total @ self._w0

    def _action(self, k: np.ndarray, sigma: float, chunk: int = 64) -> np.ndarray:
        """``J_A`` for gains ``k [M]`` by Monte Carlo on the fixed common random numbers (``chunk`` gains at once)."""
        out = np.empty(k.size)
        for c in range(0, k.size, chunk):
            kk = k[c:c + chunk, None]                                       # [m, 1]
            x = np.broadcast_to(self._mc_x0, (kk.shape[0], self.mc_samples)).copy()   # [m, S]
            total = np.zeros_like(x)
            disc = 1.0
            for t in range(self.horizon):
                total += disc * self.reward(x)
                x = self.step(x, kk * x + sigma * self._mc_eps[t][None])
                disc *= self.gamma
            out[c:c + chunk] = total.mean(axis=1)
        return out

    def _parameter(self, k: np.ndarray, sigma: float, chunk: int = 8) -> np.ndarray:
        z, w = np.polynomial.hermite_e.hermegauss(self.gh_nodes)         # weight exp(−z²/2)
        w = w / w.sum()
        out = np.empty(k.size)
        for c in range(0, k.size, chunk):
            kk = k[c:c + chunk]
            vals = self._deterministic((kk[:, None] + sigma * z[None]).ravel()).reshape(kk.size, z.size)
            out[c:c + chunk] = vals @ w
        return out

    def exact_return(self, theta: np.ndarray, sigma: float = 0.0, exploration: str = "action", *,
                     horizon: int | None = -1, nodes: int | None = None) -> np.ndarray | float:
        """``J_D`` (σ = 0 or ``"deterministic"``: quadrature), ``J_P`` (Gauss–Hermite of the quadrature) or ``J_A``
        (Monte Carlo on common random numbers) of θ ``[1]`` or ``[M, 1]``. ``horizon``/``nodes`` exist for
        signature parity with :meth:`pes.envs.LQR.exact_return`; only the environment's horizon is supported."""
        check_exploration(exploration, allow_deterministic=True)
        if not (isinstance(sigma, (int, float)) and math.isfinite(sigma) and sigma >= 0):
            raise PesError(f"sigma must be a finite number >= 0, got {sigma!r}")
        if horizon not in (-1, self.horizon):
            raise PesError(f"{self.name} evaluates returns at its own horizon {self.horizon}, got {horizon!r}")
        th = self.check_theta(theta)
        single = th.ndim == 1
        k = th.reshape(-1)
        if exploration == "deterministic" or sigma == 0:
            out = self._deterministic(k)
        elif exploration == "action":
            out = self._action(k, float(sigma))
        else:
            out = self._parameter(k, float(sigma))
        return float(out[0]) if single else out

    def optimal_theta(self, sigma: float = 0.0, exploration: str = "action", *, lo: float = -6.0,
                      hi: float = 0.5, grid: int = 326) -> np.ndarray:
        """The maximiser of ``J_D`` (σ = 0) or of ``J_A`` / ``J_P`` at σ over θ ∈ [lo, hi]: a grid search (step
        0.02 by default) refined by a bounded scalar search on the two neighbouring cells, as ``[1]``."""
        key = ("opt", float(sigma), exploration, lo, hi, grid)
        if key in self._cache:
            return self._cache[key].copy()
        from scipy.optimize import minimize_scalar

        ks = np.linspace(lo, hi, grid)
        vals = np.asarray(self.exact_return(ks[:, None], sigma, exploration))
        i = int(np.argmax(vals))
        a, b = ks[max(i - 1, 0)], ks[min(i + 1, grid - 1)]
        res = minimize_scalar(lambda k: -float(self.exact_return(np.array([k]), sigma, exploration)),
                              bounds=(a, b), method="bounded", options={"xatol": 1e-7})
        best = float(res.x) if -res.fun >= vals[i] else float(ks[i])
        theta = np.array([best])
        self._cache[key] = theta
        return theta.copy()

    def optimal_return(self) -> float:
        """``J* = max_θ J_D(θ)``."""
        return float(self.exact_return(self.optimal_theta()))
