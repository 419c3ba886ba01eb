"""lift: LIFT the Veil for the Truth: Principal Weights Emerge after Rank Reduction for Reasoning-Focused Supervised Fine-Tuning (ICML 2025)."""

__version__ = "0.1.0"
