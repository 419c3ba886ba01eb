"""attn-consensus: Consensus Is All You Get: The Role of Attention in Transformers (ICML 2025).

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "Config": "attn_consensus.config",
    "fit": "attn_consensus.method",
    "predict": "attn_consensus.method",
    "make_data": "attn_consensus.data",
    "AttnConsensusError": "attn_consensus.errors",
})
