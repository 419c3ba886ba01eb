"""Bad input fails fast with a clear, named error; metrics give their known values on perfect predictions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from relbench.base import Database, Table
from relgnn import RelGNN
from relgnn.errors import ConfigError, RelGNNError, SchemaError, TaskError
from relgnn.graph import build_graph
from relgnn.metrics import mae, map_at_k, roc_auc
from relgnn.synthetic import SyntheticDataset, UserChurnTask, make_database
from relgnn.train import FitConfig


@pytest.mark.parametrize("edit, match", [
    (lambda db: db.table_dict["customer"].df.__setitem__("customer_id", [0, 1, 1, 3, 4, 5]), "duplicated"),
    (lambda db: db.table_dict["review"].fkey_col_to_pkey_table.__setitem__("customer_id", "shop"), "unknown table"),
    (lambda db: db.table_dict["review"].fkey_col_to_pkey_table.__setitem__("shop_id", "product"), "missing"),
    (lambda db: db.table_dict["review"].df.__setitem__("review_time", "2020-01-01"), "datetime"),
])
def test_schema_errors(edit, match, fake_db):
    db = fake_db()
    edit(db)
    with pytest.raises(SchemaError, match=match):
        build_graph(db)


def test_schema_without_foreign_keys():
    db = Database({"a": Table(pd.DataFrame({"a_id": [0, 1], "x": [1.0, 2.0]}), {}, "a_id", None)})
    with pytest.raises(SchemaError, match="no foreign keys"):
        build_graph(db)


def test_timedelta_that_does_not_fit_the_split():
    sdb = make_database(num_users=10, num_items=5, num_stores=2, num_windows=9, seed=0)
    ds = SyntheticDataset(sdb.db, val_timestamp=sdb.dataset.val_timestamp,
                          test_timestamp=sdb.dataset.val_timestamp + pd.Timedelta(days=5))
    with pytest.raises(ValueError, match="timedelta"):
        UserChurnTask(ds)


def test_recommendation_prediction_shape_and_range():
    truth = [[1, 2], [3]]
    with pytest.raises(TaskError, match="shape"):
        map_at_k(np.zeros((2, 3), dtype=int), truth, k=2)
    with pytest.raises(TaskError, match="ids"):
        map_at_k(np.array([[1, 9], [3, 0]]), truth, k=2, num_dst=5)


@pytest.mark.parametrize("call", [
    lambda: make_database(num_users=0),
    lambda: make_database(num_items=-3),
    lambda: RelGNN(node_types=["a"], edge_types=[("a", "f2p_x", "b"), ("b", "rev_f2p_x", "a")], channels=0),
    lambda: RelGNN(node_types=["a"], edge_types=[("a", "f2p_x", "b"), ("b", "rev_f2p_x", "a")], num_heads=0),
    lambda: FitConfig(epochs=0).validate(),
    lambda: FitConfig(patience=0).validate(),
    lambda: FitConfig(min_delta=-0.1).validate(),
    lambda: FitConfig(min_delta=float("nan")).validate(),
    lambda: FitConfig(gnn="gat").validate(),
])
def test_non_positive_sizes_and_bad_options(call):
    with pytest.raises(ConfigError):
        call()


def test_errors_are_value_errors():
    assert issubclass(RelGNNError, ValueError)


def test_metric_sanity():
    y = np.array([0, 1, 1, 0, 1])
    assert roc_auc(y, y.astype(float)) == 1.0
    assert roc_auc(y, 1.0 - y) == 0.0
    assert mae(y, y) == 0.0
    truth = [[4, 2, 7], [1], [3, 5]]
    perfect = np.array([[4, 2, 7, 0], [1, 0, 2, 3], [5, 3, 0, 1]])
    assert map_at_k(perfect, truth, k=4) == 1.0
    assert map_at_k(np.array([[0, 1, 3, 5]] * 3), truth, k=4) < 1.0
    # agrees with relbench's MAP on the same input
    from relbench.metrics import map as rb_map
    pred = np.array([[0, 4, 2, 9], [1, 2, 3, 4], [9, 8, 5, 3]])
    isin = np.stack([np.isin(p, t) for p, t in zip(pred, truth)])
    assert abs(map_at_k(pred, truth, k=4) - rb_map(isin, np.array([len(t) for t in truth]))) < 1e-12
