"""Synthetic spatial transcriptomics with ground truth (no downloads).

``make_tissue`` draws a tissue with ``n_domains`` spatial domains (Voronoi cells of random centres), a smooth
gradient field ``g(x)``, gene programs and a **true rate field** ``λ(x) ∈ R_+^G``::

    log λ_g(x) = μ_g + δ_{dom(x), g} + β_g g(x)
    μ_g ~ N(m, 1)                       (log-normal baseline means)
    δ_{k,g} ~ N(0, 0.3²) ; marker genes (``marker_frac``): + U(1.5, 3) in one domain
    β_g ~ N(0, 0.8²) for ``gradient_frac`` of the genes, else 0

Counts: ``Y = D · Poisson(s_i λ_g(x_i))`` with size factors ``s_i ~ LogNormal(0, 0.2²)`` and a dropout mask ``D``
(zero-inflation) with ``P(drop) = σ(-(log(s λ) - x0)·slope)``, ``x0`` chosen by bisection so that the overall
zero fraction equals ``zero_frac`` (85–90 % as in real Stereo-seq / Slide-seq data).

Spots lie on a Visium-like hexagonal lattice (``layout="hex"``) or uniformly at random (``"random"``,
Slide-seq-like); ``dim=3`` stacks ``n_sections`` hex sections (or samples a box) for 3-D tissues.

Returned ``AnnData``: ``X`` = counts (float32, ``(n_spots, n_genes)``), ``layers["counts"]`` = the same counts,
``layers["rate"]`` = true ``λ(x_i)`` (no size factor, no dropout), ``obs["domain"]`` (categorical), ``obs["size_factor"]``,
``obsm["spatial"]`` ``(n_spots, dim)``, ``var["marker_of"]`` (domain index or -1), ``uns["synthetic"]`` parameters.

Degradations (all return new objects, never modify the input): :func:`holdout_spots`, :func:`mask_genes`,
:func:`add_noise`.
"""

from __future__ import annotations

import numpy as np

from suica.errors import SUICAInputError


def _hex_lattice(n: int, aspect: float, rng: np.random.Generator) -> np.ndarray:
    # rows spaced sqrt(3)/2, odd rows shifted by 1/2 (Visium). Width/height = aspect.
    h = np.sqrt(n * np.sqrt(3) / 2 / aspect)  # rows
    w = n / h  # columns
    nr, nc = max(2, int(round(h))), max(2, int(round(w)))
    r, c = np.meshgrid(np.arange(nr), np.arange(nc), indexing="ij")
    x = c + 0.5 * (r % 2)
    y = r * np.sqrt(3) / 2
    pts = np.stack([x.ravel(), y.ravel()], axis=1).astype(np.float64)  # (nr*nc, 2)
    return pts * 100.0  # Visium-like micrometre-ish units


def _spots(n: int, *, layout: str, dim: int, aspect: float, n_sections: int, rng: np.random.Generator) -> np.ndarray:
    if layout == "hex":
        if dim == 2:
            return _hex_lattice(n, aspect, rng)
        per = max(4, n // n_sections)
        sec = _hex_lattice(per, aspect, rng)
        z_step = (sec[:, 1].max() - sec[:, 1].min()) / max(n_sections - 1, 1) * 0.5
        return np.concatenate([np.column_stack([sec, np.full(len(sec), i * z_step)]) for i in range(n_sections)])
    if layout == "random":
        lens = np.array([aspect, 1.0, 0.5][:dim]) * 1000.0
        return rng.uniform(0.0, 1.0, size=(n, dim)) * lens
    raise SUICAInputError(f"layout must be 'hex' or 'random', got {layout!r}")


def make_tissue(
    *,
    n_spots: int = 2000,
    n_genes: int = 500,
    n_domains: int = 5,
    layout: str = "hex",
    dim: int = 2,
    aspect: float = 1.5,
    n_sections: int = 6,
    marker_frac: float = 0.1,
    gradient_frac: float = 0.2,
    mean_log_expr: float = 0.5,
    zero_frac: float = 0.88,
    domain_shape: str = "voronoi",
    seed: int = 0,
):
    """Draw a synthetic tissue (see module docstring). Returns an ``AnnData``; hex layouts round ``n_spots``."""
    import anndata as ad
    import pandas as pd

    if dim not in (2, 3):
        raise SUICAInputError(f"dim must be 2 or 3, got {dim}")
    if n_spots < 10 or n_genes < 2 or n_domains < 1:
        raise SUICAInputError(f"need n_spots >= 10, n_genes >= 2, n_domains >= 1; got {n_spots}, {n_genes}, {n_domains}")
    if domain_shape not in DOMAIN_SHAPES:
        raise SUICAInputError(f"domain_shape must be one of {DOMAIN_SHAPES}, got {domain_shape!r}")
    if not 0.0 <= zero_frac < 1.0:
        raise SUICAInputError(f"zero_frac must be in [0, 1), got {zero_frac}")
    rng = np.random.default_rng(seed)
    x = _spots(n_spots, layout=layout, dim=dim, aspect=aspect, n_sections=n_sections, rng=rng)
    n = x.shape[0]
    lo, hi = x.min(0), x.max(0)
    u = (x - lo) / np.maximum(hi - lo, 1e-12)  # (n, dim) in [0, 1]
    # domains: Voronoi cells of centres spread by farthest-point sampling among random candidates
    cand = rng.uniform(0.1, 0.9, size=(200, dim))
    centres = [cand[0]]
    for _ in range(n_domains - 1):
        d = np.min(np.linalg.norm(cand[:, None] - np.asarray(centres)[None], axis=-1), axis=1)
        centres.append(cand[np.argmax(d)])
    centres = np.asarray(centres)  # (K, dim)
    domain = np.argmin(np.linalg.norm(u[:, None] - centres[None], axis=-1), axis=1)  # (n,)
    if domain_shape == "bands":  # concentric rings around a random centre (cortex-like layers)
        r = np.linalg.norm(u - rng.uniform(0.3, 0.7, size=dim), axis=1)
        domain = np.minimum((r / (r.max() + 1e-12) * n_domains).astype(int), n_domains - 1)
    elif domain_shape == "stripes":  # wavy stripes along a random direction
        d = rng.normal(size=dim)
        d /= np.linalg.norm(d)
        t = u @ d + 0.08 * np.sin(6 * np.pi * u[:, (1 if dim > 1 else 0)] + rng.uniform(0, 2 * np.pi))
        t = (t - t.min()) / (np.ptp(t) + 1e-12)
        domain = np.minimum((t * n_domains).astype(int), n_domains - 1)
    # smooth gradient: a random direction plus a low-frequency wave
    direction = rng.normal(size=dim)
    direction /= np.linalg.norm(direction)
    phase = rng.uniform(0, 2 * np.pi)
    g = (u - 0.5) @ direction * 2.0 + 0.5 * np.sin(2 * np.pi * u[:, 0] + phase)  # (n,)
    # gene programs
    mu = rng.normal(mean_log_expr, 1.0, size=n_genes)
    delta = rng.normal(0.0, 0.3, size=(n_domains, n_genes))
    n_markers = int(round(marker_frac * n_genes))
    marker_of = np.full(n_genes, -1)
    markers = rng.choice(n_genes, size=n_markers, replace=False)
    marker_of[markers] = np.arange(n_markers) % n_domains
    delta[marker_of[markers], markers] += rng.uniform(1.5, 3.0, size=n_markers)
    beta = np.where(rng.uniform(size=n_genes) < gradient_frac, rng.normal(0.0, 0.8, size=n_genes), 0.0)
    log_rate = mu[None, :] + delta[domain] + g[:, None] * beta[None, :]  # (n, G)
    rate = np.exp(log_rate)
    size = np.exp(rng.normal(0.0, 0.2, size=n))
    expected = size[:, None] * rate
    counts = rng.poisson(expected).astype(np.float64)
    # dropout calibrated to the target zero fraction
    logit_u = rng.logistic(size=counts.shape)  # P(drop) = sigmoid(-(log e - x0) * slope) <=> logistic noise threshold
    slope = 1.5
    le = np.log(expected)

    def zero_fraction(x0: float) -> float:
        drop = logit_u < -(le - x0) * slope
        return float(((counts == 0) | drop).mean())

    lo_x0, hi_x0 = -20.0, 20.0
    if zero_fraction(lo_x0) < zero_frac:
        for _ in range(60):
            mid = (lo_x0 + hi_x0) / 2
            if zero_fraction(mid) < zero_frac:
                lo_x0 = mid
            else:
                hi_x0 = mid
        drop = logit_u < -(le - hi_x0) * slope
        counts[drop] = 0.0
    else:
        hi_x0 = float("-inf")
    obs = pd.DataFrame(
        {"domain": pd.Categorical([f"D{d}" for d in domain]), "size_factor": size},
        index=[f"spot{i}" for i in range(n)],
    )
    var = pd.DataFrame({"marker_of": marker_of, "gradient_beta": beta}, index=[f"gene{j}" for j in range(n_genes)])
    adata = ad.AnnData(X=counts.astype(np.float32), obs=obs, var=var)
    adata.layers["counts"] = counts.astype(np.float32)
    adata.layers["rate"] = rate.astype(np.float32)
    adata.obsm["spatial"] = x
    adata.uns["synthetic"] = {
        "n_domains": n_domains, "layout": layout, "dim": dim, "seed": seed, "zero_frac_target": zero_frac,
        "domain_shape": domain_shape,
        "zero_frac": float((counts == 0).mean()), "dropout_x0": float(hi_x0),
    }
    return adata


DOMAIN_SHAPES = ("voronoi", "bands", "stripes")


def make_sparse_tissue(*, n_spots: int = 100_000, n_genes: int = 20_000, n_domains: int = 5, density: float = 0.02,
                       seed: int = 0):
    """A large sparse tissue for the scale benchmark, drawn directly in CSR (never dense).

    Spots uniform in a 1.5 x 1 rectangle, Voronoi domains; each spot draws ``m = round(density · G)`` genes (with
    replacement, duplicates summed, so at most ``m`` non-zeros) with probabilities ∝ its domain's gene rates
    (log-normal baseline + marker genes), counts ``1 + Poisson(rate)`` per draw. ``X`` is CSR float32;
    ``obs["domain"]``, ``obsm["spatial"]``.
    """
    import anndata as ad
    import pandas as pd
    import scipy.sparse as sp

    if n_spots < 10 or n_genes < 2 or not 0.0 < density <= 1.0:
        raise SUICAInputError(f"need n_spots >= 10, n_genes >= 2, density in (0, 1]; got {n_spots}, {n_genes}, {density}")
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0.0, 1.0, size=(n_spots, 2)) * np.array([1500.0, 1000.0])
    centres = rng.uniform(0.0, 1.0, size=(n_domains, 2)) * np.array([1500.0, 1000.0])
    from scipy.spatial import cKDTree

    domain = cKDTree(centres).query(xy)[1]
    m = max(1, int(round(density * n_genes)))
    log_rate = rng.normal(0.0, 1.0, size=(n_domains, n_genes))
    markers = rng.choice(n_genes, size=max(n_domains, n_genes // 20), replace=False)
    log_rate[np.arange(len(markers)) % n_domains, markers] += 2.0
    rows_all, cols_all, vals_all = [], [], []
    for k in range(n_domains):
        rows = np.flatnonzero(domain == k)
        p = np.exp(log_rate[k])
        p /= p.sum()
        cols = rng.choice(n_genes, size=(len(rows), m), p=p)  # (n_k, m) with replacement; duplicates are summed
        rows_all.append(np.repeat(rows, m))
        cols_all.append(cols.ravel())
        vals_all.append((1.0 + rng.poisson(np.exp(log_rate[k][cols]))).ravel())
    x = sp.csr_matrix((np.concatenate(vals_all).astype(np.float32), (np.concatenate(rows_all),
                                                                    np.concatenate(cols_all))),
                      shape=(n_spots, n_genes))
    x.sum_duplicates()
    obs = pd.DataFrame({"domain": pd.Categorical([f"D{d}" for d in domain])}, index=[f"spot{i}" for i in range(n_spots)])
    a = ad.AnnData(X=x, obs=obs, var=pd.DataFrame(index=[f"gene{j}" for j in range(n_genes)]))
    a.obsm["spatial"] = xy
    return a


def holdout_spots(n_spots: int, *, frac: float = 0.2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A reproducible split: ``(train_idx, test_idx)`` (sorted int arrays), ``round(frac·n)`` spots held out."""
    if not 0.0 < frac < 1.0:
        raise SUICAInputError(f"holdout frac must be in (0, 1), got {frac}")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n_spots)
    n_test = int(round(frac * n_spots))
    if n_test < 1 or n_test >= n_spots:
        raise SUICAInputError(f"holdout frac {frac} leaves no train or no test spots for n_spots={n_spots}")
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def mask_genes(adata, *, gene_frac: float = 0.3, spot_frac: float = 0.5, seed: int = 0):
    """Zero ``gene_frac`` of the genes in ``spot_frac`` of the spots (gene-imputation degradation).

    Returns a copy with the masked entries of ``X`` set to 0 and ``layers["gene_mask"]`` (1 = masked).
    """
    for name, v in (("gene_frac", gene_frac), ("spot_frac", spot_frac)):
        if not 0.0 < v <= 1.0:
            raise SUICAInputError(f"{name} must be in (0, 1], got {v}")
    rng = np.random.default_rng(seed)
    out = adata.copy()
    n, g = out.shape
    spots = rng.choice(n, size=max(1, int(round(spot_frac * n))), replace=False)
    mask = np.zeros((n, g), dtype=bool)
    for i in spots:
        mask[i, rng.choice(g, size=max(1, int(round(gene_frac * g))), replace=False)] = True
    x = np.asarray(out.X.toarray() if hasattr(out.X, "toarray") else out.X, dtype=np.float32).copy()
    x[mask] = 0.0
    out.X = x
    out.layers["gene_mask"] = mask.astype(np.float32)
    return out


def add_noise(adata, *, scale: float = 0.5, seed: int = 0):
    """Non-negative noise that keeps the zero-inflation (the author's advice, official issue #1).

    On the support ``y > 0``: ``y' = y + |ε|``, ``ε ~ N(0, (scale · mean(y[y>0]))²)``; zeros stay zeros.
    Returns a copy; the clean values are kept in ``layers["clean"]``.
    """
    if scale < 0 or not np.isfinite(scale):
        raise SUICAInputError(f"noise scale must be a finite number >= 0, got {scale}")
    rng = np.random.default_rng(seed)
    out = adata.copy()
    x = np.asarray(out.X.toarray() if hasattr(out.X, "toarray") else out.X, dtype=np.float32).copy()
    out.layers["clean"] = x.copy()
    nz = x > 0
    sd = scale * float(x[nz].mean()) if nz.any() else 0.0
    x[nz] += np.abs(rng.normal(0.0, sd, size=int(nz.sum()))).astype(np.float32)
    out.X = x
    return out
