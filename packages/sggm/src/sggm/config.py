"""Configuration of sggm's ``reproduce``: one frozen dataclass, named presets, and the budgets.

The paper's Fig. 1 setting: regular vs power-law graphs of growing size with 50 node features. Everything except the
learned-score check is closed-form (exact Gaussian laws), so the seeds only change the random graphs (and the
Monte-Carlo noise and network initialisation of the learned score).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from icml25.errors import check_positive
from icml25.experiment import Budgets

from sggm.errors import SggmError


@dataclass(frozen=True)
class Config:
    """Sizes and knobs of the experiments of ``sggm reproduce``."""

    seeds: int = 5
    """Seeds (random graphs, Monte-Carlo noise, network initialisation)."""
    n_features: int = 50
    """F: node features (the paper's Fig. 1 uses 50)."""
    alpha: float = 1.0
    """α in the feature covariance Σ_A = (I + αL)⁻¹."""
    beta: float = 1.0
    """Constant β of the VP SDE of the features (β_min = β_max)."""
    T: float = 8.0
    """Diffusion length of the paradigm-1 sweeps."""
    n_steps: int = 100
    """N, Euler–Maruyama steps where N is not swept."""
    t_min: float = 1e-3
    """The reverse system stops at t_min."""
    mean_degree: int = 4
    """Regular degree d; the power-law graphs are Barabási–Albert with m = d/2 (equal mean degree)."""
    n_sweep: int = 50
    """n of the N- and T-sweeps."""
    n_grid: tuple[int, ...] = (10, 20, 50, 100, 200)
    """Graph sizes of the topology sweep."""
    N_grid: tuple[int, ...] = (25, 50, 100, 200, 400, 800, 1600, 3200)
    """Step counts of the N-sweep."""
    T_grid: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
    """Diffusion lengths of the T-sweep."""
    T_sweep_steps: int = 100
    """N of the T-sweep (fixed)."""
    fine_steps: int = 4000
    """'Very fine N' that isolates the score-error term."""
    score_error: float = 0.05
    """ε of the perturbed score Σ_t⁻¹ + εI."""
    joint_n: int = 10
    """n of the joint model (dense, D = nF + n(n-1)/2)."""
    joint_features: int = 4
    """F of the joint model."""
    couplings: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0)
    """Couplings c of the joint model."""
    joint_steps: int = 100
    """N of the joint model (T = 1, VP(0.1, 20) for X, VE(0.2, 10) for A)."""
    perf_n: int = 200
    """n of the eigenbasis-vs-dense timing."""
    large_n: int = 10_000
    """n of the spectrum-only paradigm-1 law (ring lattice, closed-form Laplacian spectrum)."""
    mc_chains: int = 2000
    """Monte-Carlo chains (each with F feature columns) of the exact-law check; the pool that the chain ladder splits."""
    mc_ladder: tuple[int, ...] = (125, 250, 500, 1000)
    """Chain counts M at which the Monte-Carlo KL's relative error is measured (disjoint batches of the pool)."""
    mc_tolerance: float = 0.01
    """Accuracy at which Monte Carlo is timed against the exact law: RMS relative error of the Monte-Carlo KL per
    entry (fixed before looking at any run)."""
    mc_timing_cap: int = 8000
    """Most chains of the directly timed Monte-Carlo run at the tolerance (beyond it the time is scaled linearly)."""
    mc_n: int = 20
    """n of the Monte-Carlo check."""
    learned_seeds: int = 5
    """Seeds of the learned-score check (at most ``seeds``)."""
    learned_n: int = 16
    """Nodes of the learned-score graphs."""
    learned_features: int = 4
    """F of the learned-score check."""
    learned_train: int = 2048
    """Training draws of the learned score."""
    learned_steps: int = 700
    """DSM steps of the learned score."""
    learned_chains: int = 512
    """Sampler chains of the learned-score check."""
    learned_N: tuple[int, int] = (20, 100)
    """Coarse and fine N of the learned-score check."""
    std_seeds: int = 5
    """Seeds of the standard-set experiment (at most ``seeds``; each trains 2 models on 3 sets, about 2.7 min per seed
    alone on 2 cores). 5: with 3, six gates whose models beat the Erdős–Rényi control on the mean (all plateaued)
    were inconclusive, e.g. community-small's joint orbit MMD 0.091 vs 0.294, lower on every seed, p = 0.053."""
    std_sets: tuple[str, ...] = ("community_small", "grid_small", "ego_small")
    """Standard synthetic sets of the trained joint model (GDSS's community-small, grid and ego-small, offline)."""
    std_train: int = 96
    """Training graphs per standard set (GDSS: 80 community-small, 80 grid, 160 ego-small)."""
    std_val: int = 32
    """Validation graphs per standard set (held-out DSM loss: learning rate and plateau)."""
    std_test: int = 64
    """Test graphs per standard set (the MMD reference)."""
    std_samples: int = 64
    """Generated graphs per model (and Erdős–Rényi graphs of the control)."""
    std_steps: int = 1500
    """DSM steps of the standard-set score models (700 left grid's generated graphs short of edges: 15.1 vs 17.8 per
    test graph, and its orbit MMD at the Erdős–Rényi control's)."""
    std_eval_every: int = 150
    """Validation DSM loss every this many steps (the plateau check of the gates)."""
    std_adj_powers: int = 3
    """Adjacency-power channels (A_t, A_t², A_t³) of the pair head of the standard-set score models (GDSS's)."""
    std_max_degree: int = 10
    """GDSS's degree one-hot node features, clipped at this degree (F = std_max_degree + 1)."""
    learned_lr_grid: tuple[float, ...] = (9e-3, 2.7e-2, 8.1e-2)
    """Adam learning rates tried for every learned score network (the same grid for each family), chosen by the
    DSM loss on a validation split (held-out draws / graphs of a validation graph seed); a choice at an edge of the
    grid extends it once by one more step in that direction."""
    learned_lr_extend: int = 1
    """How many times a learning-rate choice at an edge of the grid extends it by one more step."""
    learned_val: int = 512
    """Held-out draws (features net) of the validation split."""

    def __post_init__(self) -> None:
        check_positive(self, "seeds", "n_features", "n_steps", "mean_degree", "n_sweep", "T_sweep_steps",
                       "fine_steps", "joint_n", "joint_features", "joint_steps", "perf_n", "large_n", "mc_chains", "mc_n",
                       "learned_seeds", "learned_n", "learned_features", "learned_train", "learned_steps",
                       "learned_chains", "std_seeds", "std_train", "std_val", "std_test", "std_samples", "std_steps",
                       "std_eval_every", "std_max_degree", "std_adj_powers", "learned_val", "mc_timing_cap")
        check_positive(self, "alpha", "beta", "T", "t_min", integer=False)
        if self.score_error < 0:
            raise SggmError(f"score_error must be >= 0, got {self.score_error}")
        if not 0 < self.t_min < min(min(self.T_grid), self.T):
            raise SggmError(f"t_min must lie in (0, min(T, T_grid)), got {self.t_min}")
        if not 0 < self.mc_tolerance < 1:
            raise SggmError(f"mc_tolerance must lie in (0, 1), got {self.mc_tolerance}")
        if len(self.mc_ladder) < 2 or any(not 2 <= m <= self.mc_chains // 2 for m in self.mc_ladder):
            raise SggmError(f"mc_ladder needs at least 2 chain counts in [2, mc_chains / 2 = {self.mc_chains // 2}] "
                            f"(each measured on at least 2 disjoint batches), got {self.mc_ladder}")
        from sggm.datasets import STANDARD_SETS

        if not self.std_sets or any(d not in STANDARD_SETS for d in self.std_sets):
            raise SggmError(f"std_sets must be a non-empty subset of {list(STANDARD_SETS)}, got {self.std_sets}")
        if self.learned_lr_extend < 0:
            raise SggmError(f"learned_lr_extend must be >= 0, got {self.learned_lr_extend}")
        if not self.learned_lr_grid or any(not lr > 0 for lr in self.learned_lr_grid):
            raise SggmError(f"learned_lr_grid must hold learning rates > 0, got {self.learned_lr_grid}")
        for name in ("n_grid", "N_grid", "T_grid", "couplings"):
            if len(getattr(self, name)) < 2:
                raise SggmError(f"{name} needs at least 2 values, got {getattr(self, name)}")


def train_paper() -> dict[str, Any]:
    """``sggm train --preset paper``: the paper's synthetic study (sggm.md, "Paper's experiments": regular /
    power-law graphs, feature size fixed to 50, Fig. 1) at n = 50 nodes, the size of the note's worked KL numbers.
    The flags it changes (each documented on ``sggm.cli.TrainOptions``).

    Not in the note, so not set (the paper trains no network of its own: its theorems are about GDSS-style models):
    the score network's width and depth and the DSM schedule (steps, batch, lr) stay the CPU preset's."""
    return {"n": 50, "n_features": 50}


def train_cpu() -> dict[str, Any]:
    """``sggm train --preset cpu``, its default: the note's "optional learned-score check" (a small GCN score model
    trained by DSM on 16-node graphs): no overrides, the flags' own defaults. (The module's ``paper()`` / ``cpu()``
    are ``reproduce``'s budgets.)"""
    return {}


def paper() -> Config:
    """The paper's Fig. 1 scale where we can reach it (50 features, n up to 200); 5 seeds."""
    return Config()


def cpu() -> Config:
    """Quick settings: 3 seeds, a smaller Monte-Carlo ladder (its timing scaled linearly beyond 500 chains), learned
    scores trained far too briefly to leave their loss plateau (a pipeline check, not a measurement) at the full run's
    chosen learning rate (a 1-point grid: the tuning code runs, nothing is chosen)."""
    return replace(paper(), seeds=3, learned_seeds=3, learned_steps=80, mc_chains=500,
                   mc_ladder=(125, 250), mc_timing_cap=500, learned_chains=256,
                   learned_lr_grid=(2.7e-2,), learned_lr_extend=0, learned_val=256, std_steps=100, std_eval_every=50, std_seeds=2,
                   std_train=48, std_val=16, std_test=32, std_samples=32)


BUDGETS = Budgets(
    smoke=replace(cpu(), seeds=1, learned_seeds=1, n_grid=(10, 20), N_grid=(25, 50), T_grid=(1.0, 4.0),
                  n_sweep=20, perf_n=40, large_n=1000, mc_chains=64, mc_ladder=(8, 16, 32),
                  mc_timing_cap=64, mc_n=8, fine_steps=200, couplings=(0.0, 1.0), joint_n=6,
                  joint_features=2, joint_steps=20, learned_steps=5, learned_chains=16, learned_train=64,
                  learned_N=(5, 10), learned_lr_grid=(2e-3,), learned_val=16, std_sets=("community_small",), std_seeds=2,
                  std_train=8, std_val=4, std_test=8, std_samples=8, std_steps=4, std_eval_every=2),
    quick=cpu(),
    full=paper(),
)
