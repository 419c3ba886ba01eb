"""private-robust-align: A Unified Theoretical Analysis of Private and Robust Offline Alignment: from RLHF to DPO
(Zhou, Wu & Orabona, ICML 2025).

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "randomized_response": "private_robust_align.mechanism",
    "debias_labels": "private_robust_align.mechanism",
    "flip_rate": "private_robust_align.mechanism",
    "privacy_constant": "private_robust_align.mechanism",
    "corrupt": "private_robust_align.adversary",
    "privatize_and_corrupt": "private_robust_align.orders",
    "DebiasedLogistic": "private_robust_align.estimator",
    "oracle_mle": "private_robust_align.estimator",
    "rdpo_loss": "private_robust_align.estimator",
    "rr_swap_pairs": "private_robust_align.dpo",
    "rr_swap_dataset": "private_robust_align.dpo",
    "load_pairs": "private_robust_align.dpo",
    "make_preferences": "private_robust_align.data",
    "Bandit": "private_robust_align.policy",
    "make_bandit": "private_robust_align.policy",
    "bandit_preferences": "private_robust_align.policy",
    "greedy_policy": "private_robust_align.policy",
    "pessimistic_policy": "private_robust_align.policy",
    "suboptimality": "private_robust_align.policy",
    "fit_slope": "private_robust_align.metrics",
    "SimConfig": "private_robust_align.config",
    "EstimatorConfig": "private_robust_align.config",
    "Config": "private_robust_align.config",
    "PrivateRobustAlignError": "private_robust_align.errors",
})
