"""richardson-tc: Fast Tensor Completion via Approximate Richardson Iteration (Ghadiri, Fahrbach, Kook, Jadbabaie;
ICML 2025).

Import is cheap: public names resolve on first use.
"""

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "cp_complete": "richardson_tc.complete",
    "History": "richardson_tc.complete",
    "lifted_richardson": "richardson_tc.richardson",
    "RichardsonResult": "richardson_tc.richardson",
    "Observed": "richardson_tc.richardson",
    "aitken_jump": "richardson_tc.richardson",
    "masked_lstsq": "richardson_tc.solvers",
    "CPModeSolver": "richardson_tc.solvers",
    "KroneckerSolver": "richardson_tc.solvers",
    "SampledCPModeSolver": "richardson_tc.solvers",
    "TTCoreSolver": "richardson_tc.solvers",
    "tt_complete": "richardson_tc.tt",
    "ObservedEntries": "richardson_tc.data",
    "make_tensor": "richardson_tc.data",
    "sample_mask": "richardson_tc.data",
    "split_mask": "richardson_tc.data",
    "load_tensor": "richardson_tc.data",
    "Config": "richardson_tc.config",
    "RichardsonTcError": "richardson_tc.errors",
})
