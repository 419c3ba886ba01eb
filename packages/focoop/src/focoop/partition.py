"""Dirichlet non-IID partitioning with few-shot sampling (the official FOCoOp semantics, with two fixes).

Official semantics: P = Dir(α·1_{n_clients}) drawn once per class (C rows), transposed to (n_clients, C); client j
receives floor(P_jc·N_c) samples of class c as a contiguous slice of that class's samples (N_c = class size; with
balanced classes this equals the official floor(P_jc/C·N)). Each client then draws ``num_shot`` samples per present
class for training. The test split reuses the same P.

Fixes (official behaviour behind flags): (1) a seeded shuffle within each class before slicing
(``shuffle_within_class``; the official contiguous slice ties sample order to client index); (2) few-shot sampling is
without replacement whenever at least ``num_shot`` samples exist (``official_shots=True``: only when strictly more).

Validation split (not in the official code, which has none): client j's validation set is the rest of its Dirichlet
share of the **training** pool after its few-shot draw (:func:`dirichlet_split`), so it follows the client's label
distribution, never overlaps its training shots, and comes from a different pool of images than the test split.
Hyper-parameters are chosen on it (``focoop reproduce``), never on the test split.

Pathological split (:func:`pathological_proportions`, the official code's alternative; "each client sees a few
classes"): client j holds k classes, taken round-robin from a seeded permutation of the C classes (so every class is
held by someone when n_clients·k ≥ C); P_jc = 1/(number of holders of c) for a held class, 0 otherwise, and the
shares go through the same slicing, few-shot and validation code as the Dirichlet split. Shots always come from the
training pool (the official pathological CIFAR loader trains on the test set; see the paper note).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from focoop.errors import FOCoOpConfigError


@dataclass
class Partition:
    """proportions: (n_clients, C) Dirichlet shares (columns sum to 1); indices: one index array per client."""

    proportions: np.ndarray
    indices: list[np.ndarray]


def dirichlet_proportions(n_clients: int, n_classes: int, *, alpha: float, seed: int) -> np.ndarray:
    """P (n_clients, C): column c ~ Dir(α·1_{n_clients}) (one draw per class, then transposed)."""
    if not (isinstance(alpha, (int, float)) and alpha > 0):
        raise FOCoOpConfigError(f"alpha (Dirichlet concentration) must be > 0, got {alpha}")
    if n_clients < 1:
        raise FOCoOpConfigError(f"n_clients must be >= 1, got {n_clients}")
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.full(n_clients, float(alpha)), size=n_classes).T  # (C, n) -> (n, C)


def split_by_proportions(labels, proportions: np.ndarray, *, seed: int,
                         shuffle_within_class: bool = True) -> Partition:
    """Give client j floor(P_jc·N_c) samples of class c as disjoint slices of class c's (shuffled) indices."""
    labels = np.asarray(labels)
    n_clients, n_classes = proportions.shape
    if labels.size < n_clients:
        raise FOCoOpConfigError(f"n_clients ({n_clients}) must not exceed the number of samples ({labels.size})")
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        raise FOCoOpConfigError(f"labels must lie in [0, {n_classes}), got range [{labels.min()}, {labels.max()}]")
    rng = np.random.default_rng(seed)
    parts: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
    for c in range(n_classes):
        idx = np.flatnonzero(labels == c)
        if shuffle_within_class:
            idx = idx[rng.permutation(idx.size)]
        counts = np.floor(proportions[:, c] * idx.size).astype(np.int64)
        bounds = np.concatenate([[0], np.cumsum(counts)])
        for j in range(n_clients):
            parts[j].append(idx[bounds[j]:bounds[j + 1]])
    return Partition(proportions=proportions, indices=[np.sort(np.concatenate(p)) for p in parts])


def few_shot(indices: np.ndarray, labels, *, num_shot: int, seed: int, official_shots: bool = False) -> np.ndarray:
    """Draw ``num_shot`` samples per class present in ``indices`` (with replacement only if too few)."""
    if num_shot < 1:
        raise FOCoOpConfigError(f"num_shot must be >= 1, got {num_shot}")
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    out = []
    for c in np.unique(labels[indices]):
        pool = indices[labels[indices] == c]
        enough = pool.size > num_shot if official_shots else pool.size >= num_shot
        out.append(rng.choice(pool, size=num_shot, replace=not enough))
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


@dataclass
class FewShotSplit:
    """Per-client index arrays: ``shots`` (train pool), ``val`` (train pool, disjoint from the shots), ``test``
    (test pool); ``proportions`` (n_clients, C) is the Dirichlet matrix shared by all three."""

    shots: list[np.ndarray]
    val: list[np.ndarray]
    test: list[np.ndarray]
    proportions: np.ndarray


def pathological_proportions(n_clients: int, n_classes: int, *, classes_per_client: int, seed: int) -> np.ndarray:
    """P (n_clients, C) of the pathological split (module docstring); columns of held classes sum to 1."""
    if n_clients < 1:
        raise FOCoOpConfigError(f"n_clients must be >= 1, got {n_clients}")
    if not 1 <= classes_per_client <= n_classes:
        raise FOCoOpConfigError(f"classes_per_client must be in [1, {n_classes}], got {classes_per_client}")
    perm = np.random.default_rng(seed).permutation(n_classes)
    held = np.zeros((n_clients, n_classes))
    for j in range(n_clients):
        held[j, perm[(j * classes_per_client + np.arange(classes_per_client)) % n_classes]] = 1.0
    holders = held.sum(0)
    return np.divide(held, holders, out=np.zeros_like(held), where=holders > 0)


def split_from_proportions(train_labels, test_labels, props: np.ndarray, *, num_shot: int, seed: int,
                           shuffle_within_class: bool = True, official_shots: bool = False) -> FewShotSplit:
    """Few-shot train, validation and test indices of every client from a share matrix P (n_clients, C)."""
    train = split_by_proportions(train_labels, props, seed=seed + 1, shuffle_within_class=shuffle_within_class)
    test = split_by_proportions(test_labels, props, seed=seed + 2, shuffle_within_class=shuffle_within_class)
    shots = [few_shot(idx, train_labels, num_shot=num_shot, seed=seed + 100 + j, official_shots=official_shots)
             for j, idx in enumerate(train.indices)]
    val = [np.setdiff1d(idx, s).astype(np.int64) for idx, s in zip(train.indices, shots)]
    return FewShotSplit(shots=shots, val=val, test=test.indices, proportions=props)


def pathological_split(train_labels, test_labels, *, n_clients: int, n_classes: int, classes_per_client: int,
                       num_shot: int, seed: int, shuffle_within_class: bool = True,
                       official_shots: bool = False) -> FewShotSplit:
    """Few-shot train, validation and test indices of the pathological split (module docstring)."""
    props = pathological_proportions(n_clients, n_classes, classes_per_client=classes_per_client, seed=seed)
    return split_from_proportions(train_labels, test_labels, props, num_shot=num_shot, seed=seed,
                                  shuffle_within_class=shuffle_within_class, official_shots=official_shots)


def dirichlet_split(train_labels, test_labels, *, n_clients: int, n_classes: int, alpha: float, num_shot: int,
                    seed: int, shuffle_within_class: bool = True, official_shots: bool = False) -> FewShotSplit:
    """Few-shot train, validation and test indices of every client from one Dirichlet matrix P (see the module
    docstring); the shots and the test split are exactly those of :func:`dirichlet_few_shot`."""
    props = dirichlet_proportions(n_clients, n_classes, alpha=alpha, seed=seed)
    return split_from_proportions(train_labels, test_labels, props, num_shot=num_shot, seed=seed,
                                  shuffle_within_class=shuffle_within_class, official_shots=official_shots)


def dirichlet_few_shot(train_labels, test_labels, *, n_clients: int, n_classes: int, alpha: float, num_shot: int,
                       seed: int, shuffle_within_class: bool = True,
                       official_shots: bool = False) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """Per-client few-shot train indices and test indices sharing one Dirichlet matrix P; returns (train, test, P)."""
    sp = dirichlet_split(train_labels, test_labels, n_clients=n_clients, n_classes=n_classes, alpha=alpha,
                         num_shot=num_shot, seed=seed, shuffle_within_class=shuffle_within_class,
                         official_shots=official_shots)
    return sp.shots, sp.test, sp.proportions
