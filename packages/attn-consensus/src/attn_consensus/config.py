"""Configuration of attn-consensus: the reproduce settings (one frozen dataclass), presets and the budgets.

The paper gives no numbers for its ODE simulations (no code either) and runs GPT-2-XL / GPT-Neo-2.7B for up to 1000
passes; everything here is our CPU-scale choice (README, "Scale").
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from icml25.errors import check_positive
from icml25.experiment import Budgets


@dataclass(frozen=True)
class Config:
    """Settings of ``attn-consensus reproduce``: the ODE scenarios, the GPT-2 consensus loop and the timings."""

    seeds: int = 5
    """Seeds: each draws its own Q, K, V, initial tokens, GPT-2 weights and prompts."""
    n: int = 32
    """Tokens per ODE simulation."""
    dims: tuple[int, ...] = (3, 16, 64)
    """Token dimensions d of the ODE simulations."""
    scales: tuple[float, ...] = (0.5, 2.0, 5.0)
    """Spectral norms of the random Q and K (the largest is the hard, metastable regime)."""
    dt: float = 0.025
    """RK4 step."""
    horizon: float = 50.0
    """Integration time T of the ODE simulations."""
    layers: int = 8
    """Layers of the piecewise-constant Q(t), K(t) in the time-varying scenarios (each lasts layer_time)."""
    layer_time: float = 1.0
    """Duration of one layer of the time-varying scenarios."""
    sim_dtype: Literal["float32", "float64"] = "float32"
    """Precision of the reproduce simulations (tests use float64; diagnostics are always float64)."""
    consensus_tol: float = 1e-3
    """A run has reached consensus when its geodesic diameter at T is below this (radians)."""
    gap_tol: float = 1e-6
    """The causal claim: the diagnostic 1 − mean_j cos(x_1, x_j) at T must be below this."""
    min_rate: float = 0.1
    """The causal-antipodal claim: the fitted exponential decay rate of the diagnostic must be at least this."""
    gpt_n_layer: int = 6
    """Blocks of the tiny GPT-2."""
    gpt_n_embd: int = 128
    """Width of the tiny GPT-2 (the pace of the random-init contraction grows with it)."""
    gpt_n_head: int = 4
    """Heads of the tiny GPT-2."""
    gpt_vocab: int = 512
    """Vocabulary of the random-init GPT-2 (the trained one uses the tiny-LM character vocabulary)."""
    gpt_batch: int = 8
    """Random prompts per seed."""
    gpt_length: int = 32
    """Tokens per prompt."""
    gpt_passes: int = 300
    """Consensus iterations (passes over the block stack, ln_f between them; the official default is 1000)."""
    train_steps: int = 60
    """AdamW steps of the 'trained weights' GPT-2 on the tiny-LM tasks (add, reverse, sort)."""
    train_batch: int = 32
    """Batch size of that training."""
    bench_batch: int = 256
    """Simulations of the batched-vs-loop timing."""
    bench_steps: int = 10
    """RK4 steps of the batched-vs-loop timing."""
    bench_passes: int = 40
    """Passes of the loop-overhead timing."""
    bench_repeats: int = 3
    """Repeats of the batched-vs-loop timing."""
    bench_rounds: int = 10
    """Interleaved rounds (plain passes, then the loop, the order alternating) of the loop-overhead timing."""
    bench_inner: int = 3
    """Timings per path within one round of the loop-overhead timing (the round's ratio uses their minima)."""

    def __post_init__(self) -> None:
        check_positive(self, "dt", "horizon", "layer_time", "consensus_tol", "gap_tol", "min_rate", integer=False)
        check_positive(self, "seeds", "n", "layers", "gpt_n_layer", "gpt_n_embd", "gpt_n_head", "gpt_vocab", "gpt_batch", "gpt_length",
                       "gpt_passes", "train_steps", "train_batch", "bench_batch", "bench_steps", "bench_passes",
                       "bench_repeats", "bench_rounds", "bench_inner")
        if not self.dims or min(self.dims) < 2:
            raise ValueError(f"dims must be non-empty with every d >= 2, got {self.dims}")
        if not self.scales or min(self.scales) < 0:
            raise ValueError(f"scales must be non-empty and >= 0, got {self.scales}")
        if self.gpt_n_embd % self.gpt_n_head:
            raise ValueError(f"gpt_n_embd ({self.gpt_n_embd}) must be divisible by gpt_n_head ({self.gpt_n_head})")
        if self.horizon < self.dt:
            raise ValueError(f"horizon ({self.horizon}) must be >= dt ({self.dt})")

    @property
    def steps(self) -> int:
        return int(round(self.horizon / self.dt))


@dataclass(frozen=True)
class Gpt2Preset:
    """The options of ``attn-consensus gpt2`` a preset fixes (``gpt2 --preset paper|cpu``)."""

    model: str = "tiny"
    """'tiny', 'tiny-trained', or a local path / hub id."""
    iterations: int = 100
    """Consensus iterations."""
    batch: int = 8
    """Random prompts."""
    length: int = 32
    """Tokens per prompt."""
    seed: int = 0
    """Seed."""

    @classmethod
    def paper(cls) -> Gpt2Preset:
        """The official script's GPT-2 run (attn-consensus.md, "Paper's experiments and numbers" and the audit of the
        released code): GPT-2-XL (``gpt2-xl`` from the hub: needs the network or a local copy; ``--model`` takes a
        GPT-Neo-2.7B folder too), 1000 consensus iterations, seed 42, on 5 random prompts of 50 tokens (a README
        example; nothing records the figures' prompts).

        Not expressible: fp16 (the loop runs in the model's dtype)."""
        return cls(model="gpt2-xl", iterations=1000, batch=5, length=50, seed=42)

    @classmethod
    def cpu(cls) -> Gpt2Preset:
        """What ``gpt2`` uses by default: a tiny random-init GPT-2, 100 iterations, 8 prompts of 32 tokens."""
        return cls()


def paper() -> Config:
    """The note's CPU plan at full size (the paper itself publishes no simulation settings)."""
    return Config()


def cpu() -> Config:
    """Our CPU-scale settings (= the full reproduce budget)."""
    return paper()


BUDGETS = Budgets(
    smoke=replace(cpu(), seeds=1, n=6, dims=(3,), scales=(1.0,), horizon=1.0, dt=0.05, gpt_n_layer=2, gpt_n_embd=32,
                  gpt_batch=2, gpt_length=8, gpt_passes=3, train_steps=2, train_batch=8, bench_batch=8,
                  bench_steps=2, bench_passes=2, bench_repeats=1, bench_rounds=2, bench_inner=1),
    quick=replace(cpu(), seeds=3, dims=(3, 16), horizon=15.0, gpt_n_layer=4, gpt_batch=4, gpt_passes=80,
                  train_steps=20, bench_batch=128, bench_passes=20, bench_repeats=2, bench_rounds=6, bench_inner=2),
    full=replace(cpu(), seeds=8),
)
