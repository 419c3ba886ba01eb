"""Scoring, once before training: semantic consistency, local density and their joint distribution in rank form.

Reconstruction of Yang et al., *When Dynamic Data Selection Meets Data Augmentation* (ICML 2025, arXiv 2505.03809)
[derived, unverified: no official code is public; every step below is an option].

With L2-normalised image features ``z [N, d]``, class text features ``t [C, d]`` and labels ``y [N]``:

* semantic consistency ``c_i = softmax_c(<z_i, t_c> / T)[y_i]`` (``consistency="softmax"``, default, T = 0.01) or the
  raw cosine ``<z_i, t_{y_i}>`` (``consistency="cosine"``);
* local density within the class ``rho_i = (1/k) sum_{j in kNN_y(i)} <z_i, z_j>`` (``density="cosine"``) or the
  Gaussian-kernel variant ``(1/k) sum exp(-||z_i - z_j||^2 / sigma^2)``, sigma = the median kNN distance;
* per-class empirical CDF ranks ``u_i = F_rho(rho_i)``, ``v_i = F_c(c_i)`` in (0, 1] (scale-free: invariant to any
  strictly increasing transform of rho or c);
* augmentation suitability ``a_i = v_i (1 - u_i)`` (clean and sparse samples are the ones to augment);
* noise / ambiguity gate ``g_i = 1[v_i >= q_noise]`` (``gate="quantile"``), or ``g_i = 1[P(clean | c_i) >= 0.5]``
  from scikit-learn's two-component ``GaussianMixture`` on ``c`` (``gate="gmm"``, DivideMix style), or all ones
  (``gate="off"``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from select_augment.errors import SelectAugmentError

ConsistencyKind = Literal["softmax", "cosine"]
DensityKind = Literal["cosine", "gaussian"]
GateKind = Literal["quantile", "gmm", "off"]


@dataclass(frozen=True)
class Scores:
    """Per-sample scores, all arrays ``[N]`` indexed by sample id.

    Attributes:
        consistency: ``c`` (softmax probability at the label, or the raw cosine).
        density: ``rho`` (mean similarity to the k nearest same-class neighbours).
        u: per-class CDF rank of ``rho`` in (0, 1].
        v: per-class CDF rank of ``c`` in (0, 1].
        suitability: ``a = v (1 - u)`` in [0, 1).
        gate: boolean, ``True`` = kept (clean enough), ``False`` = suppressed as noisy/ambiguous.
        labels: the labels ``y``.
        num_classes: ``C``.
    """

    consistency: np.ndarray
    density: np.ndarray
    u: np.ndarray
    v: np.ndarray
    suitability: np.ndarray
    gate: np.ndarray
    labels: np.ndarray
    num_classes: int
    info: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.labels)

    @classmethod
    def uniform(cls, n: int, *, labels: np.ndarray | None = None) -> Scores:
        """Scores switched off: constant suitability 0.5, every sample kept (selection reduces to InfoBatch/random)."""
        y = np.zeros(n, dtype=np.int64) if labels is None else np.asarray(labels, dtype=np.int64)
        half = np.full(n, 0.5)
        return cls(consistency=half.copy(), density=half.copy(), u=half.copy(), v=half.copy(),
                   suitability=np.full(n, 0.25), gate=np.ones(n, dtype=bool), labels=y,
                   num_classes=int(y.max()) + 1 if n else 1, info={"uniform": True})

    def with_gate(self, gate: np.ndarray) -> Scores:
        return Scores(self.consistency, self.density, self.u, self.v, self.suitability, np.asarray(gate, bool),
                      self.labels, self.num_classes, dict(self.info))


def _finite_2d(name: str, x: Any) -> np.ndarray:
    a = np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        raise SelectAugmentError(f"{name} must be a non-empty 2-D array [n, dim], got shape {a.shape}")
    if not np.isfinite(a).all():
        raise SelectAugmentError(f"{name} must be finite (found NaN or inf)")
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    if (norms == 0).any():
        raise SelectAugmentError(f"{name} has an all-zero row; cosine similarity is undefined")
    return a / norms


def check_labels(labels: Any, n: int, num_classes: int) -> np.ndarray:
    y = np.asarray(labels)
    if y.ndim != 1 or len(y) != n:
        raise SelectAugmentError(f"labels must be 1-D with one label per feature row ({n}), got shape {y.shape}")
    if y.dtype.kind == "f":
        if not np.isfinite(y).all() or not (y == np.round(y)).all():
            raise SelectAugmentError("labels must be integers (found NaN, inf or a fraction)")
    elif y.dtype.kind not in "iu":
        raise SelectAugmentError(f"labels must be integers, got dtype {y.dtype}")
    y = y.astype(np.int64)
    if len(y) and (y.min() < 0 or y.max() >= num_classes):
        raise SelectAugmentError(f"labels must lie in [0, {num_classes}) (one class per text feature row), "
                                 f"got values in [{y.min()}, {y.max()}]")
    return y


def class_ranks(values: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per-class empirical CDF ``F(x) = #{j in class : x_j <= x} / n_class`` in (0, 1] (ties share the max rank)."""
    from scipy.stats import rankdata

    out = np.empty(len(values), dtype=np.float64)
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        out[idx] = rankdata(values[idx], method="max") / len(idx)
    return out


def semantic_consistency(z: np.ndarray, t: np.ndarray, y: np.ndarray, *, temperature: float,
                         kind: ConsistencyKind = "softmax") -> np.ndarray:
    """``c_i = softmax_c(<z_i, t_c> / T)[y_i]`` (or ``<z_i, t_{y_i}>`` for ``kind="cosine"``); z, t normalised."""
    sims = z @ t.T  # [N, C]
    if kind == "cosine":
        return sims[np.arange(len(y)), y]
    logits = sims / temperature
    logits = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    return p[np.arange(len(y)), y]


def local_density(z: np.ndarray, y: np.ndarray, *, k: int, kind: DensityKind = "cosine") -> np.ndarray:
    """Mean similarity of each sample to its ``k`` nearest neighbours of the same class (self excluded).

    Cosine: ``rho_i = (1/k) sum_j <z_i, z_j>``; Gaussian: ``(1/k) sum_j exp(-||z_i - z_j||^2 / sigma^2)`` with sigma
    the median kNN distance over the data set (so that the kernel is scale-free)."""
    rho = np.empty(len(y), dtype=np.float64)
    knn_sims: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        zc = z[idx]
        g = zc @ zc.T  # [n_c, n_c] cosine Gram
        np.fill_diagonal(g, -np.inf)
        part = np.partition(-g, k - 1, axis=1)[:, :k]  # the k largest similarities (negated), unordered
        knn_sims[int(c)] = (idx, -part)
    if kind == "cosine":
        for idx, s in knn_sims.values():
            rho[idx] = s.mean(axis=1)
        return rho
    # ||z_i - z_j||^2 = 2 - 2 <z_i, z_j> for unit vectors
    d2 = {c: np.maximum(2.0 - 2.0 * s, 0.0) for c, (_, s) in knn_sims.items()}
    sigma2 = float(np.median(np.concatenate([v.ravel() for v in d2.values()])))
    if sigma2 <= 0:
        sigma2 = 1.0
    for c, (idx, _) in knn_sims.items():
        rho[idx] = np.exp(-d2[c] / sigma2).mean(axis=1)
    return rho


def gmm_clean_probability(c: np.ndarray, *, seed: int = 0) -> np.ndarray:
    """``P(clean | c_i)`` from scikit-learn's two-component 1-D ``GaussianMixture`` on ``c`` (EM, full covariance;
    the clean component is the one with the larger mean), as in DivideMix's loss split."""
    from sklearn.mixture import GaussianMixture

    x = np.asarray(c, dtype=np.float64).reshape(-1, 1)  # [N, 1]
    if len(x) < 2 or np.ptp(x) == 0:
        return np.ones(len(x))  # one value: nothing to split, every sample is kept
    lo, hi = np.quantile(x, [0.1, 0.9])
    gm = GaussianMixture(n_components=2, covariance_type="full", reg_covar=1e-6, max_iter=200, tol=1e-8,
                         means_init=np.array([[lo], [hi]]), random_state=seed).fit(x)
    return gm.predict_proba(x)[:, int(np.argmax(gm.means_[:, 0]))]


def score(
    features: Any,
    labels: Any,
    *,
    text_features: Any,
    k: int = 10,
    temperature: float = 0.01,
    consistency: ConsistencyKind = "softmax",
    density: DensityKind = "cosine",
    gate: GateKind = "quantile",
    q_noise: float = 0.1,
) -> Scores:
    """Score every sample once: consistency ``c``, density ``rho``, ranks ``u, v``, suitability ``a`` and gate ``g``.

    Args:
        features: image features ``[N, d]`` (any scale: rows are L2-normalised here).
        labels: integer labels ``[N]`` in ``[0, C)``.
        text_features: class text features ``[C, d]`` (e.g. CLIP's "a photo of a {class}").
        k: neighbours of the within-class kNN density (``1 <= k < `` the smallest class size).
        temperature: ``T > 0`` of the softmax consistency (CLIP logit scale 100 = T 0.01).
        consistency: ``"softmax"`` (default) or ``"cosine"``.
        density: ``"cosine"`` (default) or ``"gaussian"``.
        gate: ``"quantile"`` (``g = 1[v >= q_noise]``), ``"gmm"`` or ``"off"``.
        q_noise: the quantile gate's threshold in [0, 1).
    """
    if consistency not in ("softmax", "cosine"):
        raise SelectAugmentError(f"consistency must be 'softmax' or 'cosine', got {consistency!r}")
    if density not in ("cosine", "gaussian"):
        raise SelectAugmentError(f"density must be 'cosine' or 'gaussian', got {density!r}")
    if gate not in ("quantile", "gmm", "off"):
        raise SelectAugmentError(f"gate must be 'quantile', 'gmm' or 'off', got {gate!r}")
    if not (isinstance(temperature, (int, float)) and np.isfinite(temperature) and temperature > 0):
        raise SelectAugmentError(f"temperature must be a finite number > 0, got {temperature!r}")
    if not (isinstance(q_noise, (int, float)) and 0.0 <= q_noise < 1.0):
        raise SelectAugmentError(f"q_noise must be in [0, 1), got {q_noise!r}")
    z = _finite_2d("features", features)
    t = _finite_2d("text_features", text_features)
    if t.shape[1] != z.shape[1]:
        raise SelectAugmentError(f"text_features must have the features' dimension {z.shape[1]}, got {t.shape[1]}")
    y = check_labels(labels, len(z), len(t))
    counts = np.bincount(y, minlength=len(t))
    present = counts[counts > 0]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 or k >= present.min():
        raise SelectAugmentError(f"k must be an integer with 1 <= k < the smallest class size ({present.min()}), "
                                 f"got {k!r}")
    c = semantic_consistency(z, t, y, temperature=float(temperature), kind=consistency)
    rho = local_density(z, y, k=int(k), kind=density)
    u = class_ranks(rho, y)
    v = class_ranks(c, y)
    a = v * (1.0 - u)
    info: dict[str, Any] = {"k": int(k), "temperature": float(temperature), "consistency": consistency,
                            "density": density, "gate": gate, "q_noise": float(q_noise)}
    if gate == "quantile":
        g = v >= q_noise
    elif gate == "gmm":
        g = gmm_clean_probability(c) >= 0.5
    else:
        g = np.ones(len(y), dtype=bool)
    info["gated_out"] = int((~g).sum())
    return Scores(consistency=c, density=rho, u=u, v=v, suitability=a, gate=np.asarray(g, bool), labels=y,
                  num_classes=len(t), info=info)


def joint_density(scores: Scores, *, grid: int = 48) -> dict[str, np.ndarray]:
    """The joint density ``p(u, v)`` of the rank pairs from ``scipy.stats.gaussian_kde``: its value at each sample
    (``at_samples [N]``) and on a ``grid x grid`` mesh over [0, 1]^2 (``mesh [grid, grid]``, rows = v, cols = u)."""
    from scipy.stats import gaussian_kde

    pts = np.stack([scores.u, scores.v])  # [2, N]
    kde = gaussian_kde(pts)
    g = np.linspace(0.0, 1.0, grid)
    uu, vv = np.meshgrid(g, g)
    mesh = kde(np.stack([uu.ravel(), vv.ravel()])).reshape(grid, grid)
    return {"at_samples": kde(pts), "mesh": mesh, "axis": g}


def regions(scores: Scores) -> np.ndarray:
    """Region of each sample in the (u, v) plane: ``"suppressed"`` (gated out), ``"redundant"`` (u > 1/2 and
    v > 1/2: dense and clean, easy), ``"suitable"`` (u <= 1/2 and v > 1/2: sparse and clean, augment these),
    ``"uncertain"`` (the rest)."""
    out = np.full(len(scores), "uncertain", dtype=object)
    clean = scores.v > 0.5
    out[clean & (scores.u > 0.5)] = "redundant"
    out[clean & (scores.u <= 0.5)] = "suitable"
    out[~scores.gate] = "suppressed"
    return out


def toy_encoder(labels: Any, *, num_classes: int, dim: int | None = None, noise: float = 0.1,
                seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Analytic toy encoder for exact tests: text features ``t_c = e_c`` (orthonormal), image features
    ``z_i = t_{y_i} + noise * N(0, I)``. Returns ``(features [N, dim], text_features [C, dim])``."""
    y = np.asarray(labels, dtype=np.int64)
    dim = num_classes if dim is None else dim
    if dim < num_classes:
        raise SelectAugmentError(f"dim must be >= num_classes ({num_classes}), got {dim}")
    t = np.eye(num_classes, dim)
    rng = np.random.default_rng(seed)
    return t[y] + noise * rng.standard_normal((len(y), dim)), t


def fit_adapter(features: Any, labels: Any, text_features: Any, *, epochs: int = 50, lr: float = 1e-2,
                temperature: float = 0.01, seed: int = 0) -> np.ndarray:
    """Optional "dataset adaptation": a linear adapter ``W [d, d]`` (initialised to the identity) on the frozen image
    features, trained with CLIP-style cross-entropy ``CE(softmax(<W z_i, t_c> / T), y_i)`` on the training labels
    (full batch, Adam). Returns the adapted, re-normalised features ``[N, d]``.

    Trained on the same labels it then scores, the adapter can memorise label noise: keep ``epochs`` small."""
    import torch

    z = torch.as_tensor(_finite_2d("features", features), dtype=torch.float32)
    t = torch.as_tensor(_finite_2d("text_features", text_features), dtype=torch.float32)
    y = torch.as_tensor(check_labels(labels, len(z), len(t)))
    g = torch.Generator().manual_seed(seed)
    w = torch.nn.Parameter(torch.eye(z.shape[1]) + 1e-3 * torch.randn(z.shape[1], z.shape[1], generator=g))
    opt = torch.optim.Adam([w], lr=lr)
    for _ in range(epochs):
        zz = torch.nn.functional.normalize(z @ w, dim=1)
        loss = torch.nn.functional.cross_entropy(zz @ t.T / temperature, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return torch.nn.functional.normalize(z @ w, dim=1).numpy().astype(np.float64)
