"""Gradient-ascent steppers in numpy: Adam (β1 0.9, β2 0.999, ε 1e-8, as in the released code) and a constant step.

Adam ascent: ``m ← β1 m + (1 − β1) g``, ``v ← β2 v + (1 − β2) g²``, ``θ ← θ + lr · m̂ / (√v̂ + ε)`` with the bias
corrections ``m̂ = m/(1 − β1^k)``, ``v̂ = v/(1 − β2^k)``.
"""

from __future__ import annotations

import numpy as np

from pes.errors import PesError

OPTIMIZERS = ("adam", "sgd")


class Adam:
    """Adam for gradient *ascent* on a flat parameter vector. ``reset()`` forgets the moments."""

    def __init__(self, lr: float, *, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8) -> None:
        if not (np.isfinite(lr) and lr > 0):
            raise PesError(f"lr must be a positive finite number, got {lr!r}")
        self.lr, self.beta1, self.beta2, self.eps = float(lr), beta1, beta2, eps
        self.reset()

    def reset(self) -> None:
        self.m: np.ndarray | None = None
        self.v: np.ndarray | None = None
        self.k = 0

    def step(self, params: np.ndarray, grad: np.ndarray, *, scale: float = 1.0) -> np.ndarray:
        """Return ``params + scale · lr · m̂/(√v̂ + ε)`` (a new array); ``scale`` multiplies this step's lr."""
        g = np.asarray(grad, dtype=np.float64)
        if self.m is None:
            self.m, self.v = np.zeros_like(g), np.zeros_like(g)
        self.k += 1
        self.m = self.beta1 * self.m + (1 - self.beta1) * g
        self.v = self.beta2 * self.v + (1 - self.beta2) * g * g
        mh = self.m / (1 - self.beta1 ** self.k)
        vh = self.v / (1 - self.beta2 ** self.k)
        return params + scale * self.lr * mh / (np.sqrt(vh) + self.eps)


class SGD:
    """Constant-step gradient ascent ``θ ← θ + scale · lr · g``."""

    def __init__(self, lr: float) -> None:
        if not (np.isfinite(lr) and lr > 0):
            raise PesError(f"lr must be a positive finite number, got {lr!r}")
        self.lr = float(lr)

    def reset(self) -> None:
        pass

    def step(self, params: np.ndarray, grad: np.ndarray, *, scale: float = 1.0) -> np.ndarray:
        return params + scale * self.lr * np.asarray(grad, dtype=np.float64)


def make_optimizer(name: str, lr: float) -> Adam | SGD:
    if name == "adam":
        return Adam(lr)
    if name == "sgd":
        return SGD(lr)
    raise PesError(f"optimizer must be one of {OPTIMIZERS}, got {name!r}")
