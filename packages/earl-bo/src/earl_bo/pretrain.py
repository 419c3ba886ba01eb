"""Multi-task pre-training of the EARL-BO agent over a distribution of GP-sampled functions (Cheon et al., ICML 2025:
"a multi-task, fine-tuning procedure based on end-to-end (encoder-RL) on-policy learning"; the paper's task
distribution is not available, this is this package's choice).

A task is a function drawn from a Matérn-5/2 GP prior with random lengthscales, made evaluable everywhere by random
Fourier features (Rahimi & Recht, 2007)::

    f(x) = sqrt(2 / M) sum_j a_j cos(w_j . (x / l) + b_j),   a_j ~ N(0, 1),  b_j ~ U[0, 2 pi),
    w_j = z_j sqrt(2 nu / g_j),  z_j ~ N(0, I_d),  g_j ~ chi2(2 nu),  nu = 5/2        (w: Student-t, 2 nu dof)

so that ``E[f(x) f(x')] -> k_Matern52(||(x - x') / l||)`` as ``M`` grows (the Matérn spectral density is a
multivariate t). Each training round draws a task and a *BO-like* data set on it (a uniform design plus points
sampled near the incumbent, of random size), builds the GP virtual environment with the task's own hyper-parameters
and runs Algorithm 1's inner loop (:meth:`earl_bo.earl.EARLBO.train_on`) on it.

Validation (:func:`policy_regret`): the agent's mean policy alone (no GP fit, no fine-tuning) runs BO for
``queries`` steps on held-out GP-sampled functions; the score is the normalised simple regret
``(f* - best) / (f* - mean f)`` averaged over the functions (``f*``: the best of 4096 Sobol points refined by
gradient ascent). :func:`pretrain_until_plateau` trains round by round until this score stops improving
(:func:`icml25.train.train_until_plateau`) and keeps the best weights (early stopping).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch

from earl_bo.gp_env import DTYPE, GPHyper

NU = 2.5


class GPFunction:
    """A function drawn from a Matérn-5/2 GP prior (unit output scale) on the unit cube, by ``features`` random
    Fourier features; ``f(x [..., d]) -> [...]`` (float64, differentiable)."""

    def __init__(self, dim: int, *, lengthscale: torch.Tensor, features: int = 512, generator: torch.Generator):
        self.dim = int(dim)
        self.lengthscale = torch.as_tensor(lengthscale, dtype=DTYPE).reshape(dim)
        z = torch.randn(features, dim, generator=generator, dtype=DTYPE)
        g = torch.randn(features, int(2 * NU), generator=generator, dtype=DTYPE).pow(2).sum(-1)  # chi2(2 nu)
        self.omega = z * torch.sqrt(2 * NU / g).unsqueeze(-1)  # [M, d]
        self.phase = torch.rand(features, generator=generator, dtype=DTYPE) * 2 * math.pi  # [M]
        self.weight = torch.randn(features, generator=generator, dtype=DTYPE) * math.sqrt(2.0 / features)  # [M]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        feats = torch.cos((x.to(DTYPE) / self.lengthscale) @ self.omega.T + self.phase)  # [..., M]
        return feats @ self.weight

    def reference_max(self, *, points: int = 4096, refine: int = 8, steps: int = 150, seed: int = 0) -> float:
        """The best of ``points`` Sobol points, the top ``refine`` of them improved by projected gradient ascent."""
        from torch.quasirandom import SobolEngine

        x = SobolEngine(self.dim, scramble=True, seed=seed).draw(points).to(DTYPE)
        with torch.no_grad():
            v = self(x)
        top = x[v.topk(min(refine, points)).indices].clone().requires_grad_(True)
        opt = torch.optim.Adam([top], lr=0.01)
        for _ in range(steps):
            opt.zero_grad()
            (-self(top).sum()).backward()
            opt.step()
            with torch.no_grad():
                top.clamp_(0.0, 1.0)
        with torch.no_grad():
            return max(float(v.max()), float(self(top).max()))


def sample_lengthscale(dim: int, generator: torch.Generator) -> torch.Tensor:
    """Lengthscales log-uniform in [0.1, 1] x sqrt(d) per dimension (unit cube)."""
    return torch.exp(torch.empty(dim, dtype=DTYPE).uniform_(math.log(0.1), 0.0, generator=generator)) * math.sqrt(dim)


def sample_task(dim: int, *, n_init: int, n_max: int, generator: torch.Generator
                ) -> tuple[torch.Tensor, torch.Tensor, GPHyper, float]:
    """One pre-training task: a GP-sampled function and a BO-like data set on it.

    ``n_init`` uniform points, then between 0 and ``n_max - n_init`` points, each with probability 1/2 uniform and
    otherwise ``incumbent + N(0, s^2 I)`` clipped to the cube (``s`` log-uniform in [0.02, 0.3] per task), so the
    states resemble those of a real BO run. Returns ``(x [n, d], y standardised [n], hyper, turbo_length)`` with
    the task's own GP hyper-parameters (in standardised units) and a random TuRBO side for the imagined TuRBO stage.
    """
    f = GPFunction(dim, lengthscale=sample_lengthscale(dim, generator), generator=generator)
    n = int(torch.randint(n_init, n_max + 1, (1,), generator=generator))
    x = torch.rand(n_init, dim, generator=generator, dtype=DTYPE)
    y = f(x)
    s = math.exp(float(torch.empty(1).uniform_(math.log(0.02), math.log(0.3), generator=generator)))
    while x.shape[0] < n:
        if float(torch.rand(1, generator=generator)) < 0.5:
            xn = torch.rand(1, dim, generator=generator, dtype=DTYPE)
        else:
            xn = (x[y.argmax()] + s * torch.randn(dim, generator=generator, dtype=DTYPE)).clamp(0, 1).unsqueeze(0)
        x = torch.cat([x, xn])
        y = torch.cat([y, f(xn)])
    m, sd = float(y.mean()), float(y.std()) if n > 1 else 1.0
    sd = sd if sd > 1e-12 else 1.0
    hyper = GPHyper(lengthscale=f.lengthscale, outputscale=1.0 / sd**2, mean=-m / sd, noise=1e-4 / sd**2)
    length = 0.8 * 2.0 ** float(torch.randint(-4, 2, (1,), generator=generator))
    return x, (y - m) / sd, hyper, length


@dataclass
class ValidationSet:
    """Held-out GP-sampled functions with their Sobol initial designs and reference maxima."""

    functions: list[GPFunction]
    designs: list[torch.Tensor]  # [n_init, d] each
    reference: list[float]  # f* of each function
    mean: list[float]  # mean of f over 4096 Sobol points (the regret's scale: f* - mean f)

    @classmethod
    def make(cls, dim: int, *, tasks: int, n_init: int, seed: int) -> ValidationSet:
        from torch.quasirandom import SobolEngine

        gen = torch.Generator().manual_seed(int(seed))
        fs, designs, ref, mean = [], [], [], []
        for i in range(tasks):
            f = GPFunction(dim, lengthscale=sample_lengthscale(dim, gen), generator=gen)
            fs.append(f)
            designs.append(SobolEngine(dim, scramble=True, seed=int(seed) + i).draw(n_init).to(DTYPE))
            ref.append(f.reference_max(seed=int(seed) + i))
            with torch.no_grad():
                mean.append(float(f(SobolEngine(dim, scramble=True, seed=int(seed) + 7 * i + 1).draw(4096)
                                    .to(DTYPE)).mean()))
        return cls(functions=fs, designs=designs, reference=ref, mean=mean)


def policy_regret(suggest, val: ValidationSet, *, queries: int) -> float:
    """Mean normalised simple regret ``(f* - best) / (f* - mean f)`` after ``queries`` queries of
    ``suggest(x [n, d], y [n]) -> x_next [d]`` (unit cube, maximisation) on each validation function."""
    out = []
    for f, x0, ref, mean in zip(val.functions, val.designs, val.reference, val.mean):
        x = x0.clone()
        with torch.no_grad():
            y = f(x)
            for _ in range(queries):
                xn = torch.as_tensor(suggest(x, y), dtype=DTYPE).reshape(1, -1).clamp(0, 1)
                x = torch.cat([x, xn])
                y = torch.cat([y, f(xn)])
        out.append((ref - float(y.max())) / max(ref - mean, 1e-12))
    return float(sum(out) / len(out))


def agent_policy(agent):
    """The agent's deterministic query on standardised data: ``suggest(x, y) -> x_next`` for :func:`policy_regret`."""
    from earl_bo.earl import standardise

    def suggest(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return agent.policy_mean(x, standardise(y)[0])

    return suggest


def sobol_policy(dim: int, seed: int = 0):
    """The Sobol control of :func:`policy_regret` (the same sequence on every function)."""
    from torch.quasirandom import SobolEngine

    state = {}

    def suggest(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if "e" not in state or x.shape[0] <= state["n0"]:
            state["e"], state["n0"] = SobolEngine(dim, scramble=True, seed=seed + 7919), x.shape[0]
        return state["e"].draw(1).to(DTYPE)[0]

    return suggest


def pretrain_until_plateau(agent, *, rounds: int, eval_every: int, patience: int = 3, min_delta: float = 0.0,
                           val_tasks: int = 8, val_queries: int = 20, n_max: int | None = None,
                           val_seed: int = 123_457, on_eval=None):
    """Pre-train ``agent`` (:class:`earl_bo.earl.EARLBO`) on GP-sampled tasks, one task per round, until the
    validation regret (:func:`policy_regret`, lower is better) has not improved for ``patience`` evaluations or
    ``rounds`` run out; the agent keeps the weights of its best evaluation. Returns the :class:`icml25.train.Curve`
    (x: training rounds; the untrained agent's score is its first point)."""
    from icml25.train import train_until_plateau

    if agent.agent is None:
        agent._new_agent()
    d = agent.dim
    n_init = max(4, d)
    n_max = n_max or n_init + val_queries
    val = ValidationSet.make(d, tasks=val_tasks, n_init=n_init, seed=val_seed)
    policy = agent_policy(agent)
    best = {}

    def step(i: int) -> None:
        x, y, hyper, length = sample_task(d, n_init=n_init, n_max=n_max, generator=agent.gen)
        agent.train_on(x, y, hyper, turbo_length=length)

    def evaluate() -> float:
        v = policy_regret(policy, val, queries=val_queries)
        if on_eval is not None:
            on_eval(v)
        return v

    def keep(at: int, v: float) -> None:
        best["state"] = copy.deepcopy(agent.agent.state_dict())
        best["opt"] = copy.deepcopy(agent.opt.state_dict())

    curve = train_until_plateau(step, evaluate, max_steps=rounds, eval_every=eval_every, patience=patience,
                                min_delta=min_delta, higher_is_better=False, on_improve=keep, evaluate_first=True)
    agent.agent.load_state_dict(best["state"])
    agent.opt.load_state_dict(best["opt"])
    agent.pretrained = True
    return curve
