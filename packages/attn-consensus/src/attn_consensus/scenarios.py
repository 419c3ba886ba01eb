"""Initial tokens, random weights and the paper's assumption sets as named scenarios (all generated, seeded).

Tokens (``[*batch, n, d]`` on the unit sphere):

* ``uniform``: i.i.d. uniform on ``S^{d-1}`` (normalised Gaussians);
* ``hemisphere``: uniform on the open hemisphere ``{x : ⟨x, w⟩ > 0}`` of a random pole ``w`` (the sign of every
  token flipped onto it), the assumption of the full-attention theorem;
* ``antipodal``: two clusters around ``w`` and ``−w`` (angular noise 0.1), the hard case of the causal theorem.

Weights: ``Q, K`` Gaussian matrices rescaled to spectral norm ``scale`` (so ``|⟨Qx, Ky⟩| ≤ scale²``), one per layer
when time-varying (piecewise constant, :class:`~attn_consensus.flow.AttentionFlow`'s ``L`` axis); ``V`` is the
identity, a random Gaussian ``G/√d`` (assumption broken, indefinite) or negative definite ``−(G Gᵀ/d + I/2)``
(assumption broken, repulsive).

Scenarios (:data:`SCENARIOS`): the assumption sets of the paper and their broken controls.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attn_consensus.errors import AttnConsensusError
from attn_consensus.flow import AttentionFlow

INITS = ("uniform", "hemisphere", "antipodal")
V_KINDS = ("identity", "random", "negdef")


@dataclass(frozen=True)
class Scenario:
    """One assumption set: mask, value matrix kind, initial tokens and whether Q, K vary per layer."""

    name: str
    mask: str
    v: str
    init: str
    time_varying: bool
    assumptions_hold: bool
    """Whether the paper's theorems cover this setting (consensus is then proved)."""
    description: str


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("causal", "causal", "identity", "uniform", False, True,
             "causal, V = I, constant Q, K, uniform start (theorem: every token converges to x_1)"),
    Scenario("causal-tv", "causal", "identity", "uniform", True, True,
             "causal, V = I, piecewise-constant Q(t), K(t), uniform start (theorem)"),
    Scenario("causal-antipodal", "causal", "identity", "antipodal", False, True,
             "causal, V = I, two nearly antipodal clusters (theorem, slow: near the unstable equilibrium)"),
    Scenario("hemisphere", "full", "identity", "hemisphere", False, True,
             "full, V = I, constant Q, K, open-hemisphere start (theorem: consensus)"),
    Scenario("hemisphere-tv", "full", "identity", "hemisphere", True, True,
             "full, V = I, piecewise-constant Q(t), K(t), open-hemisphere start (theorem)"),
    Scenario("uniform", "full", "identity", "uniform", False, False,
             "full, V = I, uniform start on the whole sphere (not covered; observational)"),
    Scenario("random-v", "full", "random", "hemisphere", False, False,
             "full, random V, hemisphere start (assumption V = I broken)"),
    Scenario("negdef-v", "full", "negdef", "hemisphere", False, False,
             "full, negative-definite V, hemisphere start (assumption V = I broken: repulsive)"),
)}


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed))


def _check_nd(n: int, d: int) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise AttnConsensusError(f"n (tokens) must be an integer >= 1, got {n!r}")
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 2:
        raise AttnConsensusError(f"d (dimension) must be an integer >= 2, got {d!r}")


def sample_tokens(n: int, d: int, *, init: str = "uniform", batch: tuple[int, ...] = (), seed: int = 0
                  ) -> torch.Tensor:
    """``[*batch, n, d]`` unit tokens drawn as ``init`` (module docstring), float64."""
    _check_nd(n, d)
    if init not in INITS:
        raise AttnConsensusError(f"init must be one of {INITS}, got {init!r}")
    g = _gen(seed)
    x = torch.randn(*batch, n, d, generator=g, dtype=torch.float64)
    w = torch.randn(*batch, 1, d, generator=g, dtype=torch.float64)
    w = w / torch.linalg.vector_norm(w, dim=-1, keepdim=True)
    if init == "hemisphere":
        s = torch.sign((x * w).sum(-1, keepdim=True))
        x = x * torch.where(s == 0, torch.ones_like(s), s)
    elif init == "antipodal":
        sign = torch.where(torch.arange(n) % 2 == 0, 1.0, -1.0).to(torch.float64)[:, None]  # [n, 1]
        x = sign * w + 0.1 * x / np.sqrt(d)
    return x / torch.linalg.vector_norm(x, dim=-1, keepdim=True)


def random_matrix(d: int, *, scale: float, batch: tuple[int, ...] = (), seed: int = 0) -> torch.Tensor:
    """``[*batch, d, d]`` Gaussian matrices rescaled to spectral norm ``scale``."""
    if not scale >= 0:
        raise AttnConsensusError(f"scale must be >= 0, got {scale}")
    g = torch.randn(*batch, d, d, generator=_gen(seed), dtype=torch.float64)
    return scale * g / torch.linalg.matrix_norm(g, ord=2)[..., None, None]


def random_v(d: int, *, kind: str = "identity", batch: tuple[int, ...] = (), seed: int = 0) -> torch.Tensor:
    """``[*batch, d, d]`` value matrices: identity, random ``G/√d`` or negative definite ``−(G Gᵀ/d + I/2)``."""
    if kind not in V_KINDS:
        raise AttnConsensusError(f"v kind must be one of {V_KINDS}, got {kind!r}")
    eye = torch.eye(d, dtype=torch.float64).expand(*batch, d, d)
    if kind == "identity":
        return eye.clone()
    g = torch.randn(*batch, d, d, generator=_gen(seed), dtype=torch.float64) / np.sqrt(d)
    if kind == "random":
        return g
    return -(g @ g.transpose(-1, -2) + 0.5 * eye)


def build_scenario(name: str, *, n: int, d: int, scales: tuple[float, ...], runs: int = 1, layers: int = 8,
                   layer_time: float = 1.0, seed: int = 0) -> tuple[AttentionFlow, torch.Tensor, np.ndarray]:
    """A batched flow and its initial tokens for scenario ``name``: ``B = len(scales) * runs`` independent
    simulations, each with its own ``Q, K`` (spectral norm from ``scales``), ``V`` and tokens.

    Returns ``(flow, x0 [B, n, d], scale_of_each [B])``.
    """
    if name not in SCENARIOS:
        raise AttnConsensusError(f"scenario must be one of {tuple(SCENARIOS)}, got {name!r}")
    _check_nd(n, d)
    if runs < 1 or not scales:
        raise AttnConsensusError("runs must be >= 1 and scales non-empty")
    sc = SCENARIOS[name]
    b = len(scales) * runs
    per = np.repeat(np.asarray(scales, dtype=np.float64), runs)  # [B]
    n_layers = layers if sc.time_varying else 1
    base = 1_000_003 * int(seed) + 7919 * (list(SCENARIOS).index(name) + 1) + 31 * d
    q = random_matrix(d, scale=1.0, batch=(b, n_layers, 1), seed=base + 1)  # [B, L, H=1, d, d]
    k = random_matrix(d, scale=1.0, batch=(b, n_layers, 1), seed=base + 2)
    s = torch.as_tensor(per)[:, None, None, None, None]
    q, k = q * s, k * s
    v = random_v(d, kind=sc.v, batch=(b, 1, 1), seed=base + 3)  # [B, 1, 1, d, d]
    x0 = sample_tokens(n, d, init=sc.init, batch=(b,), seed=base + 4)
    flow = AttentionFlow(dim=d, mask=sc.mask, q=q, k=k, v=v, layer_time=layer_time)
    return flow, x0, per
