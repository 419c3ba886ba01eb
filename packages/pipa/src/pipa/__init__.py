"""pipa: PIPA: Preference Alignment as Prior-Informed Statistical Estimation (ICML 2025)."""

__version__ = "0.1.0"
