"""sold: SOLD — Slot Object-Centric Latent Dynamics Models for Relational Manipulation Learning from Pixels
(Mosbach et al., ICML 2025).

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "SOLD": "sold.agent",
    "SAVi": "sold.savi",
    "SlotAttention": "sold.savi",
    "OCVPDynamics": "sold.dynamics",
    "SlotAggregationTransformer": "sold.aggregator",
    "ImaginationLearner": "sold.dreamer",
    "HolisticAE": "sold.holistic",
    "GRUDynamics": "sold.holistic",
    "SequenceReplayBuffer": "sold.buffer",
    "Config": "sold.config",
    "AgentConfig": "sold.config",
    "AutoencoderConfig": "sold.config",
    "EnvConfig": "sold.config",
    "SoldError": "sold.errors",
})
