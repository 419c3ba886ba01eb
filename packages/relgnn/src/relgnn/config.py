"""Budgets of ``relgnn reproduce``: one frozen :class:`Config` per budget (smoke / quick / full).

The full budget is sized so that every task's test split has >= 1,000 rows, every model (RelGNN, GraphSAGE) is
tuned alike on the same 8-point grid (lr × depth × channels) on the validation split, and the chosen settings run on
5 model seeds — all in under 8 minutes on 2 CPU cores (two worker processes, one torch thread each).
"""

from __future__ import annotations

from dataclasses import dataclass

from icml25.experiment import Budgets


@dataclass(frozen=True)
class Config:
    """One budget of the side-by-side reproduction on the synthetic relational database."""

    seeds: int = 5
    """Model seeds (the database is generated once from the base seed)."""
    num_users: int = 2000
    """Synthetic database: users (test split >= 1,000 rows per task at 2,000)."""
    num_items: int = 150
    """Synthetic database: items."""
    num_windows: int = 12
    """Synthetic database: 30-day windows (val at window W-5, test at W-3, two seed times each)."""
    tasks: tuple[str, ...] = ("user-churn", "user-ltv", "user-item-purchase", "post-reply")
    """Tasks run (the first three have bridge-dependent labels; post-reply is the self-FK control)."""
    models: tuple[str, ...] = ("relgnn", "sage")
    """GNNs compared (see :data:`relgnn.model.GNN_KINDS`)."""
    lr_grid: tuple[float, ...] = (3e-3, 1e-2)
    """Adam learning rates tried for every GNN."""
    depth_grid: tuple[int, ...] = (1, 2)
    """Message-passing layers tried for every GNN."""
    channels_grid: tuple[int, ...] = (16, 32)
    """Hidden widths tried for every GNN."""
    num_heads: int = 2
    """RelGNN attention heads."""
    epochs: int = 5
    """Training epochs."""
    batch_size: int = 256
    """Seed rows per mini-batch."""
    max_train_rows: int = 3584
    """Training seed rows kept (a random subset, the same for every model): 14 steps per epoch at batch 256."""
    num_neighbors: tuple[int, ...] = (128, 64)
    """Per-hop fan-out of the temporal sampler (RelBench / RelGNN default)."""
    workers: int = 2
    """Worker processes (one torch thread each)."""


BUDGETS = Budgets(
    smoke=Config(seeds=1, num_users=60, num_items=20, num_windows=9, tasks=("user-churn", "post-reply"),
                 lr_grid=(1e-2,), depth_grid=(1,), channels_grid=(8,), epochs=1, batch_size=64, max_train_rows=128,
                 workers=1),
    quick=Config(seeds=3, num_users=300, num_items=60, num_windows=10, tasks=("user-churn", "post-reply"),
                 lr_grid=(3e-3, 1e-2), depth_grid=(1,), channels_grid=(16,), epochs=3, batch_size=128,
                 max_train_rows=1024),
    full=Config(),
)
