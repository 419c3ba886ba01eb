"""Configuration of sold: one frozen dataclass per concern, named presets, and the reproduce budgets.

The CLI is generated from these dataclasses (tyro); the field docstrings are the help text.
REPLACE the example fields with the method's own (keep the presets and the budgets).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from icml25.errors import check_non_negative, check_positive
from icml25.experiment import Budgets


@dataclass(frozen=True)
class Config:
    """Example method (ridge regression on data with a known ground truth)."""

    n: int = 400
    """Training examples."""
    dim: int = 8
    """Input dimension."""
    noise: float = 0.1
    """Noise standard deviation of the targets."""
    ridge: float = 1e-3
    """Ridge penalty lambda of the closed form w = (X^T X + lambda I)^-1 X^T y."""
    seeds: int = 5
    """Seeds of a reproduce run."""

    def __post_init__(self) -> None:
        check_positive(self, "n", "dim", "seeds")
        check_non_negative(self, "noise", "ridge")


def paper() -> Config:
    """The paper's settings."""
    return Config()


def cpu() -> Config:
    """Our CPU-scale settings."""
    return replace(paper(), n=200)


BUDGETS = Budgets(smoke=replace(cpu(), n=50, seeds=1), quick=replace(cpu(), seeds=3), full=replace(paper(), seeds=5))
