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


def gbdt_floor(graph: RelGraph, td: TaskData, *, seed: int = 0) -> np.ndarray:
    """Test predictions of the floor: GBDT on own columns (entity tasks) or train-label popularity (recommendation)."""
    if td.kind == "recommendation":
        n_dst = graph.num_nodes(td.dst)
        counts = np.zeros(n_dst)
        for lst in td.targets["train"]:
            np.add.at(counts, np.asarray(lst, dtype=int), 1)
        top = np.argsort(-counts, kind="stable")[: td.k]
        return np.tile(top, (td.n_rows["test"], 1))
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    x_tr, y_tr = own_features(graph, td, "train")
    x_te, _ = own_features(graph, td, "test")
    if td.kind == "binary":
        m = HistGradientBoostingClassifier(max_iter=100, random_state=seed).fit(x_tr, y_tr.astype(int))
        return m.predict_proba(x_te)[:, 1]
    m = HistGradientBoostingRegressor(loss="absolute_error", max_iter=100, random_state=seed).fit(x_tr, y_tr)
    return np.clip(m.predict(x_te), *td.clamp)


