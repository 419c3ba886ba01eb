"""sggm: score-based graph generation as a system of dependent SDEs (Su & Wu, ICML 2025), its convergence measured
exactly on Gaussian graph models, plus a learned GDSS-style score.

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "VP": "sggm.sde",
    "VE": "sggm.sde",
    "GaussianGraphModel": "sggm.gaussian",
    "SamplerLaw": "sggm.gaussian",
    "features_law_from_spectrum": "sggm.gaussian",
    "ring_lattice_spectrum": "sggm.graphs",
    "gaussian_kl": "sggm.kl",
    "monte_carlo_kl": "sggm.kl",
    "chains_for_tolerance": "sggm.kl",
    "sample": "sggm.sampler",
    "ScoreNetwork": "sggm.score_net",
    "train_score": "sggm.score_net",
    "validation_loss": "sggm.score_net",
    "regular_graph": "sggm.graphs",
    "powerlaw_graph": "sggm.graphs",
    "laplacian": "sggm.graphs",
    "normalized_adjacency": "sggm.graphs",
    "degree_mmd": "sggm.metrics",
    "spectrum_mmd": "sggm.metrics",
    "Config": "sggm.config",
    "SggmError": "sggm.errors",
})
