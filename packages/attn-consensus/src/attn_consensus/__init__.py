"""attn-consensus: Consensus Is All You Get: The Role of Attention in Transformers (ICML 2025).

Tokens under attention as an ODE on the sphere (:class:`AttentionFlow`, :func:`integrate`), the consensus
diagnostics (:func:`consensus_gap`, :func:`geodesic_diameter`) and the consensus loop over a GPT-2 block stack
(:func:`hf_consensus_loop`). Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "AttentionFlow": "attn_consensus.flow",
    "integrate": "attn_consensus.flow",
    "reference_solution": "attn_consensus.flow",
    "Trajectory": "attn_consensus.flow",
    "consensus_gap": "attn_consensus.diagnostics",
    "geodesic_diameter": "attn_consensus.diagnostics",
    "decay_rate": "attn_consensus.diagnostics",
    "cross_cluster_attention": "attn_consensus.diagnostics",
    "sample_tokens": "attn_consensus.scenarios",
    "random_matrix": "attn_consensus.scenarios",
    "build_scenario": "attn_consensus.scenarios",
    "SCENARIOS": "attn_consensus.scenarios",
    "hf_consensus_loop": "attn_consensus.hf_loop",
    "ConsensusCurve": "attn_consensus.hf_loop",
    "tiny_gpt2": "attn_consensus.models",
    "trained_tiny_gpt2": "attn_consensus.models",
    "random_prompts": "attn_consensus.models",
    "Config": "attn_consensus.config",
    "AttnConsensusError": "attn_consensus.errors",
})
