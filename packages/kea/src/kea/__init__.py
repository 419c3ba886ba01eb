"""kea: Keeping Exploration Alive: Proactively Coordinating Exploration Strategies for Curiosity-driven Exploration (KEA) (ICML 2025)."""

__version__ = "0.1.0"
