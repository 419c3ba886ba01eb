"""select-augment: When Dynamic Data Selection Meets Data Augmentation: Achieving Enhanced Training Acceleration
(Yang et al., ICML 2025, arXiv 2505.03809), reconstructed: CLIP semantic consistency x local density scores, a
per-epoch dynamic selector (torch ``Sampler``) with a noise gate and Horvitz-Thompson weights, and targeted
augmentation of the augmentation-suitable samples; InfoBatch, random, epsilon-greedy and UCB baselines.

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "Config": "select_augment.config",
    "Scores": "select_augment.scoring",
    "score": "select_augment.scoring",
    "joint_density": "select_augment.scoring",
    "regions": "select_augment.scoring",
    "toy_encoder": "select_augment.scoring",
    "fit_adapter": "select_augment.scoring",
    "DynamicSelector": "select_augment.selection",
    "InfoBatch": "select_augment.selection",
    "LossPolicySelector": "select_augment.selection",
    "CostMeter": "select_augment.selection",
    "ratio_for_cost": "select_augment.selection",
    "TargetedAugment": "select_augment.augment",
    "SmallCNN": "select_augment.train",
    "accuracy": "select_augment.train",
    "shapes": "select_augment.data",
    "digits": "select_augment.data",
    "image_folder": "select_augment.data",
    "clip_features": "select_augment.data",
    "load_clip": "select_augment.data",
    "SelectAugmentError": "select_augment.errors",
})
