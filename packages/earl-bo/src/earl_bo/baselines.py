"""Baselines run side by side with EARL-BO, each a ``Strategy`` with ``suggest(x_unit [n, d], y [n]) -> x_unit [d]``
(unit cube, maximisation, float64):

* ``sobol``: the next point of a scrambled Sobol sequence (random search);
* ``centre``: the box centre first, then Gaussian steps (std ``sigma`` per unit-cube side) around the incumbent: a
  trivial local search that shows how much a method gains from a bias towards the centre of the box (where
  Ackley's optimum lies when the box is not shifted);
* ``logei``: analytic LogEI (Ament et al., 2023) maximised by ``botorch.optim.optimize_acqf``;
* ``turbo``: TuRBO-1 (Eriksson et al., 2019) with botorch's ``MaxPosteriorSampling`` over trust-region candidates;
* ``msl``: botorch's 2-step ``qMultiStepLookahead`` (Jiang et al., 2020) with EI at both stages (one fantasy
  stage with ``num_fantasies`` samples), the one-shot optimisation of the whole tree with ``optimize_acqf``.

All model-based baselines fit the same GP as EARL-BO (:func:`earl_bo.gp_env.fit_gp`: Matérn-5/2 ARD on the unit cube,
y standardised).
"""

from __future__ import annotations

import warnings

import torch

from earl_bo.gp_env import DTYPE, fit_gp
from earl_bo.turbo import TurboState, candidates


def incumbent_best_f(model, X) -> dict:
    """``best_f`` of a (fantasy) model's own training targets, shaped ``batch x 1`` to broadcast against the
    analytic EI's ``batch x m`` posterior mean (botorch's ``make_best_f`` returns ``batch`` and fails to broadcast)."""
    return {"best_f": model.train_targets.max(dim=-1).values.unsqueeze(-1)}


def _std(y: torch.Tensor) -> torch.Tensor:
    s = y.std()
    return (y - y.mean()) / (s if float(s) > 1e-12 else 1.0)


class Sobol:
    """Random search along a scrambled Sobol sequence."""

    def __init__(self, dim: int, *, seed: int = 0) -> None:
        from torch.quasirandom import SobolEngine

        self.engine = SobolEngine(dim, scramble=True, seed=seed + 7919)

    def suggest(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.engine.draw(1).to(DTYPE)[0]


class Centre:
    """The box centre, then ``incumbent + N(0, sigma^2 I)`` clipped to the unit cube (no model)."""

    def __init__(self, dim: int, *, seed: int = 0, sigma: float = 0.1) -> None:
        if not sigma > 0:
            raise ValueError(f"sigma must be > 0, got {sigma}")
        self.dim, self.sigma = dim, float(sigma)
        self.gen = torch.Generator().manual_seed(seed + 15485863)
        self._first = True

    def suggest(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self._first:
            self._first = False
            return torch.full((self.dim,), 0.5, dtype=DTYPE)
        step = self.sigma * torch.randn(self.dim, generator=self.gen, dtype=DTYPE)
        return (x[y.argmax()] + step).clamp(0, 1)


class LogEI:
    """Analytic LogEI on the fitted GP, maximised with restarts."""

    def __init__(self, dim: int, *, seed: int = 0, num_restarts: int = 4, raw_samples: int = 128) -> None:
        self.dim, self.seed, self.num_restarts, self.raw_samples = dim, seed, num_restarts, raw_samples

    def suggest(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        from botorch.acquisition import LogExpectedImprovement
        from botorch.optim import optimize_acqf

        ys = _std(y)
        model, _ = fit_gp(x, ys)
        acq = LogExpectedImprovement(model, best_f=ys.max())
        bounds = torch.stack([torch.zeros(self.dim), torch.ones(self.dim)]).to(DTYPE)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cand, _ = optimize_acqf(acq, bounds, q=1, num_restarts=self.num_restarts, raw_samples=self.raw_samples,
                                    options={"seed": self.seed + len(y)})
        return cand[0].detach()


class Turbo:
    """TuRBO-1: a trust region around the incumbent, Thompson sampling with ``MaxPosteriorSampling``; the region
    starts (and restarts) with side ``length_init`` (botorch tutorial: 0.8)."""

    def __init__(self, dim: int, *, seed: int = 0, n_candidates: int | None = None, length_init: float = 0.8) -> None:
        if not 0 < length_init <= TurboState(dim=dim).length_max:
            raise ValueError(f"length_init must be in (0, 1.6], got {length_init}")
        self.dim, self.length_init = dim, float(length_init)
        self.state = TurboState(dim=dim, length=self.length_init)
        self.gen = torch.Generator().manual_seed(seed + 104729)
        self.n_candidates = n_candidates or min(1000, 100 * dim)
        self._seen = 0

    def suggest(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        from botorch.generation import MaxPosteriorSampling

        if self._seen == 0:
            self.state.best_value = float(y.max())
        else:
            for v in y[self._seen:]:
                self.state.update(float(v))
            if self.state.restart:  # restart the region (the data are kept; TuRBO-1 would also restart the design)
                self.state = TurboState(dim=self.dim, length=self.length_init, best_value=float(y.max()))
        self._seen = len(y)
        ys = _std(y)
        model, hyper = fit_gp(x, ys)
        centre = x[ys.argmax()].unsqueeze(0)
        cand = candidates(centre, hyper.lengthscale, self.state.length, n=self.n_candidates, generator=self.gen)[0]
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=self.gen)))
            nxt = MaxPosteriorSampling(model=model, replacement=False)(cand, num_samples=1)
        return nxt[0].detach()


class MultiStepLookahead:
    """botorch's 2-step ``qMultiStepLookahead``: EI now plus the expected EI after one fantasised observation."""

    def __init__(self, dim: int, *, seed: int = 0, num_fantasies: int = 4, num_restarts: int = 2,
                 raw_samples: int = 64, maxiter: int = 25) -> None:
        self.dim, self.seed = dim, seed
        self.num_fantasies, self.num_restarts, self.raw_samples, self.maxiter = (
            num_fantasies, num_restarts, raw_samples, maxiter)

    def suggest(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        from botorch.acquisition import ExpectedImprovement
        from botorch.acquisition.multi_step_lookahead import qMultiStepLookahead
        from botorch.optim import optimize_acqf

        ys = _std(y)
        model, _ = fit_gp(x, ys)
        acq = qMultiStepLookahead(model=model, batch_sizes=[1], num_fantasies=[self.num_fantasies],
                                  valfunc_cls=[ExpectedImprovement, ExpectedImprovement],
                                  valfunc_argfacs=[incumbent_best_f, incumbent_best_f])
        q = acq.get_augmented_q_batch_size(1)
        bounds = torch.stack([torch.zeros(self.dim), torch.ones(self.dim)]).to(DTYPE)
        with warnings.catch_warnings(), torch.random.fork_rng(devices=[]):
            warnings.simplefilter("ignore")
            torch.manual_seed(self.seed + len(y))
            cand, _ = optimize_acqf(acq, bounds, q=q, num_restarts=self.num_restarts, raw_samples=self.raw_samples,
                                    options={"maxiter": self.maxiter})
        return cand.reshape(-1, self.dim)[0].detach()  # the first point of the augmented batch: the query now
