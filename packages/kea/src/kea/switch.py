"""KEA's switching mechanism (Yang et al., ICML 2025, Sec. 3.2).

Per environment and step, with ``z(s_t)`` the normalised novelty of the current state (see :mod:`kea.intrinsic`)::

    use_standard_t = 1[z(s_t) > σ]          a_t = use_standard_t ? a_t^B : a_t^SAC

so in high-novelty states the standard (extrinsic-only, near max-entropy) SAC acts and keeps exploration alive,
elsewhere the novelty-augmented SAC steers toward novel states. σ = +∞ never switches (KEA reduces to the
novelty-augmented SAC alone), σ = −∞ always uses the standard module.
"""

from __future__ import annotations

import torch


def switch(flag: torch.Tensor, standard: torch.Tensor, novelty_augmented: torch.Tensor) -> torch.Tensor:
    """KEA's per-step switch: ``flag ? standard : novelty_augmented`` elementwise over the leading (env) axis.

    ``flag``: ``(B,)`` bool, true where the normalised novelty of the current state exceeds σ. ``standard`` and
    ``novelty_augmented``: ``(B, ...)`` actions, log-probabilities or probability rows of the two SAC modules.
    """
    f = flag.to(torch.bool).reshape(flag.shape[0], *([1] * (standard.dim() - 1)))  # (B,) -> (B, 1, ..., 1)
    return torch.where(f, standard, novelty_augmented)
