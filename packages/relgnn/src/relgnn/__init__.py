"""relgnn: RelGNN: Composite Message Passing for Relational Deep Learning (ICML 2025)."""

__version__ = "0.1.0"
