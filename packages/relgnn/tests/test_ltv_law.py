"""The exact law of the ``user-ltv`` target (:func:`relgnn.synthetic.ltv_pmf`), whose conditional median is the Bayes
(MAE-optimal) prediction reported as the task's ceiling: it matches a brute-force simulation of the generator's
basket process, and it fits the targets the generator actually wrote (negative control: a wrong basket rate is
rejected)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from relgnn.synthetic import DELTA, REPEAT, T0, ltv_law, ltv_pmf, make_database


@pytest.fixture(scope="module")
def small_db():
    return make_database(num_users=150, num_items=40, num_windows=9, seed=3)


def _moments(ps: np.ndarray) -> tuple[float, float]:
    k = np.arange(len(ps), dtype=float)
    mu = float(ps @ k)
    return mu, float(ps @ (k - mu) ** 2)


def _simulate(sdb, u: int, w: int, n: int, rng) -> np.ndarray:
    """Brute force: draw the basket of user ``u`` in window ``w`` as the generator does, ``n`` times (cents)."""
    db = sdb.db.table_dict
    cents = np.round(db["items"].df["price"].to_numpy() * 100).astype(np.int64)
    pur = db["purchases"].df
    past = pur[(pur["user_id"] == u) & (pur["time"] <= T0 + w * DELTA)]
    q_new = sdb.truth["new_item_prob"][u]
    lam, p = sdb.truth["basket_rate"][u], sdb.truth["p_active"][w, u]
    out = np.zeros(n)
    for i in range(n):
        if rng.random() >= p:
            continue
        for _ in range(1 + rng.poisson(lam)):
            if len(past) and rng.random() < REPEAT:
                wts = np.where(past["rating"].to_numpy() >= 4, 3.0, 1.0)
                it = past["item_id"].to_numpy()[rng.choice(len(past), p=wts / wts.sum())]
            else:
                it = rng.choice(len(q_new), p=q_new)
            out[i] += cents[it]
    return out


def test_ltv_pmf_matches_a_brute_force_simulation(small_db):
    rng = np.random.default_rng(0)
    table = small_db.tasks["user-ltv"].get_table("test", mask_input_cols=False,
                                                 db=small_db.tasks["user-ltv"].get_db(upto_test_timestamp=False))
    rows = table.df.iloc[:3]
    w = ((rows["timestamp"] - T0) / DELTA).round().astype(int).to_numpy()
    for u, wi in zip(rows["user_id"].to_numpy(), w):
        ps = ltv_pmf(small_db, int(u), int(wi))
        assert abs(ps.sum() - 1.0) < 1e-9 and ps.min() >= 0.0
        mu, var = _moments(ps)
        sim = _simulate(small_db, int(u), int(wi), 4000, rng)
        assert abs(sim.mean() - mu) < 4.5 * np.sqrt(var / len(sim))  # mean within 4.5 standard errors
        cdf = np.cumsum(ps)
        for x in np.quantile(sim, [0.25, 0.5, 0.75]):  # the CDF at the simulated quartiles
            assert abs(cdf[int(x)] - np.mean(sim <= x)) < 0.04


def test_ltv_law_fits_the_generated_targets_and_rejects_a_wrong_basket_rate(small_db):
    task = small_db.tasks["user-ltv"]
    db = task.get_db(upto_test_timestamp=False)
    df = pd.concat([task.get_table(s, mask_input_cols=False, db=db).df for s in ("val", "test")], ignore_index=True)
    y = np.round(df["ltv"].to_numpy() * 100)
    w = ((df["timestamp"] - T0) / DELTA).round().astype(int).to_numpy()
    assert len(df) > 150

    def z_score(scale: float) -> float:
        mus, vs = [], []
        for u, wi in zip(df["user_id"].to_numpy(), w):
            mu, var = _moments(ltv_pmf(small_db, int(u), int(wi),
                                       basket_rate=scale * small_db.truth["basket_rate"][u]))
            mus.append(mu)
            vs.append(var)
        return float((y - np.array(mus)).sum() / np.sqrt(np.sum(vs)))

    assert abs(z_score(1.0)) < 4.0
    assert abs(z_score(2.0)) > 4.0  # negative control: twice the basket rate does not fit
    from relbench.base import Table

    med, dev = ltv_law(small_db, Table(df, {"user_id": "users"}, None, "timestamp"))
    se = np.sqrt(0.25 / len(df))
    assert np.mean(y < med) <= 0.5 + 4 * se and np.mean(y <= med) >= 0.5 - 4 * se  # a median of each row's law
    assert np.all(dev >= 0)
    assert abs(np.mean(np.abs(y - med)) - dev.mean()) < 4 * np.std(np.abs(y - med)) / np.sqrt(len(df))
