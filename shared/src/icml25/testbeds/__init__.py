"""Offline test beds: a tiny causal LM (``icml25.testbeds.lm``, extra ``icml25[lm]``) and a tiny CLIP
(``icml25.testbeds.clip``, extra ``icml25[clip]``), both built from code, trained on generated data with exact ground
truth in about a minute on 2 CPU cores, and cached (``icml25.testbeds.cache``).

Import the submodules explicitly; this package imports nothing heavy (no torch) by itself.
"""

__all__ = ["lm", "clip", "cache"]
