"""lcia: Large Continual Instruction Assistant (ICML 2025) — DEMA and instruction grouping for continual LoRA.

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "Config": "lcia.config",
    "DEMA": "lcia.dema",
    "dema_alpha": "lcia.dema",
    "dema_callback": "lcia.dema",
    "InstructionRouter": "lcia.grouping",
    "tfidf_similarity": "lcia.grouping",
    "run_stream": "lcia.continual",
    "ContinualLearner": "lcia.continual",
    "default_stream": "lcia.data",
    "load_jsonl_stream": "lcia.data",
    "LciaError": "lcia.errors",
}, submodules=("metrics",))  # lcia.metrics: forgetting, bwt, average_accuracy
