"""The no-relation floor: gradient boosting on the entity's own columns (RelBench's LightGBM analogue, here
scikit-learn's ``HistGradientBoosting``), and a popularity ranking for recommendation."""

from __future__ import annotations

import numpy as np

from relgnn.graph import RelGraph
from relgnn.train import TaskData


def own_features(graph: RelGraph, td: TaskData, split: str) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the entity table's own encoded columns (+ its age at the seed time if it is time-stamped)."""
    st = graph.data[td.entity]
    xs, order = [], []
    for g in td.splits[split]:
        f = [st.x_num[g.ids].numpy(), st.x_cat[g.ids].numpy().astype(float)]
        if "time" in st:
            f.append(((g.t - st.time[g.ids]).numpy() / 86400.0)[:, None])
        xs.append(np.concatenate(f, 1))
        order.append(g.pos)
    x = np.zeros((td.n_rows[split], xs[0].shape[1]))
    for xi, p in zip(xs, order):
        x[p] = xi
    return x, np.asarray(td.targets[split]) if td.kind != "recommendation" else np.zeros(0)


def floor_predictions(graph: RelGraph, td: TaskData, split: str = "test", *, learning_rate: float = 0.1,
                      max_leaf_nodes: int = 31, max_iter: int = 100, lookback: int | None = None,
                      seed: int = 0, train_rows: np.ndarray | None = None) -> np.ndarray:
    """Predictions of the no-relation floor on ``split`` ("val" or "test"), trained on the training split only.

    Entity tasks: ``HistGradientBoosting`` (``learning_rate``, ``max_leaf_nodes``, ``max_iter``) on the entity's own
    columns (the same encoded columns the GNN's table encoder reads, plus the row's age at the seed time).
    Recommendation: the ``k`` destinations most often in the training labels of the last ``lookback`` training seed
    times (all of them when ``None``), the same list for every row. These knobs are what ``reproduce`` tunes on the
    validation split, on a grid as large as the GNNs'. ``train_rows`` (positions in the training table) restricts
    training to those rows, e.g. the same rows a GNN trains on (default: every training row). Categorical columns
    (torch-frame's inferred ``categorical`` stype) are given to the trees as categories when they have at most 255
    values (scikit-learn's limit), as numeric codes otherwise.
    """
    if split not in ("val", "test"):
        raise ValueError(f"split must be 'val' or 'test', got {split!r}")
    if td.kind == "recommendation":
        if lookback is not None and lookback <= 0:
            raise ValueError(f"lookback must be > 0 or None, got {lookback}")
        n_dst = graph.num_nodes(td.dst)
        counts = np.zeros(n_dst)
        groups = sorted(td.splits["train"], key=lambda g: g.t)
        keep = None if train_rows is None else set(int(r) for r in train_rows)
        for g in groups[-lookback:] if lookback else groups:
            for p, lst in zip(g.pos, g.y):
                if keep is None or int(p) in keep:
                    np.add.at(counts, np.asarray(lst, dtype=int), 1)
        top = np.argsort(-counts, kind="stable")[: td.k]
        return np.tile(top, (td.n_rows[split], 1))
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    if learning_rate <= 0:
        raise ValueError(f"learning_rate must be > 0, got {learning_rate}")
    x_tr, y_tr = own_features(graph, td, "train")
    if train_rows is not None:
        x_tr, y_tr = x_tr[np.asarray(train_rows)], y_tr[np.asarray(train_rows)]
    x_ev, _ = own_features(graph, td, split)
    spec = graph.specs[td.entity]
    cat = np.zeros(x_tr.shape[1], dtype=bool)
    cat[len(spec.num_cols):len(spec.num_cols) + len(spec.cat_cols)] = [c <= 255 for c in spec.cat_cards]
    cat = cat if cat.any() else None
    if td.kind == "binary":
        m = HistGradientBoostingClassifier(max_iter=max_iter, learning_rate=learning_rate, categorical_features=cat,
                                           max_leaf_nodes=max_leaf_nodes, random_state=seed)
        return m.fit(x_tr, y_tr.astype(int)).predict_proba(x_ev)[:, 1]
    m = HistGradientBoostingRegressor(loss="absolute_error", max_iter=max_iter, learning_rate=learning_rate,
                                      categorical_features=cat, max_leaf_nodes=max_leaf_nodes,
                                      random_state=seed).fit(x_tr, y_tr)
    return np.clip(m.predict(x_ev), *td.clamp)


def gbdt_floor(graph: RelGraph, td: TaskData, *, seed: int = 0) -> np.ndarray:
    """Test predictions of the floor at its default knobs (see :func:`floor_predictions`)."""
    return floor_predictions(graph, td, "test", seed=seed)
