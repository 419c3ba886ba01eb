"""Objectives with a known optimum: botorch's synthetic test functions (negated, so BO maximises), and a
hyper-parameter tuning task on scikit-learn's bundled digits, and the same task on its bundled wine data (the HPO
task's validation objective; scikit-learn is a dependency).

``make_objective(name, dim) -> Objective`` with ``f(x [d]) -> float``, ``bounds [2, d]`` and ``optimum`` (the best
value, for simple regret ``optimum - max y``; ``None`` when unknown).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from earl_bo.errors import EarlBoError

SYNTHETIC = {"ackley": "Ackley", "levy": "Levy", "rosenbrock": "Rosenbrock", "hartmann": "Hartmann",
             "branin": "Branin"}
HPO_DATA = ("digits", "wine")
"""scikit-learn's bundled classification data sets of the HPO task (``hpo-digits``, ``hpo-wine``)."""
FIXED_DIMS = {"hartmann": (3, 4, 6), "branin": (2,), **{f"hpo-{n}": (5,) for n in HPO_DATA}}
NAMES = (*SYNTHETIC, *(f"hpo-{n}" for n in HPO_DATA))


@dataclass(frozen=True)
class Objective:
    """A black box to maximise: ``f(x [d]) -> float`` on ``bounds [2, d]``; ``optimum`` its best value if known."""

    name: str
    f: Callable[[np.ndarray], float]
    bounds: np.ndarray
    optimum: float | None

    @property
    def dim(self) -> int:
        return int(self.bounds.shape[1])


def make_objective(name: str, dim: int, *, shift: float = 0.0, seed: int = 0) -> Objective:
    """``ackley|levy|rosenbrock`` (any d >= 2), ``hartmann`` (d in 3, 4, 6), ``branin`` (d = 2), ``hpo-digits`` and
    ``hpo-wine`` (d = 5).

    ``shift > 0`` moves the search box of a synthetic function by a random offset of up to ``shift`` (at most 0.4)
    times its side in every dimension (seeded), so that the optimum is not at the box centre (Ackley's is exactly
    there, Levy's near it, which rewards any method biased to the centre). Ackley's and Levy's optima stay inside the
    box for every ``shift <= 0.4`` (at relative position 0.5 and 0.55 of the unshifted box).
    """
    if name not in NAMES:
        raise EarlBoError(f"unknown benchmark {name!r}; choose one of {', '.join(NAMES)}")
    if name in FIXED_DIMS and dim not in FIXED_DIMS[name]:
        raise EarlBoError(f"benchmark {name!r} has dimension {FIXED_DIMS[name]}, got dim={dim}")
    if dim < 1 or (name in ("ackley", "levy", "rosenbrock") and dim < 2):
        raise EarlBoError(f"dim must be >= 2 for {name!r}, got {dim}")
    if name.startswith("hpo-"):
        return hpo_task(name.removeprefix("hpo-"))
    import torch
    from botorch.test_functions import synthetic

    cls = getattr(synthetic, SYNTHETIC[name])
    kw = {} if name == "branin" else {"dim": dim}
    bounds = cls(**kw).bounds.numpy().astype(np.float64)
    if shift:
        if not 0 < shift <= 0.4:
            raise EarlBoError(f"shift must be in (0, 0.4], got {shift}")
        offset = np.random.default_rng(seed).uniform(-shift, shift, dim) * (bounds[1] - bounds[0])
        bounds = bounds + offset
    fn = cls(negate=True, bounds=[(float(lo), float(hi)) for lo, hi in zip(*bounds)], **kw)

    def f(x: np.ndarray) -> float:
        with torch.no_grad():
            return float(fn(torch.as_tensor(np.asarray(x, dtype=np.float64)).reshape(1, -1))[0])

    # with negate=True botorch already reports the optimum of the negated (maximised) function
    return Objective(name=f"{name}-{dim}", f=f, bounds=bounds, optimum=float(fn.optimal_value))


HPO_SPACE = (
    ("log10 learning_rate", -2.5, 0.0),
    ("max_leaf_nodes (log2)", 1.0, 6.0),
    ("min_samples_leaf (log2)", 0.0, 6.0),
    ("log10 l2_regularization", -4.0, 1.0),
    ("max_features", 0.1, 1.0),
)


def hpo_task(data: str = "digits", *, max_iter: int = 15, folds: int = 3) -> Objective:
    """3-fold CV accuracy of ``HistGradientBoostingClassifier`` on one of scikit-learn's bundled data sets
    (:data:`HPO_DATA`: digits, 1797 × 64, 10 classes; wine, 178 × 13, 3 classes), over 5 hyper-parameters
    (:data:`HPO_SPACE`). scikit-learn is a dependency of this package; these data ship inside it."""
    if data not in HPO_DATA:
        raise EarlBoError(f"unknown HPO data set {data!r}; choose one of {', '.join(HPO_DATA)}")
    try:
        from sklearn import datasets
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.model_selection import cross_val_score
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise EarlBoError(f"benchmark 'hpo-{data}' needs scikit-learn: pip install scikit-learn") from exc
    bundle = getattr(datasets, f"load_{data}")()
    xd, yd = bundle.data, bundle.target

    def f(x: np.ndarray) -> float:
        lr, leaves, leaf, l2, feat = (float(v) for v in x)
        clf = HistGradientBoostingClassifier(
            learning_rate=10**lr, max_leaf_nodes=int(round(2 ** leaves)) + 1, min_samples_leaf=int(round(2**leaf)),
            l2_regularization=10**l2, max_features=feat, max_iter=max_iter, early_stopping=False, random_state=0)
        return float(cross_val_score(clf, xd, yd, cv=folds).mean())

    bounds = np.array([[lo for _, lo, _ in HPO_SPACE], [hi for _, _, hi in HPO_SPACE]], dtype=np.float64)
    return Objective(name=f"hpo-{data}", f=f, bounds=bounds, optimum=1.0)


def hpo_digits(*, max_iter: int = 15, folds: int = 3) -> Objective:
    """:func:`hpo_task` on scikit-learn's digits (the tuning task of ``reproduce --task hpo-digits``)."""
    return hpo_task("digits", max_iter=max_iter, folds=folds)
