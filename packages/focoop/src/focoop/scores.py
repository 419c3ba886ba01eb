"""OOD scores from CLIP logits over C ID columns followed by K OOD-prompt (negative-label) columns.

``logits`` has shape (n, C + K); the first ``n_id`` = C columns are the ID classes. Higher score = more ID.

Paper-faithful / corrected scores (default):

* ``msp``: max_{c < C} softmax(all C + K logits)_c — OOD prompts take mass away from ID classes;
* ``neglabel``: Σ_{c < C} softmax(all logits)_c (NegLabel's ID mass);
* ``energy``: LSE_{c < C}(logits_c) (negative free energy over the ID columns).

Official variants (``official=True``), as in the released code: ``msp`` = max over **all** C + K columns (an image
that matches a negative label looks confident), ``energy`` = LSE over all columns, ``neglabel`` =
Σ_{c<C} logit_c / Σ_all logit_c. With K = 0 the corrected and official MSP/energy coincide.
"""

from __future__ import annotations

import torch

from focoop.config import SCORE_METHODS  # noqa: F401  (re-exported)
from focoop.errors import FOCoOpConfigError


def ood_score(logits: torch.Tensor, *, n_id: int, method: str = "msp", official: bool = False) -> torch.Tensor:
    """Score each row of ``logits`` (n, C + K); returns (n,) float tensor, higher = more in-distribution."""
    if method not in SCORE_METHODS:
        raise FOCoOpConfigError(f"score method must be one of {SCORE_METHODS}, got {method!r}")
    if logits.ndim != 2 or not 1 <= n_id <= logits.shape[1]:
        raise FOCoOpConfigError(f"logits must be (n, C+K) with 1 <= n_id <= C+K; got {tuple(logits.shape)}, {n_id}")
    if not torch.isfinite(logits).all():
        raise FOCoOpConfigError("logits contain NaN or inf")
    logits = logits.double()
    if method == "msp":
        p = logits.softmax(-1)
        return p.max(-1).values if official else p[:, :n_id].max(-1).values
    if method == "energy":
        return torch.logsumexp(logits if official else logits[:, :n_id], dim=-1)
    if official:
        return logits[:, :n_id].sum(-1) / logits.sum(-1)
    return logits.softmax(-1)[:, :n_id].sum(-1)
