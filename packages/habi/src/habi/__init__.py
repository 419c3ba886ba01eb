"""habi: Habitizing Diffusion Planning for Efficient and Effective Decision Making (Habi) (ICML 2025)."""

__version__ = "0.1.0"
