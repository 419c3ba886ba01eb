"""Networks of SUICA: the graph-augmented autoencoder (GAE) and the implicit neural representations (INRs).

**GAE** (paper §3, official ``networks/gae.py``), input ``x`` = normalised counts ``(n, G)``, propagation ``Â (n, n)``::

    H = ReLU(BN(Â (log(1 + x) W_g + b_g)))          (n, h_0)     one graph-convolution layer
    z = MLP_enc(H)                                   (n, D)       h_0 -> h_1 -> ... -> D, ReLU between
    ŷ = ReLU(MLP_dec(z))                             (n, G)       D -> h_{-1} -> ... -> h_0 -> G, final ReLU (ŷ >= 0)

``use_graph=False`` gives the plain AE baseline (``Â = I``: a Linear layer on ``log1p(x)``, same widths).

**INR** ``f: R^d -> R^D`` on normalised coordinates ``u (n, d)``:

* ``FourierFeatureINR``: ``γ(u) = [sin 2π uB, cos 2π uB]``, ``B ~ N(0, σ²)^{d x m}`` a fixed buffer (``(n, 2m)``),
  then ``Linear(2m, W)``-ReLU, ``n_layers`` x ``Linear(W, W)``-ReLU, ``Linear(W, D)``, final activation.
  ``hidden_activation=False`` reproduces the official code, whose hidden layers have no activation between them.
* ``SIREN`` (option): ``sin(ω0 (W u + b))`` layers with the SIREN initialisation.
* ``HashGridINR`` (option ``inr="ngp"``): NGP multiresolution hash encoding + a small MLP, pure torch.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class GraphConv(nn.Module):
    """``Â (x W + b)``: a dense linear map followed by sparse propagation. ``x (n, in)`` -> ``(n, out)``."""

    def __init__(self, *, in_features: int, out_features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features, out_features))
        self.bias = nn.Parameter(torch.zeros(out_features))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, x: torch.Tensor, adj: torch.Tensor | None) -> torch.Tensor:
        h = (torch.sparse.mm(x, self.weight) if x.is_sparse else x @ self.weight) + self.bias  # (n, out)
        return h if adj is None else torch.sparse.mm(adj, h)


def mlp(dims: list[int]) -> nn.Sequential:
    """Linear layers with ReLU between them (none after the last)."""
    layers: list[nn.Module] = []
    for i in range(len(dims) - 1):
        layers.append(nn.Linear(dims[i], dims[i + 1]))
        if i < len(dims) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class GAE(nn.Module):
    """Graph-augmented autoencoder; see the module docstring for the equations and shapes."""

    def __init__(self, *, n_genes: int, hidden: tuple[int, ...] = (256, 128, 64), latent_dim: int = 32,
                 use_graph: bool = True):
        super().__init__()
        if len(hidden) < 1:
            raise ValueError("hidden must have at least one width")
        self.use_graph = use_graph
        self.graph_conv = GraphConv(in_features=n_genes, out_features=hidden[0])
        self.bn = nn.BatchNorm1d(hidden[0])
        self.encoder = mlp([hidden[0], *hidden[1:], latent_dim])
        self.decoder = mlp([latent_dim, *hidden[::-1], n_genes])

    def encode(self, x: torch.Tensor, adj: torch.Tensor | None, *, logged: bool = False) -> torch.Tensor:
        """``x (n, G)`` normalised counts (dense or torch-sparse; ``logged=True``: already ``log(1 + x)``) ->
        ``z (n, D)``."""
        xl = x if logged else torch.log1p(x)
        h = torch.relu(self.bn(self.graph_conv(xl, adj if self.use_graph else None)))  # (n, h0)
        return self.encoder(h)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """``z (n, D)`` -> ``ŷ (n, G)``, non-negative."""
        return torch.relu(self.decoder(z))

    def forward(self, x: torch.Tensor, adj: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        z = self.encode(x, adj)
        return self.decode(z), z


class LinearDecoder(nn.Module):
    """Decoder of the PCA embedding (``embedding="pca"``): ``ŷ = ReLU(z Wᵀ + b)``, ``z (n, D)`` -> ``(n, G)``.

    Initialised by :meth:`init_pca` at the PCA inverse transform (``W`` = components ``(G, D)``, ``b`` = mean), then
    fine-tuned in phase 2 like the GAE decoder. Linear in ``z``: interpolating codes interpolates expression.
    """

    def __init__(self, *, n_genes: int, latent_dim: int):
        super().__init__()
        self.decoder = nn.Linear(latent_dim, n_genes)

    @torch.no_grad()
    def init_pca(self, components, mean) -> None:
        """``components (D, G)``, ``mean (G,)`` of a fitted PCA."""
        import numpy as np

        w = np.ascontiguousarray(np.asarray(components, dtype=np.float32).T)  # (G, D)
        self.decoder.weight.copy_(torch.from_numpy(w))
        self.decoder.bias.copy_(torch.from_numpy(np.ascontiguousarray(np.asarray(mean, dtype=np.float32).reshape(-1))))

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """``z (n, D)`` -> ``ŷ (n, G)``, non-negative."""
        return torch.relu(self.decoder(z))


class FourierFeatures(nn.Module):
    """Gaussian Fourier features ``γ(u) = [sin 2π uB, cos 2π uB]``; ``B (d, m)`` is a buffer (no gradient)."""

    def __init__(self, *, in_dim: int, mapping_size: int = 256, scale: float = 10.0, seed: int = 0):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.register_buffer("B", torch.randn(in_dim, mapping_size, generator=gen) * scale)

    @property
    def out_dim(self) -> int:
        return 2 * self.B.shape[1]

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        proj = 2 * math.pi * (u @ self.B)  # (n, m)
        return torch.cat([torch.sin(proj), torch.cos(proj)], dim=1)  # (n, 2m)


class FourierFeatureINR(nn.Module):
    """Fourier-feature MLP ``u (n, d) -> (n, out_dim)`` (the FFN of the official code, activations fixed)."""

    def __init__(self, *, in_dim: int, out_dim: int, width: int = 256, n_layers: int = 3, mapping_size: int = 256,
                 scale: float = 10.0, hidden_activation: bool = True, final: str = "identity", seed: int = 0):
        super().__init__()
        self.features = FourierFeatures(in_dim=in_dim, mapping_size=mapping_size, scale=scale, seed=seed)
        layers: list[nn.Module] = [nn.Linear(self.features.out_dim, width), nn.ReLU()]
        for _ in range(n_layers):
            layers.append(nn.Linear(width, width))
            if hidden_activation:
                layers.append(nn.ReLU())
        layers.append(nn.Linear(width, out_dim))
        layers.append(_final(final))
        self.net = nn.Sequential(*layers)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        return self.net(self.features(u))


class SineLayer(nn.Module):
    def __init__(self, *, in_features: int, out_features: int, w0: float, first: bool):
        super().__init__()
        self.w0 = w0
        self.linear = nn.Linear(in_features, out_features)
        bound = 1.0 / in_features if first else math.sqrt(6.0 / in_features) / w0
        nn.init.uniform_(self.linear.weight, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sin(self.w0 * self.linear(x))


class SIREN(nn.Module):
    """SIREN INR ``u (n, d) -> (n, out_dim)`` (Sitzmann et al. 2020), an option of the paper."""

    def __init__(self, *, in_dim: int, out_dim: int, width: int = 256, n_layers: int = 3, w0: float = 30.0,
                 final: str = "identity"):
        super().__init__()
        layers: list[nn.Module] = [SineLayer(in_features=in_dim, out_features=width, w0=w0, first=True)]
        layers += [SineLayer(in_features=width, out_features=width, w0=1.0 * w0, first=False) for _ in range(n_layers)]
        last = nn.Linear(width, out_dim)
        bound = math.sqrt(6.0 / width) / w0
        nn.init.uniform_(last.weight, -bound, bound)
        self.net = nn.Sequential(*layers, last, _final(final))

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        return self.net(u)


class HashGridINR(nn.Module):
    """NGP-style multiresolution hash-grid INR (Müller et al. 2022), pure torch (no CUDA extension).

    ``L`` levels with resolutions ``N_l = floor(N_min · b^l)``, ``b = (N_max / N_min)^{1/(L-1)}``; at level ``l`` the
    corners of the cell holding ``u`` (mapped from ``[-1, 1]^d`` to ``[0, N_l]^d``) index a table ``(T, F)`` through
    the spatial hash ``(⊕_i c_i π_i) mod T`` (``π = 1, 2654435761, 805459861``); features are interpolated
    (bi/tri-linear weights, ``2^d`` corners), concatenated ``(n, L·F)`` and mapped by an MLP
    ``L·F -> W -> ... -> out_dim`` (ReLU). Table entries start in ``U(-1e-4, 1e-4)``.
    """

    PRIMES = (1, 2654435761, 805459861)

    def __init__(self, *, in_dim: int, out_dim: int, width: int = 64, n_layers: int = 1, levels: int = 8,
                 features: int = 2, log2_table: int = 14, n_min: int = 4, n_max: int = 128, final: str = "identity"):
        super().__init__()
        if in_dim not in (2, 3):
            raise ValueError(f"HashGridINR needs 2-D or 3-D coordinates, got {in_dim}")
        self.in_dim, self.levels, self.features, self.table = in_dim, levels, features, 2**log2_table
        b = (n_max / n_min) ** (1.0 / max(levels - 1, 1))
        self.register_buffer("res", torch.tensor([math.floor(n_min * b**lvl) for lvl in range(levels)],
                                                 dtype=torch.float32))
        self.embeddings = nn.Parameter(torch.empty(levels, self.table, features).uniform_(-1e-4, 1e-4))
        corners = torch.tensor([[(k >> i) & 1 for i in range(in_dim)] for k in range(2**in_dim)])
        self.register_buffer("corners", corners)  # (2^d, d) in {0, 1}
        self.mlp = nn.Sequential(mlp([levels * features, *([width] * (n_layers + 1)), out_dim]), _final(final))

    def encode(self, u: torch.Tensor) -> torch.Tensor:
        """``u (n, d)`` in about ``[-1, 1]`` -> interpolated features ``(n, L·F)``."""
        x = (u.clamp(-1.0, 1.0) + 1.0) / 2.0  # (n, d) in [0, 1]
        out = []
        primes = torch.tensor(self.PRIMES[: self.in_dim], dtype=torch.int64, device=u.device)
        for lvl in range(self.levels):
            p = x * self.res[lvl]  # (n, d)
            p0 = torch.floor(p)
            frac = p - p0  # (n, d)
            c = p0.long()[:, None, :] + self.corners[None]  # (n, 2^d, d)
            h = c * primes  # (n, 2^d, d)
            idx = h[..., 0]
            for i in range(1, self.in_dim):
                idx = torch.bitwise_xor(idx, h[..., i])
            idx = idx % self.table  # (n, 2^d)
            w = torch.where(self.corners[None].bool(), frac[:, None, :], 1.0 - frac[:, None, :]).prod(-1)  # (n, 2^d)
            out.append((self.embeddings[lvl][idx] * w[..., None]).sum(1))  # (n, F)
        return torch.cat(out, dim=1)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.encode(u))


def _final(name: str) -> nn.Module:
    if name == "identity":
        return nn.Identity()
    if name == "relu":
        return nn.ReLU()
    raise ValueError(f"final activation must be 'identity' or 'relu', got {name!r}")


def make_inr(*, kind: str, in_dim: int, out_dim: int, width: int, n_layers: int, mapping_size: int, scale: float,
             hidden_activation: bool, w0: float, final: str, seed: int) -> nn.Module:
    if kind == "ffn":
        return FourierFeatureINR(in_dim=in_dim, out_dim=out_dim, width=width, n_layers=n_layers,
                                 mapping_size=mapping_size, scale=scale, hidden_activation=hidden_activation,
                                 final=final, seed=seed)
    if kind == "siren":
        return SIREN(in_dim=in_dim, out_dim=out_dim, width=width, n_layers=n_layers, w0=w0, final=final)
    if kind == "ngp":
        torch.manual_seed(seed)
        return HashGridINR(in_dim=in_dim, out_dim=out_dim, width=min(width, 64), n_layers=1, final=final)
    raise ValueError(f"inr must be 'ffn', 'siren' or 'ngp', got {kind!r}")
