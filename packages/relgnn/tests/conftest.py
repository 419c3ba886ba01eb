from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from relbench.base import Database, Table

torch.set_num_threads(1)


def fake_dataset_db(seed: int = 0) -> Database:
    """RelBench 1.x ``FakeDataset`` schema rebuilt from ``Table``s: customer, product, review, relations."""
    rng = np.random.default_rng(seed)
    nc, npr, nr = 6, 5, 20
    t0 = pd.Timestamp("2020-01-01")
    customer = pd.DataFrame({"customer_id": np.arange(nc), "age": rng.integers(18, 60, nc),
                             "gender": rng.choice(["m", "f"], nc)})
    product = pd.DataFrame({"product_id": np.arange(npr), "category": rng.choice(["a", "b"], npr),
                            "price": rng.random(npr)})
    times = sorted(t0 + pd.Timedelta(days=int(d)) for d in rng.integers(0, 300, nr))
    review = pd.DataFrame({"review_id": np.arange(nr), "customer_id": rng.integers(0, nc, nr),
                           "product_id": rng.integers(0, npr, nr), "review_time": times,
                           "rating": rng.integers(1, 6, nr)})
    relations = pd.DataFrame({"relation_id": np.arange(nr), "customer_id": rng.integers(0, nc, nr),
                              "product_id": rng.integers(0, npr, nr), "time": times})
    return Database({
        "customer": Table(customer, {}, "customer_id", None),
        "product": Table(product, {}, "product_id", None),
        "review": Table(review, {"customer_id": "customer", "product_id": "product"}, "review_id", "review_time"),
        "relations": Table(relations, {"customer_id": "customer", "product_id": "product"}, "relation_id", "time"),
    })


@pytest.fixture
def fake_db():
    return fake_dataset_db


@pytest.fixture(scope="session")
def tiny_synth():
    from relgnn.synthetic import make_database

    return make_database(num_users=30, num_items=15, num_stores=3, num_windows=9, seed=1)


@pytest.fixture(scope="session")
def tiny_graph(tiny_synth):
    from relgnn.graph import build_graph

    return build_graph(tiny_synth.db)
