"""suica: SUICA: Learning Super-high Dimensional Sparse Implicit Neural Representations for Spatial Transcriptomics (ICML 2025)."""

__version__ = "0.1.0"
