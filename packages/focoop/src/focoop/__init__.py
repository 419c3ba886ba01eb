"""focoop: FOCoOp: Enhancing Out-of-Distribution Robustness in Federated Prompt Learning for Vision-Language Models (ICML 2025)."""

__version__ = "0.1.0"
