"""Environments: a vectorised numpy LQR with exact returns, its gymnasium twin, and MuJoCo Swimmer-v5.

**LQR** (finite horizon ``T``, discount ``γ``), states ``x ∈ R^{d_S}``, actions ``u ∈ R^{d_A}``::

    x_{t+1} = A x_t + B u_t,   r_t = −(x_tᵀ Q x_t + u_tᵀ R u_t),   x_0 ~ U(−x0_bound, x0_bound)^{d_S}

with a linear policy ``μ_θ(x) = K x``, ``K = θ.reshape(d_A, d_S)`` (row-major, ``d_Θ = d_A · d_S``).

Exact returns by the second-moment recursion (``Σ_t = E[x_t x_tᵀ]``, ``Σ_0 = x0_bound²/3 · I``, ``M = A + BK``):

* deterministic ``J_D(K) = −Σ_{t<T} γ^t tr((Q + KᵀRK) Σ_t)``, ``Σ_{t+1} = M Σ_t Mᵀ``;
* action-based ``J_A(K, σ) = −Σ_{t<T} γ^t [tr((Q + KᵀRK) Σ_t) + σ² tr R]``, ``Σ_{t+1} = M Σ_t Mᵀ + σ² B Bᵀ``;
* parameter-based ``J_P(K, σ) = E_{θ' ~ N(θ, σ² I)} J_D(θ')`` by Gauss–Hermite quadrature (a tensor grid in
  ``d_Θ`` dimensions; ``J_D`` is a polynomial of degree ``2T`` in θ for finite ``T``, so ``T + 1`` nodes per
  dimension integrate it exactly);
* infinite horizon (``horizon=None``): ``J = −tr(P Σ_0) − σ² [tr(P BBᵀ) γ/(1−γ) + tr R/(1−γ)]`` with the discounted
  Lyapunov solution ``P = C + γ Mᵀ P M``; an unstable gain (spectral radius of ``√γ M`` ≥ 1) raises
  :class:`~pes.errors.PesError`.

The optimal gain solves the *discounted* Riccati equation (``A, B`` scaled by ``√γ``; the released code forgets γ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pes.errors import PesError

EXPLORATIONS = ("action", "parameter")


def check_exploration(exploration: str, *, allow_deterministic: bool = False) -> str:
    allowed = EXPLORATIONS + (("deterministic",) if allow_deterministic else ())
    if exploration not in allowed:
        raise PesError(f"exploration must be one of {allowed}, got {exploration!r}")
    return exploration


def check_gamma(gamma: float) -> float:
    if not (isinstance(gamma, (int, float)) and math.isfinite(gamma) and 0.0 < gamma <= 1.0):
        raise PesError(f"gamma must be in (0, 1], got {gamma!r}")
    return float(gamma)


def check_horizon(horizon: Any, *, name: str = "horizon") -> int:
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
        raise PesError(f"{name} must be an integer >= 1, got {horizon!r}")
    return int(horizon)


@dataclass
class Rollouts:
    """A batch of ``N`` trajectories of length ``T``.

    ``states [N, T, d_S]``, ``actions [N, T, d_A]`` (as sampled, before any clipping by the environment),
    ``means [N, T, d_A]`` (``μ_θ(s)``), ``rewards [N, T]``, ``thetas [N, d_Θ]`` (the parameters each trajectory ran).
    """

    states: np.ndarray
    actions: np.ndarray
    means: np.ndarray
    rewards: np.ndarray
    thetas: np.ndarray

    def returns(self, gamma: float) -> np.ndarray:
        """Discounted returns ``[N]``: ``Σ_t γ^t r_t``."""
        disc = gamma ** np.arange(self.rewards.shape[1])
        return self.rewards @ disc


def sample_thetas(theta: np.ndarray, sigma: float, n: int, rng: np.random.Generator, exploration: str) -> np.ndarray:
    """``[n, d_Θ]``: the hyperpolicy draws ``θ' ~ N(θ, σ² I)`` (parameter-based) or ``n`` copies of θ (action)."""
    theta = np.asarray(theta, dtype=np.float64)
    if exploration == "parameter" and sigma > 0:
        return theta[None, :] + sigma * rng.standard_normal((n, theta.size))
    return np.repeat(theta[None, :], n, axis=0)


@dataclass
class LQR:
    """Linear-quadratic regulator, vectorised over trajectories (numpy), with exact returns.

    Args: ``A [d_S, d_S]``, ``B [d_S, d_A]``, ``Q [d_S, d_S]`` (PSD), ``R [d_A, d_A]`` (PD); ``horizon`` T
    (``None``: infinite, exact evaluation only); ``gamma`` γ ∈ (0, 1]; ``x0_bound`` (x_0 uniform in ±bound).
    """

    A: np.ndarray
    B: np.ndarray
    Q: np.ndarray
    R: np.ndarray
    horizon: int | None = 20
    gamma: float = 0.99
    x0_bound: float = 3.0
    name: str = "lqr"
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.A = np.atleast_2d(np.asarray(self.A, dtype=np.float64))
        self.B = np.atleast_2d(np.asarray(self.B, dtype=np.float64))
        self.Q = np.atleast_2d(np.asarray(self.Q, dtype=np.float64))
        self.R = np.atleast_2d(np.asarray(self.R, dtype=np.float64))
        ds, da = self.B.shape
        if self.A.shape != (ds, ds) or self.Q.shape != (ds, ds) or self.R.shape != (da, da):
            raise PesError(f"LQR shapes do not agree: A {self.A.shape}, B {self.B.shape}, Q {self.Q.shape}, "
                           f"R {self.R.shape} (need A, Q [d_S, d_S], B [d_S, d_A], R [d_A, d_A])")
        if self.horizon is not None:
            self.horizon = check_horizon(self.horizon)
        self.gamma = check_gamma(self.gamma)
        if not (math.isfinite(self.x0_bound) and self.x0_bound >= 0):
            raise PesError(f"x0_bound must be a finite number >= 0, got {self.x0_bound!r}")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def scalar(cls, *, a: float = 0.9, b: float = 0.9, q: float = 0.9, r: float = 0.1, horizon: int | None = 20,
               gamma: float = 0.99, x0_bound: float = 3.0) -> LQR:
        """The scalar LQR of the paper note's CPU plan (``d_S = d_A = 1``)."""
        return cls(A=[[a]], B=[[b]], Q=[[q]], R=[[r]], horizon=horizon, gamma=gamma, x0_bound=x0_bound,
                   name="lqr-scalar")

    @classmethod
    def official(cls, *, s_dim: int = 1, a_dim: int = 2, eps: float = 0.1, horizon: int | None = 20,
                 gamma: float = 0.99, x0_bound: float = 3.0) -> LQR:
        """The released generator's shape: ``A = 0.9 I``, ``B = 0.9 I(d_S, d_A)`` (ones on the diagonal),
        ``Q = (1 − ε) I``, ``R = ε I`` (our reading of its "ε = 0.1 weights"), default ``d_S = 1, d_A = 2``."""
        check_horizon(s_dim, name="s_dim")
        check_horizon(a_dim, name="a_dim")
        return cls(A=0.9 * np.eye(s_dim), B=0.9 * np.eye(s_dim, a_dim), Q=(1 - eps) * np.eye(s_dim),
                   R=eps * np.eye(a_dim), horizon=horizon, gamma=gamma, x0_bound=x0_bound,
                   name=f"lqr-s{s_dim}a{a_dim}")

    # ------------------------------------------------------------------ sizes
    @property
    def state_dim(self) -> int:
        return self.B.shape[0]

    @property
    def action_dim(self) -> int:
        return self.B.shape[1]

    @property
    def theta_dim(self) -> int:
        return self.state_dim * self.action_dim

    def check_theta(self, theta: Any) -> np.ndarray:
        """θ as ``[d_Θ]`` float64 (or ``[M, d_Θ]`` for a batch); a wrong size raises naming both sizes."""
        th = np.asarray(theta, dtype=np.float64)
        if th.shape[-1:] != (self.theta_dim,) or th.ndim > 2:
            raise PesError(f"theta must have {self.theta_dim} entries (d_A x d_S = {self.action_dim} x "
                           f"{self.state_dim}) for {self.name}, got shape {th.shape}")
        if not np.isfinite(th).all():
            raise PesError("theta must be finite (found NaN or inf)")
        return th

    def gain(self, theta: np.ndarray) -> np.ndarray:
        """``K [d_A, d_S]`` (or ``[M, d_A, d_S]``) from θ (row-major)."""
        th = self.check_theta(theta)
        return th.reshape(*th.shape[:-1], self.action_dim, self.state_dim)

    @property
    def sigma0_matrix(self) -> np.ndarray:
        return (self.x0_bound ** 2 / 3.0) * np.eye(self.state_dim)

    # ------------------------------------------------------------------ simulation
    def rollout(self, theta: np.ndarray, *, sigma: float, batch: int, rng: np.random.Generator,
                exploration: str = "action", horizon: int | None = None) -> Rollouts:
        """Simulate ``batch`` trajectories in parallel (numpy). AB: ``u = Kx + σ ε`` per step; PB: one
        ``θ' ~ N(θ, σ² I)`` per trajectory, then ``u = K' x``; ``sigma = 0`` is the deterministic policy."""
        check_exploration(exploration, allow_deterministic=True)
        theta = self.check_theta(theta)
        T = check_horizon(horizon if horizon is not None else self.horizon or 0)
        n = check_horizon(batch, name="batch")
        thetas = sample_thetas(theta, sigma, n, rng, exploration)
        K = thetas.reshape(n, self.action_dim, self.state_dim)
        ds, da = self.state_dim, self.action_dim
        x = rng.uniform(-self.x0_bound, self.x0_bound, size=(n, ds))
        states = np.empty((n, T, ds))
        actions = np.empty((n, T, da))
        means = np.empty((n, T, da))
        rewards = np.empty((n, T))
        ab = exploration == "action" and sigma > 0
        for t in range(T):
            mu = np.einsum("nas,ns->na", K, x)
            u = mu + sigma * rng.standard_normal((n, da)) if ab else mu
            states[:, t], means[:, t], actions[:, t] = x, mu, u
            rewards[:, t] = -(np.einsum("ns,st,nt->n", x, self.Q, x) + np.einsum("na,ab,nb->n", u, self.R, u))
            x = x @ self.A.T + u @ self.B.T
        return Rollouts(states=states, actions=actions, means=means, rewards=rewards, thetas=thetas)

    # ------------------------------------------------------------------ exact returns
    def exact_return(self, theta: np.ndarray, sigma: float = 0.0, exploration: str = "action", *,
                     horizon: int | None = -1, nodes: int | None = None) -> np.ndarray | float:
        """``J_D`` (σ = 0 or ``exploration="deterministic"``), ``J_A`` or ``J_P`` of θ ``[d_Θ]`` or ``[M, d_Θ]``.

        ``horizon=-1`` uses the environment's; ``None`` is the infinite-horizon value (γ < 1). ``nodes``: Gauss–
        Hermite nodes per dimension for ``J_P`` (default ``T + 1``, exact for finite T; 40 for infinite T)."""
        check_exploration(exploration, allow_deterministic=True)
        if not (math.isfinite(sigma) and sigma >= 0):
            raise PesError(f"sigma must be a finite number >= 0, got {sigma!r}")
        th = self.check_theta(theta)
        T = self.horizon if horizon == -1 else horizon
        if T is not None:
            T = check_horizon(T)
        single = th.ndim == 1
        th = th[None] if single else th
        if exploration == "deterministic" or sigma == 0:
            out = self._second_moment(th, 0.0, T)
        elif exploration == "action":
            out = self._second_moment(th, sigma, T)
        else:
            out = self._gauss_hermite(th, sigma, T, nodes)
        return float(out[0]) if single else out

    def _second_moment(self, th: np.ndarray, sigma: float, T: int | None) -> np.ndarray:
        """``J_A(K, σ)`` for a batch ``th [M, d_Θ]`` (σ = 0 gives ``J_D``)."""
        K = th.reshape(-1, self.action_dim, self.state_dim)
        M = self.A[None] + self.B[None] @ K                                   # [M, d_S, d_S]
        C = self.Q[None] + np.transpose(K, (0, 2, 1)) @ self.R[None] @ K       # [M, d_S, d_S]
        g = self.gamma
        trR = float(np.trace(self.R))
        BBt = self.B @ self.B.T
        if T is None:
            if g >= 1.0:
                raise PesError("an infinite-horizon return needs gamma < 1")
            from scipy.linalg import solve_discrete_lyapunov

            out = np.empty(K.shape[0])
            for i in range(K.shape[0]):
                rho = float(np.max(np.abs(np.linalg.eigvals(math.sqrt(g) * M[i]))))
                if rho >= 1.0:
                    raise PesError(f"the gain theta={th[i].tolist()} does not stabilise the discounted system "
                                   f"(spectral radius of sqrt(gamma)(A + BK) = {rho:.4g} >= 1): its "
                                   "infinite-horizon return is -inf")
                P = solve_discrete_lyapunov(math.sqrt(g) * M[i].T, C[i])
                out[i] = -(np.trace(P @ self.sigma0_matrix)
                           + sigma ** 2 * (np.trace(P @ BBt) * g / (1 - g) + trR / (1 - g)))
            return out
        S = np.repeat(self.sigma0_matrix[None], K.shape[0], axis=0)
        Mt = np.transpose(M, (0, 2, 1))
        total = np.zeros(K.shape[0])
        disc = 1.0
        for _ in range(T):
            total -= disc * (np.einsum("mij,mji->m", C, S) + sigma ** 2 * trR)
            S = M @ S @ Mt + sigma ** 2 * BBt
            disc *= g
        return total

    def _gauss_hermite(self, th: np.ndarray, sigma: float, T: int | None, nodes: int | None) -> np.ndarray:
        """``J_P(θ, σ) = E_{ε ~ N(0, I)} J_D(θ + σ ε)`` by a tensor Gauss–Hermite rule."""
        d = self.theta_dim
        n = nodes or (T + 1 if T is not None else 40)
        if n ** d > 2_000_000:
            raise PesError(f"Gauss-Hermite with {n} nodes in {d} dimensions is too large; pass nodes= smaller")
        x, w = np.polynomial.hermite_e.hermegauss(n)                          # weight exp(−x²/2)
        w = w / w.sum()
        grids = np.meshgrid(*([x] * d), indexing="ij")
        eps = np.stack([g.ravel() for g in grids], axis=-1)                   # [n^d, d]
        wts = np.prod(np.stack(np.meshgrid(*([w] * d), indexing="ij"), -1).reshape(-1, d), axis=-1)
        out = np.empty(th.shape[0])
        for i in range(th.shape[0]):
            vals = self._second_moment(th[i][None] + sigma * eps, 0.0, T)
            out[i] = float(wts @ vals)
        return out

    # ------------------------------------------------------------------ optimum
    def optimal_theta(self, *, finite_horizon: bool = False) -> np.ndarray:
        """The optimal linear gain as θ ``[d_Θ]``.

        Default: the infinite-horizon optimum of the *discounted* problem, ``P = DARE(√γ A, √γ B, Q, R)``,
        ``K* = −γ (R + γ BᵀPB)^{-1} BᵀPA``. ``finite_horizon=True``: the best stationary gain for this ``T``
        (L-BFGS on the exact ``J_D``, started from the DARE gain), so that ``J_D(K*) − J_D(θ) ≥ 0`` exactly."""
        key = ("opt", finite_horizon)
        if key in self._cache:
            return self._cache[key].copy()
        from scipy.linalg import solve_discrete_are

        g = self.gamma
        P = solve_discrete_are(math.sqrt(g) * self.A, math.sqrt(g) * self.B, self.Q, self.R)
        K = -g * np.linalg.solve(self.R + g * self.B.T @ P @ self.B, self.B.T @ P @ self.A)
        theta = K.ravel()
        if finite_horizon and self.horizon is not None:
            from scipy.optimize import minimize

            res = minimize(lambda t: -self.exact_return(t), theta, method="Nelder-Mead" if self.theta_dim == 1
                           else "BFGS", options={"xatol": 1e-10, "fatol": 1e-12} if self.theta_dim == 1 else
                           {"gtol": 1e-9})
            if -res.fun >= self.exact_return(theta):
                theta = np.asarray(res.x, dtype=np.float64)
        self._cache[key] = theta
        return theta.copy()

    def optimal_return(self) -> float:
        """``J_D(K*)`` for this horizon, with ``K*`` the best stationary gain (:meth:`optimal_theta`)."""
        return float(self.exact_return(self.optimal_theta(finite_horizon=True)))


class LQREnv:
    """The same LQR as a single ``gymnasium.Env`` (for ``gymnasium.vector`` and for users' own agents).

    Observation: ``x [d_S]``; action: ``u [d_A]``; reward ``−(xᵀQx + uᵀRu)``; truncated after ``horizon`` steps.
    Built lazily so that importing :mod:`pes.envs` does not import gymnasium.
    """

    def __new__(cls, lqr: LQR):
        import gymnasium as gym

        class _LQREnv(gym.Env):
            metadata: dict = {"render_modes": []}

            def __init__(self, lqr: LQR) -> None:
                self.lqr = lqr
                hi = np.full(lqr.state_dim, np.inf)
                self.observation_space = gym.spaces.Box(-hi, hi, dtype=np.float64)
                ha = np.full(lqr.action_dim, np.inf)
                self.action_space = gym.spaces.Box(-ha, ha, dtype=np.float64)
                self._x = np.zeros(lqr.state_dim)
                self._t = 0

            def reset(self, *, seed: int | None = None, options: dict | None = None):
                super().reset(seed=seed)
                b = self.lqr.x0_bound
                self._x = self.np_random.uniform(-b, b, size=self.lqr.state_dim)
                self._t = 0
                return self._x.copy(), {}

            def step(self, action):
                u = np.asarray(action, dtype=np.float64).reshape(self.lqr.action_dim)
                x = self._x
                r = -float(x @ self.lqr.Q @ x + u @ self.lqr.R @ u)
                self._x = self.lqr.A @ x + self.lqr.B @ u
                self._t += 1
                return self._x.copy(), r, False, self._t >= (self.lqr.horizon or 10 ** 9), {}

        return _LQREnv(lqr)


class GymTask:
    """A gymnasium environment (e.g. MuJoCo ``Swimmer-v5``) with a linear policy ``a = K s``, rolled out through
    ``gymnasium.vector.SyncVectorEnv`` with the same interface as :meth:`LQR.rollout` (no exact returns).

    The score uses the sampled, unclipped action; any clipping happens inside the environment (part of the
    dynamics, so the likelihood-ratio estimators stay unbiased for that objective).
    """

    def __init__(self, env_id: str = "Swimmer-v5", *, horizon: int = 200, gamma: float = 1.0, **kwargs: Any) -> None:
        self.env_id = env_id
        self.name = env_id
        self.horizon = check_horizon(horizon)
        self.gamma = check_gamma(gamma)
        self.kwargs = kwargs
        env = make_gym_env(env_id, **kwargs)
        import gymnasium as gym

        spaces = (env.observation_space, env.action_space)
        env.close()
        if not all(isinstance(sp, gym.spaces.Box) for sp in spaces):  # a = K s needs vectors in and out
            raise PesError(f"environment {env_id!r}: a linear policy a = K s needs continuous (Box) observation and "
                           f"action spaces, got {type(spaces[0]).__name__} observations and "
                           f"{type(spaces[1]).__name__} actions")
        self.state_dim = int(np.prod(spaces[0].shape))
        self.action_dim = int(np.prod(spaces[1].shape))
        self._vec: Any = None
        self._vec_n = 0

    @property
    def theta_dim(self) -> int:
        return self.state_dim * self.action_dim

    def check_theta(self, theta: Any) -> np.ndarray:
        th = np.asarray(theta, dtype=np.float64)
        if th.shape != (self.theta_dim,):
            raise PesError(f"theta must have {self.theta_dim} entries (d_A x d_S = {self.action_dim} x "
                           f"{self.state_dim}) for {self.env_id}, got shape {th.shape}")
        return th

    def _vector(self, n: int):
        if self._vec is None or self._vec_n != n:
            import gymnasium as gym

            if self._vec is not None:
                self._vec.close()
            self._vec = gym.vector.SyncVectorEnv([lambda: make_gym_env(self.env_id, **self.kwargs)] * n,
                                                 autoreset_mode=gym.vector.AutoresetMode.DISABLED)
            self._vec_n = n
        return self._vec

    def rollout(self, theta: np.ndarray, *, sigma: float, batch: int, rng: np.random.Generator,
                exploration: str = "action", horizon: int | None = None) -> Rollouts:
        check_exploration(exploration, allow_deterministic=True)
        theta = self.check_theta(theta)
        T = check_horizon(horizon if horizon is not None else self.horizon)
        n = check_horizon(batch, name="batch")
        thetas = sample_thetas(theta, sigma, n, rng, exploration)
        K = thetas.reshape(n, self.action_dim, self.state_dim)
        vec = self._vector(n)
        obs, _ = vec.reset(seed=[int(s) for s in rng.integers(0, 2 ** 31 - 1, size=n)])
        states = np.zeros((n, T, self.state_dim))
        actions = np.zeros((n, T, self.action_dim))
        means = np.zeros((n, T, self.action_dim))
        rewards = np.zeros((n, T))
        alive = np.ones(n, dtype=bool)
        ab = exploration == "action" and sigma > 0
        for t in range(T):
            x = np.asarray(obs, dtype=np.float64).reshape(n, -1)
            mu = np.einsum("nas,ns->na", K, x)
            u = mu + sigma * rng.standard_normal(mu.shape) if ab else mu
            states[:, t], means[:, t], actions[:, t] = x, mu, u
            obs, r, term, trunc, _ = vec.step(u.astype(np.float32) if vec.single_action_space.dtype == np.float32
                                              else u)
            rewards[:, t] = np.where(alive, r, 0.0)
            alive &= ~(np.asarray(term) | np.asarray(trunc))
            if not alive.any():
                break
        return Rollouts(states=states, actions=actions, means=means, rewards=rewards, thetas=thetas)

    def close(self) -> None:
        if self._vec is not None:
            self._vec.close()
            self._vec = None


def make_gym_env(env_id: str, **kwargs: Any):
    """``gymnasium.make(env_id)`` with a clear error when the id is unknown or MuJoCo is not installed."""
    import gymnasium as gym

    try:
        return gym.make(env_id, **kwargs)
    except gym.error.DependencyNotInstalled as exc:
        raise PesError(f"environment {env_id!r} needs MuJoCo: pip install 'pes[mujoco]' "
                       f"(gymnasium[mujoco]); {exc}") from exc
    except ImportError as exc:
        raise PesError(f"environment {env_id!r} needs MuJoCo: pip install 'pes[mujoco]' (gymnasium[mujoco]); "
                       f"{exc}") from exc
    except gym.error.Error as exc:
        raise PesError(f"unknown environment {env_id!r}: {exc}") from exc


def make_env(name: str, *, horizon: int | None = None, gamma: float | None = None) -> Any:
    """``"lqr"`` (the official s = 1, a = 2 generator), ``"lqr-scalar"``, ``"clipped"`` (the bounded-reward
    saturated regulator, :class:`pes.clipped.ClippedRegulator`), or a gymnasium id (e.g. Swimmer-v5)."""
    if name == "clipped":
        from pes.clipped import ClippedRegulator

        return ClippedRegulator(horizon=horizon or 20, gamma=0.99 if gamma is None else gamma)
    if name == "lqr":
        return LQR.official(horizon=horizon or 20, gamma=0.99 if gamma is None else gamma)
    if name == "lqr-scalar":
        return LQR.scalar(horizon=horizon or 20, gamma=0.99 if gamma is None else gamma)
    return GymTask(name, horizon=horizon or 200, gamma=1.0 if gamma is None else gamma)
