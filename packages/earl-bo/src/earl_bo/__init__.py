"""earl-bo: EARL-BO: Reinforcement Learning for Multi-Step Lookahead, High-Dimensional Bayesian Optimization (ICML 2025).

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "EARLBO": "earl_bo.earl",
    "optimize": "earl_bo.bo",
    "minimize": "earl_bo.bo",
    "MinimizeResult": "earl_bo.bo",
    "METHODS": "earl_bo.bo",
    "Result": "earl_bo.bo",
    "SetEncoder": "earl_bo.encoder",
    "GPEnv": "earl_bo.gp_env",
    "GPHyper": "earl_bo.gp_env",
    "fit_gp": "earl_bo.gp_env",
    "ActorCritic": "earl_bo.ppo",
    "TurboState": "earl_bo.turbo",
    "make_objective": "earl_bo.objectives",
    "Config": "earl_bo.config",
    "EarlBoError": "earl_bo.errors",
})
