"""pes: Convergence Analysis of Policy Gradient Methods with Dynamic Stochasticity (ICML 2025).

PES (phases of fixed-σ policy gradient on a decreasing σ schedule) and SL-PG (σ learned jointly), action-based
(GPOMDP) and parameter-based (PGPE), on a vectorised LQR with exact returns, on a bounded-reward saturated regulator
where σ moves the optimal stochastic policy (``pes.clipped``), and on MuJoCo Swimmer-v5.

Import is cheap: public names and the submodules ``pes.envs``, ``pes.estimators``, ``pes.sigma``, ``pes.optim``
resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "PES": "pes.algorithms",
    "SLPG": "pes.algorithms",
    "fixed_sigma": "pes.algorithms",
    "evaluate": "pes.algorithms",
    "LQR": "pes.envs",
    "ClippedRegulator": "pes.clipped",
    "LQREnv": "pes.envs",
    "GymTask": "pes.envs",
    "make_env": "pes.envs",
    "Config": "pes.config",
    "PesError": "pes.errors",
}, submodules=("envs", "clipped", "estimators", "sigma", "optim", "algorithms", "config", "reproduce"))
