"""lift: LIFT the Veil for the Truth: Principal Weights Emerge after Rank Reduction for Reasoning-Focused Supervised
Fine-Tuning (Liu et al., ICML 2025, arXiv 2506.00772).

Public API (heavy modules are imported lazily)::

    from lift import principal_mask, SparseAdamW, MaskType
    mask = principal_mask(W, filter_rank=8, budget_rank=4)        # bool (m, n), exactly (m+n)*4 ones
    opt = SparseAdamW(model, lr=3e-3, filter_rank=8, budget_rank=4, update_interval=25)
"""

from __future__ import annotations

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "principal_mask": "lift.masks",
    "magnitude_mask": "lift.masks",
    "random_mask": "lift.masks",
    "stable_rank_mask": "lift.masks",
    "compute_mask": "lift.masks",
    "low_rank_approximation": "lift.masks",
    "budget_size": "lift.masks",
    "check_mask": "lift.masks",
    "shira_mask_fn": "lift.masks",
    "MaskType": "lift.masks",
    "Selection": "lift.masks",
    "SVDMethod": "lift.masks",
    "SparseAdamW": "lift.optim",
    "select_linear_weights": "lift.optim",
    "METHODS": "lift.finetune",
    "MethodConfig": "lift.finetune",
    "setup_method": "lift.finetune",
    "finetune": "lift.finetune",
    "load_model": "lift.models",
    "save_model": "lift.models",
    "ModelLoadError": "lift.models",
    "LiftConfigError": "lift.errors",
    "MaskError": "lift.errors",
})
