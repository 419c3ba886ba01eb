"""The GP virtual environment of EARL-BO (Cheon et al., ICML 2025, Sec. 3 / Algorithm 1).

BO is a finite-horizon MDP: the state is the data set ``D_t = {(x_i, y_i)}``, the action the next query
``x_{t+1}`` in the box, and the transition is simulated by a GP fitted to the real data ``D_k``:

    y_{t+1} ~ N(mu_t(x_{t+1}), k_t(x_{t+1}, x_{t+1})),     D_{t+1} = D_t ∪ {(x_{t+1}, y_{t+1})}

where ``mu_t, k_t`` is the posterior given ``D_t`` with the hyper-parameters of the fit to ``D_k`` held fixed. The
reward is the incumbent improvement ``r_t = max(y_{t+1} - max y(D_t), 0)``, on y standardised with D_k's statistics;
its one-step expectation is expected improvement and the H-step return telescopes to ``max y(D_{k+H}) - max y(D_k)``.

Everything here lives in the unit cube (``x`` normalised by the bounds) and on standardised y. Conditioning on an
imagined point is an incremental Cholesky update (``O(n^2)`` instead of a fresh ``O(n^3)`` factorisation)::

    K_{n+1} = [[K_n, k], [k^T, c]],   L_{n+1} = [[L_n, 0], [l^T, d]],   l = L_n^{-1} k,   d = sqrt(c - l^T l)
    w_{n+1} = [w_n ; (y - m - l^T w_n) / d]       (w = L^{-1} (y - m), so mu(x) = m + (L^{-1} k_x)^T w)

All episodes of a batch advance together: shapes carry a leading batch ``B`` of episodes. The environment's tensors
live on ``device`` (default: that of ``x``); its random draws come from a CPU generator and are moved there, so a
seed imagines the same episodes' noise on every device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from earl_bo.errors import EarlBoError

DTYPE = torch.float64


@dataclass(frozen=True)
class GPHyper:
    """Fixed hyper-parameters of a Matérn-5/2 ARD GP: ``k(x, x') = s2 (1 + √5 r + 5 r²/3) exp(-√5 r)``,
    ``r = ||(x - x') / lengthscale||``; constant mean, Gaussian noise variance."""

    lengthscale: torch.Tensor  # [d]
    outputscale: float
    mean: float
    noise: float

    def kernel(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """``k(a, b)``: ``a [..., n, d]``, ``b [..., m, d]`` -> ``[..., n, m]`` (float64)."""
        ls = self.lengthscale.to(a)
        diff = a.unsqueeze(-2) / ls - b.unsqueeze(-3) / ls  # [..., n, m, d]
        r = diff.pow(2).sum(-1).clamp_min(1e-30).sqrt()
        s5r = math.sqrt(5.0) * r
        return self.outputscale * (1.0 + s5r + s5r.pow(2) / 3.0) * torch.exp(-s5r)


def fit_gp(x: torch.Tensor, y: torch.Tensor, *, maxiter: int = 75):
    """Fit botorch's ``SingleTaskGP`` (Matérn-5/2 ARD with an output scale, float64) to ``x [n, d]`` in the unit cube
    and standardised ``y [n]`` by maximising the marginal likelihood (``fit_gpytorch_mll``, L-BFGS-B, at most
    ``maxiter`` iterations: the CPU budget).

    Returns ``(model, GPHyper)``; y is already standardised, so the model has no outcome transform.
    """
    import warnings

    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from gpytorch.kernels import MaternKernel, ScaleKernel
    from gpytorch.mlls import ExactMarginalLogLikelihood

    x = x.to(DTYPE)
    y = y.to(DTYPE)
    d = x.shape[-1]
    covar = ScaleKernel(MaternKernel(nu=2.5, ard_num_dims=d))
    model = SingleTaskGP(x, y.unsqueeze(-1), covar_module=covar, outcome_transform=None)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fit_gpytorch_mll(mll, optimizer_kwargs={"options": {"maxiter": maxiter}})
        except Exception:  # noqa: BLE001 - keep the prior's hyper-parameters when the optimiser fails
            pass
    model.eval()
    return model, hyper_of(model)


def hyper_of(model) -> GPHyper:
    """The fixed hyper-parameters of a fitted ``SingleTaskGP`` with a ``ScaleKernel(MaternKernel(nu=2.5))``."""
    covar = model.covar_module
    return GPHyper(
        lengthscale=covar.base_kernel.lengthscale.detach().reshape(-1).to(DTYPE).clone(),
        outputscale=float(covar.outputscale.detach()),
        mean=float(model.mean_module.constant.detach()),
        noise=float(model.likelihood.noise.detach().reshape(-1)[0]),
    )


class GPEnv:
    """The GP virtual environment: ``reset()`` returns ``D_k``, ``step(action)`` imagines one query per episode.

    Parameters
    ----------
    x, y : the real data ``D_k``: ``x [n, d]`` in the unit cube, ``y [n]`` standardised.
    hyper : the fixed GP hyper-parameters (from :func:`fit_gp`).
    horizon : H, imagined steps per episode.
    batch : B, episodes simulated together.
    jitter : added to the diagonal of ``K`` (near-duplicate imagined points stay factorisable).
    observation_noise : draw ``y`` from the noisy predictive (``+ noise``) instead of the latent one (default: latent,
        so the expected one-step reward is exactly analytic EI).
    seed : seeds the env's own generator (same seed, same episodes).
    device : where the state, the Cholesky factors and the draws live (default: the device of ``x``).
    """

    def __init__(self, x: torch.Tensor, y: torch.Tensor, hyper: GPHyper, *, horizon: int, batch: int = 1,
                 jitter: float = 1e-8, observation_noise: bool = False, seed: int = 0, device=None) -> None:
        x = torch.as_tensor(x, dtype=DTYPE)
        self.device = x.device if device is None else torch.device(device)
        x = x.to(self.device)
        y = torch.as_tensor(y, dtype=DTYPE, device=self.device).reshape(-1)
        if x.ndim != 2 or y.shape[0] != x.shape[0]:
            raise EarlBoError(f"GPEnv: x must be [n, d] and y [n], got {tuple(x.shape)} and {tuple(y.shape)}")
        if horizon < 1:
            raise EarlBoError(f"GPEnv: horizon must be >= 1, got {horizon}")
        self.x0, self.y0, self.hyper = x, y, hyper
        self.horizon, self.batch, self.jitter, self.observation_noise = horizon, batch, jitter, observation_noise
        self.n0, self.dim = x.shape
        self.gen = torch.Generator().manual_seed(int(seed))
        k0 = hyper.kernel(x, x) + (hyper.noise + jitter) * torch.eye(self.n0, dtype=DTYPE, device=self.device)
        self.L0 = torch.linalg.cholesky(k0)
        self.w0 = torch.linalg.solve_triangular(self.L0, (y - hyper.mean).unsqueeze(-1), upper=False).squeeze(-1)
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self, batch: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Start ``batch`` episodes from ``D_k``; returns ``(x [B, n, d], y [B, n])`` equal to the real data."""
        if batch is not None:
            self.batch = batch
        b, n, m = self.batch, self.n0, self.n0 + self.horizon
        self.t = 0
        self.x = torch.zeros(b, m, self.dim, dtype=DTYPE, device=self.device)
        self.y = torch.zeros(b, m, dtype=DTYPE, device=self.device)
        self.x[:, :n] = self.x0
        self.y[:, :n] = self.y0
        self.L = torch.zeros(b, m, m, dtype=DTYPE, device=self.device)
        self.L[:, :n, :n] = self.L0
        self.w = torch.zeros(b, m, dtype=DTYPE, device=self.device)
        self.w[:, :n] = self.w0
        self.best0 = float(self.y0.max())
        return self.state()

    @property
    def size(self) -> int:
        """Points in the current data sets ``n + t``."""
        return self.n0 + self.t

    def state(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Current data sets ``(x [B, n + t, d], y [B, n + t])``."""
        return self.x[:, :self.size].clone(), self.y[:, :self.size].clone()

    def incumbent(self) -> torch.Tensor:
        """``max y(D_t)`` per episode, ``[B]``."""
        return self.y[:, :self.size].max(-1).values

    # ------------------------------------------------------------------ posterior
    def _solve(self, kx: torch.Tensor) -> torch.Tensor:
        m = self.size
        return torch.linalg.solve_triangular(self.L[:, :m, :m], kx, upper=False)

    def posterior(self, xq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Latent posterior mean and variance at ``xq [B, q, d]`` given each episode's ``D_t``: ``[B, q]`` each."""
        xq = torch.as_tensor(xq, dtype=DTYPE, device=self.device)
        m = self.size
        kx = self.hyper.kernel(self.x[:, :m], xq)  # [B, m, q]
        v = self._solve(kx)  # [B, m, q]
        mu = self.hyper.mean + (v * self.w[:, :m].unsqueeze(-1)).sum(-2)
        var = (self.hyper.outputscale - v.pow(2).sum(-2)).clamp_min(1e-12)
        return mu, var

    def joint_posterior(self, xq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Latent posterior mean ``[B, q]`` and covariance ``[B, q, q]`` at ``xq [B, q, d]``."""
        xq = torch.as_tensor(xq, dtype=DTYPE, device=self.device)
        m = self.size
        v = self._solve(self.hyper.kernel(self.x[:, :m], xq))
        mu = self.hyper.mean + (v * self.w[:, :m].unsqueeze(-1)).sum(-2)
        cov = self.hyper.kernel(xq, xq) - v.transpose(-1, -2) @ v
        return mu, cov

    def thompson(self, candidates: torch.Tensor) -> torch.Tensor:
        """Thompson sampling: one joint posterior draw per episode over ``candidates [B, C, d]``; returns the argmax
        candidate of each draw, ``[B, d]`` (the acquisition of TuRBO, as botorch's ``MaxPosteriorSampling``)."""
        mu, cov = self.joint_posterior(candidates)
        c = cov.shape[-1]
        eye = torch.eye(c, dtype=DTYPE, device=self.device)
        for jit in (1e-8, 1e-6, 1e-4, 1e-2):
            lc, info = torch.linalg.cholesky_ex(cov + jit * eye)
            if int(info.max()) == 0:
                break
        z = torch.randn(mu.shape, generator=self.gen, dtype=DTYPE).to(self.device)
        f = mu + (lc @ z.unsqueeze(-1)).squeeze(-1)
        idx = f.argmax(-1)
        return candidates[torch.arange(candidates.shape[0], device=idx.device), idx]

    # ------------------------------------------------------------------ transition
    def condition(self, xn: torch.Tensor, yn: torch.Tensor) -> None:
        """Add ``(xn [B, d], yn [B])`` to every episode's data set by the incremental Cholesky update."""
        m = self.size
        if m >= self.n0 + self.horizon:
            raise EarlBoError(f"GPEnv: the episode has ended after horizon={self.horizon} steps; call reset()")
        xn = torch.as_tensor(xn, dtype=DTYPE, device=self.device)
        yn = torch.as_tensor(yn, dtype=DTYPE, device=self.device)
        k = self.hyper.kernel(self.x[:, :m], xn.unsqueeze(1)).squeeze(-1)  # [B, m]
        l_row = self._solve(k.unsqueeze(-1)).squeeze(-1)  # [B, m]
        c = self.hyper.outputscale + self.hyper.noise + self.jitter
        d = (c - l_row.pow(2).sum(-1)).clamp_min(1e-12).sqrt()  # [B]
        self.L[:, m, :m] = l_row
        self.L[:, m, m] = d
        self.w[:, m] = (yn - self.hyper.mean - (l_row * self.w[:, :m]).sum(-1)) / d
        self.x[:, m] = xn
        self.y[:, m] = yn
        self.t += 1

    def step(self, action: torch.Tensor) -> tuple[tuple[torch.Tensor, torch.Tensor], torch.Tensor, bool]:
        """Imagine the query ``action [B, d]`` (unit cube): draw ``y ~ N(mu_t, var_t)``, reward
        ``max(y - max y(D_t), 0)``, condition. Returns ``(state, reward [B], done)``."""
        a = torch.as_tensor(action, dtype=DTYPE, device=self.device).reshape(self.batch, self.dim)
        if not bool(((a >= 0) & (a <= 1)).all()):
            raise EarlBoError("GPEnv.step: actions must lie in the unit cube [0, 1]^d")
        mu, var = self.posterior(a.unsqueeze(1))
        var = var.squeeze(-1) + (self.hyper.noise if self.observation_noise else 0.0)
        y = mu.squeeze(-1) + var.sqrt() * torch.randn(self.batch, generator=self.gen, dtype=DTYPE).to(self.device)
        reward = (y - self.incumbent()).clamp_min(0.0)
        self.condition(a, y)
        return self.state(), reward, self.t >= self.horizon
