"""AnnData in and out: validation, the official preprocessing, ``.h5ad`` reading/writing.

Preprocessing follows the official ``scripts/filter_and_normalize.py`` (scanpy):
``filter_cells(min_counts=200)``, ``filter_genes(min_counts=3)``, drop genes with any count > 200,
``normalize_total(target_sum=200)`` — no log (the GAE applies ``log1p`` internally). Deliberate differences: the
thresholds act on raw counts (``layers["counts"]`` when present), and the gene filters can be computed on the
training spots only (``fit_on=train_idx``) so held-out spots take no part in feature selection.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from suica.coords import check_coords
from suica.errors import SUICAInputError


def dense(x) -> np.ndarray:
    """``(n, G)`` float32 dense array from a dense or scipy-sparse matrix."""
    if hasattr(x, "toarray"):
        x = x.toarray()
    return np.asarray(x, dtype=np.float32)


def as_csr(x):
    """``(n, G)`` float32 CSR matrix from a dense or scipy-sparse matrix (no densification of sparse input)."""
    import scipy.sparse as sp

    if sp.issparse(x):
        return sp.csr_matrix(x, dtype=np.float32)
    return sp.csr_matrix(np.asarray(x, dtype=np.float32))


def expression(adata, layer: str | None = None):
    """``adata.X`` or ``adata.layers[layer]`` (a clear error naming the layers when it is missing)."""
    if layer is None:
        return adata.X
    if layer not in adata.layers:
        raise SUICAInputError(f"layer {layer!r} is not in adata.layers (available: {sorted(adata.layers)}); "
                              "pass one of these or None for adata.X")
    return adata.layers[layer]


def validate_adata(adata, *, min_spots: int = 2, require_spatial: bool = True, layer: str | None = None,
                   sparse: bool = False, allow_empty: bool = False) -> tuple:
    """Check an AnnData for SUICA and return ``(X (n, G) float32, coords (n, d) float64)``.

    ``X`` is ``adata.X`` (or ``adata.layers[layer]``), returned dense, or as CSR when ``sparse=True`` (sparse input
    is never densified then: checks run on the stored non-zeros and on row/column sums).

    Errors: not an AnnData; missing ``obsm["spatial"]``; coordinates not 2-D/3-D or NaN/inf; expression NaN/inf or
    negative; all-zero genes or spots; fewer than ``min_spots`` spots.
    """
    try:
        import anndata as ad
    except ImportError as exc:  # pragma: no cover
        raise ImportError("suica needs anndata") from exc
    if not isinstance(adata, ad.AnnData):
        raise SUICAInputError(f"expected an anndata.AnnData, got {type(adata).__name__}")
    if require_spatial and "spatial" not in adata.obsm:
        raise SUICAInputError('adata.obsm["spatial"] is missing: SUICA needs the spot coordinates (n_spots, 2 or 3)')
    coords = check_coords(adata.obsm["spatial"], name='adata.obsm["spatial"]') if require_spatial else None
    what = "adata.X" if layer is None else f'adata.layers["{layer}"]'
    raw = expression(adata, layer)
    x = as_csr(raw) if sparse else dense(raw)
    vals = x.data if sparse else x
    if x.ndim != 2 or x.shape[1] < 1:
        raise SUICAInputError(f"{what} must be (n_spots, n_genes), got shape {x.shape}")
    if not np.isfinite(vals).all():
        raise SUICAInputError(f"{what} contains NaN or inf ({int((~np.isfinite(vals)).sum())} entries)")
    if (vals < 0).any():
        raise SUICAInputError(f"{what} contains negative expression values (min {float(vals.min()):.4g}); "
                              "counts must be >= 0")
    if x.shape[0] < min_spots:
        raise SUICAInputError(f"adata has {x.shape[0]} spots; at least {min_spots} are needed")
    if allow_empty:  # interpolators: all-zero genes / spots are harmless
        return x, coords
    zero_genes = np.flatnonzero(np.asarray(x.sum(axis=0)).ravel() == 0)
    if zero_genes.size:
        names = list(adata.var_names[zero_genes[:5]])
        raise SUICAInputError(f"{zero_genes.size} all-zero genes (e.g. {names}); filter them first (suica.data.preprocess)")
    zero_spots = np.flatnonzero(np.asarray(x.sum(axis=1)).ravel() == 0)
    if zero_spots.size:
        names = list(adata.obs_names[zero_spots[:5]])
        raise SUICAInputError(f"{zero_spots.size} all-zero spots (e.g. {names}); filter them first (suica.data.preprocess)")
    return x, coords


def preprocess(
    adata,
    *,
    min_counts_spot: float = 200,
    min_counts_gene: float = 3,
    max_count: float | None = 200,
    target_sum: float = 200,
    fit_on: np.ndarray | None = None,
):
    """Official filtering + ``normalize_total`` (see module docstring). Returns a new AnnData.

    Raw counts are kept in ``layers["counts"]``; ``X`` becomes the normalised counts (CSR when the counts are
    sparse: nothing is densified; dense otherwise). ``fit_on``: indices (or a
    boolean mask) of the spots whose counts decide the gene filters (default: all spots, as released).
    """
    import scanpy as sc
    import scipy.sparse as sp

    if "spatial" not in adata.obsm:
        raise SUICAInputError('adata.obsm["spatial"] is missing: SUICA needs the spot coordinates (n_spots, 2 or 3)')
    out = adata.copy()
    src = out.layers["counts"] if "counts" in out.layers else out.X
    sparse = sp.issparse(src)  # sparse counts stay sparse (CSR) throughout; dense stay dense
    raw = as_csr(src) if sparse else dense(src)
    vals = raw.data if sparse else raw
    if not np.isfinite(vals).all() or (vals < 0).any():
        raise SUICAInputError("counts must be finite and >= 0")
    out.X = raw.copy()
    keep_spot = np.asarray(raw.sum(axis=1)).ravel() >= min_counts_spot
    sel = np.ones(raw.shape[0], dtype=bool)
    if fit_on is not None:
        sel = np.zeros(raw.shape[0], dtype=bool)
        sel[np.asarray(fit_on)] = True
    ref = raw[sel & keep_spot]
    if ref.shape[0] == 0:
        raise SUICAInputError(f"no spot has >= min_counts_spot={min_counts_spot} counts")
    keep_gene = np.asarray(ref.sum(axis=0)).ravel() >= min_counts_gene
    if max_count is not None:
        gene_max = ref.max(axis=0)
        keep_gene &= np.asarray(gene_max.toarray() if sp.issparse(gene_max) else gene_max).ravel() <= max_count
    if not keep_gene.any():
        raise SUICAInputError("the gene filters removed every gene; lower min_counts_gene or raise max_count")
    out = out[keep_spot][:, keep_gene].copy()
    out.layers["counts"] = as_csr(out.X) if sparse else dense(out.X).copy()
    # spots can become empty after gene filtering
    nz = np.asarray(out.layers["counts"].sum(axis=1)).ravel() > 0
    if not nz.all():
        out = out[nz].copy()
    out.X = out.layers["counts"].copy()
    sc.pp.normalize_total(out, target_sum=target_sum)
    out.X = as_csr(out.X) if sparse else dense(out.X)
    out.uns["suica_preprocess"] = {"min_counts_spot": min_counts_spot, "min_counts_gene": min_counts_gene,
                                   "max_count": max_count, "target_sum": target_sum,
                                   "genes_fit_on": "all" if fit_on is None else "subset"}
    return out


def read_h5ad(path: str | Path, *, what: str = ".h5ad file"):
    """Read an ``.h5ad`` file; errors name ``what`` (e.g. ``--data``) and the file."""
    import anndata as ad
    from icml25.errors import require_hdf5

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{what}: no such .h5ad file: {str(path)!r}")
    if path.suffix != ".h5ad":
        raise SUICAInputError(f"{what}: expected a .h5ad file, got {str(path)!r}")
    require_hdf5(path, what=what)
    return ad.read_h5ad(path)


def write_h5ad(adata, path: str | Path) -> Path:
    """Write ``adata`` to ``path`` atomically (temp file + rename)."""
    import os

    path = Path(path)
    if path.suffix != ".h5ad":
        raise SUICAInputError(f"output path must end in .h5ad, got {str(path)!r}")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise SUICAInputError(f"output path {str(path)!r}: {str(parent)!r} is a file, not a folder")
            break
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}.h5ad")
    adata.write_h5ad(tmp)
    os.replace(tmp, path)
    return path
