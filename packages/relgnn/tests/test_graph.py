"""RelBench graph construction, snapshots, the temporal sampler, and no temporal leakage."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from relbench.base import Database, Table
from relgnn.errors import SchemaError
from relgnn.graph import DanglingForeignKeyWarning, build_graph, snapshot, to_seconds
from relgnn.model import RelationalModel
from relgnn.sampler import TemporalSampler


def test_edges_match_foreign_keys(tiny_synth):
    db = tiny_synth.db
    g = build_graph(db)
    for name, t in db.table_dict.items():
        for fk, parent in t.fkey_col_to_pkey_table.items():
            ei = g.data[name, f"f2p_{fk}", parent].edge_index
            rev = g.data[parent, f"rev_f2p_{fk}", name].edge_index
            assert ei.shape[1] == int(t.df[fk].notna().sum())
            fwd = set(map(tuple, ei.t().tolist()))
            assert fwd == set(map(tuple, rev.flip(0).t().tolist()))  # exact transpose
            ok = t.df[fk].notna().to_numpy()
            assert np.array_equal(ei[1].numpy(), t.df[fk].to_numpy()[ok].astype(int))


def test_dangling_fk_dropped_and_const_feature(fake_db):
    db = fake_db()
    db.table_dict["review"].df.loc[0, "customer_id"] = 999  # dangling
    db.table_dict["product"].df = db.table_dict["product"].df[["product_id"]]  # no feature column
    with pytest.warns(DanglingForeignKeyWarning, match="'review', foreign key 'customer_id'.*1 row.*999"):
        g = build_graph(db)
    assert g.data["review", "f2p_customer_id", "customer"].edge_index.shape[1] == len(db.table_dict["review"].df) - 1
    assert g.specs["product"].num_cols == ["__const__"]


def test_snapshot_keeps_only_past_rows(tiny_graph, tiny_synth):
    t = to_seconds(tiny_synth.dataset.val_timestamp)
    snap = snapshot(tiny_graph, t, cache=False)
    for nt in tiny_graph.node_types:
        if "time" in snap[nt]:
            assert int(snap[nt].time.max()) <= t
            assert snap[nt].num_nodes == int((tiny_graph.data[nt].time <= t).sum())
        else:
            assert snap[nt].num_nodes == tiny_graph.num_nodes(nt)


def _db_with_future_rows(db: Database, t: pd.Timestamp) -> Database:
    """Copy of ``db`` with extra purchases, visits and posts after ``t`` (keys appended, so consecutive)."""
    out = {}
    rng = np.random.default_rng(0)
    for name, tab in db.table_dict.items():
        df = tab.df.copy()
        if tab.time_col is not None and name in ("purchases", "visits", "posts"):
            extra = df.sample(10, replace=True, random_state=0).copy()
            extra[tab.pkey_col] = np.arange(len(df), len(df) + 10)
            extra[tab.time_col] = t + pd.to_timedelta(rng.integers(1, 10**6, 10), unit="s")
            if name == "posts":
                extra["parent_id"] = pd.array(rng.integers(0, len(df), 10), dtype="Int64")
            df = pd.concat([df, extra], ignore_index=True)
        out[name] = Table(df, dict(tab.fkey_col_to_pkey_table), tab.pkey_col, tab.time_col)
    return Database(out)


def test_no_temporal_leakage(tiny_synth):
    """Adding rows later than t leaves every prediction at seed time t unchanged (snapshots and sampler)."""
    t = tiny_synth.dataset.val_timestamp
    ts = to_seconds(t)
    db = tiny_synth.db.upto(t)
    db2 = _db_with_future_rows(tiny_synth.db, t)
    g1, g2 = build_graph(db, fit_until=t), build_graph(db2, fit_until=t)
    torch.manual_seed(0)
    model = RelationalModel(specs=g1.specs, edge_types=g1.edge_types, gnn="relgnn", channels=8, num_layers=2,
                            num_heads=2, id_awareness=True).eval()
    with torch.no_grad():
        a = model(snapshot(g1, ts, cache=False))
        b = model(snapshot(g2, ts, cache=False))
        for nt in a:
            assert torch.equal(a[nt], b[nt]), nt
        seeds = torch.arange(10)
        times = torch.full((10,), ts)
        s1, l1 = TemporalSampler(g1, num_neighbors=(50, 50), temporal_strategy="last").sample("users", seeds, times)
        s2, l2 = TemporalSampler(g2, num_neighbors=(50, 50), temporal_strategy="last").sample("users", seeds, times)
        h1, h2 = model(s1, {"users": l1}), model(s2, {"users": l2})
        assert torch.equal(h1["users"][l1], h2["users"][l2])
        for nt in g2.node_types:
            if "time" in s2[nt]:
                assert bool((s2[nt].time <= s2[nt].seed_time).all())


def test_sampler_disjoint_and_induced(tiny_graph):
    seeds = torch.tensor([0, 0, 1])  # the same user twice: two disjoint copies
    times = torch.full((3,), int(tiny_graph.data["purchases"].time.max()))
    sub, loc = TemporalSampler(tiny_graph, num_neighbors=(100, 100)).sample("users", seeds, times)
    assert sub["users"].batch[loc].tolist() == [0, 1, 2]
    for et in tiny_graph.edge_types:
        e = sub[et].edge_index
        if e.numel():
            assert torch.equal(sub[et[0]].batch[e[0]], sub[et[2]].batch[e[1]])  # no edge crosses seeds
            # every sampled edge exists in the full graph
            full = set(map(tuple, tiny_graph.data[et].edge_index.t().tolist()))
            got = set(zip(sub[et[0]].n_id[e[0]].tolist(), sub[et[2]].n_id[e[1]].tolist()))
            assert got <= full
    # copies 0 and 1 of user 0 are identical sub-graphs
    p = sub["purchases"]
    assert sorted(p.n_id[p.batch == 0].tolist()) == sorted(p.n_id[p.batch == 1].tolist())


def test_label_windows_use_future_rows_only(tiny_synth):
    """Deleting rows after t + Δ (or editing them) leaves the churn labels at t unchanged."""
    task = tiny_synth.tasks["user-churn"]
    t = tiny_synth.dataset.val_timestamp - task.timedelta
    db = tiny_synth.db
    a = task.make_table(db, pd.DatetimeIndex([t])).df
    b = task.make_table(db.upto(t + task.timedelta), pd.DatetimeIndex([t])).df
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))


def test_prediction_independent_of_batch_composition(tiny_graph):
    """Default (per-node) semantics + disjoint sub-graphs: a seed's output does not depend on its batch-mates."""
    t = int(tiny_graph.data["purchases"].time.max())
    torch.manual_seed(0)
    model = RelationalModel(specs=tiny_graph.specs, edge_types=tiny_graph.edge_types, gnn="relgnn", channels=8,
                            num_layers=1, num_heads=2, id_awareness=True).eval()
    sampler = TemporalSampler(tiny_graph, num_neighbors=(8, 4), temporal_strategy="last")
    with torch.no_grad():
        outs = []
        for seeds in (torch.tensor([3]), torch.tensor([3, 0, 7, 11])):
            sub, loc = sampler.sample("users", seeds, torch.full((seeds.numel(),), t))
            h = model(sub, {"users": loc})
            items = sub["items"].batch == 0
            outs.append((h["users"][loc[0]], h["items"][items], sub["items"].n_id[items]))
    assert torch.allclose(outs[0][0], outs[1][0], atol=1e-6)
    assert torch.equal(outs[0][2], outs[1][2]) and torch.allclose(outs[0][1], outs[1][1], atol=1e-6)


def _rekeyed_copy(fake_db, *, shuffle: bool, seed: int = 0):
    """The fake database with string customer keys, gapped descending product keys, int review keys with gaps, and
    (``shuffle``) every table's rows in a random order; returns it with, per table, the original row of each new
    row."""
    rng = np.random.default_rng(seed)
    db = fake_db()
    ckeys = np.array([f"c{10 * i + 3}" for i in range(len(db.table_dict["customer"].df))])
    pkeys = np.array([100 + 7 * i for i in range(len(db.table_dict["product"].df))])[::-1].copy()
    rkeys = 1000 + 3 * np.arange(len(db.table_dict["review"].df))
    keys = {"customer": ckeys, "product": pkeys, "review": rkeys}
    out, perm = {}, {}
    for name, t in db.table_dict.items():
        df = t.df.copy()
        if name in keys:
            df[t.pkey_col] = keys[name][df[t.pkey_col].to_numpy()]
        for fk, parent in t.fkey_col_to_pkey_table.items():
            df[fk] = keys[parent][df[fk].to_numpy()]
        p = rng.permutation(len(df)) if shuffle else np.arange(len(df))
        perm[name] = p
        out[name] = Table(df.iloc[p].reset_index(drop=True), dict(t.fkey_col_to_pkey_table), t.pkey_col, t.time_col)
    return Database(out), keys, perm


def _edge_set(g, et, perm=None):
    s, _, d = et
    e = g.data[et].edge_index
    a, b = e[0].numpy(), e[1].numpy()
    if perm is not None:
        a, b = perm[s][a], perm[d][b]
    return set(zip(a.tolist(), b.tolist()))


@pytest.mark.parametrize("shuffle", [False, True])
def test_primary_keys_are_rekeyed(fake_db, shuffle):
    """Keys that are not 0..n-1 (strings, gaps, descending, shuffled rows) load: the graph equals the one of the
    row-keyed database up to the row permutation (edges, features, times), task ids map through the key map, and
    RelGNN's outputs are the same rows permuted. Negative control: a wrong permutation does not match."""
    db0 = fake_db()
    g0 = build_graph(db0)
    db2, keys, perm = _rekeyed_copy(fake_db, shuffle=shuffle)
    g2 = build_graph(db2)
    assert set(g2.key_maps) == {"customer", "product", "review"} | ({"relations"} if shuffle else set())
    for et in g0.edge_types:
        assert _edge_set(g2, et, perm) == _edge_set(g0, et), et
    for nt in g0.node_types:
        assert torch.allclose(g2.data[nt].x_num, g0.data[nt].x_num[perm[nt]], atol=1e-6), nt
        assert torch.equal(g2.data[nt].x_cat, g0.data[nt].x_cat[perm[nt]]), nt
        if "time" in g0.data[nt]:
            assert torch.equal(g2.data[nt].time, g0.data[nt].time[perm[nt]])
    # task ids: original keys -> new rows -> original rows
    c = g2.to_rows("customer", keys["customer"][[2, 4]])
    assert list(perm["customer"][c]) == [2, 4]
    assert list(g2.to_rows("customer", ["nope"])) == [-1]
    assert list(g2.to_keys("product", g2.to_rows("product", keys["product"][:2]))) == list(keys["product"][:2])
    # the same model (same parameters) gives the same outputs, row for row
    torch.manual_seed(0)
    model = RelationalModel(specs=g0.specs, edge_types=g0.edge_types, gnn="relgnn", channels=8, num_layers=2,
                            num_heads=2).eval()
    t = int(g0.data["review"].time.max())
    with torch.no_grad():
        h0, h2 = model(snapshot(g0, t, cache=False)), model(snapshot(g2, t, cache=False))
    for nt in h0:
        assert torch.allclose(h2[nt], h0[nt][perm[nt]], atol=1e-5), nt
    if shuffle:  # negative control: without the permutation the rows do not line up
        assert not torch.allclose(h2["customer"], h0["customer"], atol=1e-3)
        assert _edge_set(g2, g0.edge_types[0]) != _edge_set(g0, g0.edge_types[0])


def test_dangling_foreign_keys_warn_or_raise(fake_db):
    """A non-null foreign key that is not a key of its parent: dropped with a warning naming table and column
    (default), or a SchemaError with dangling_fk='error'. Null foreign keys are no parent, not dangling."""
    db2, keys, _ = _rekeyed_copy(fake_db, shuffle=False)
    n0 = _edge_set(build_graph(db2), ("review", "f2p_customer_id", "customer"))
    db2.table_dict["review"].df.loc[0, "customer_id"] = "c999"
    with pytest.warns(DanglingForeignKeyWarning, match=r"'review', foreign key 'customer_id' -> 'customer'.*c999"):
        g3 = build_graph(db2)
    assert len(_edge_set(g3, ("review", "f2p_customer_id", "customer"))) == len(n0) - 1
    with pytest.raises(SchemaError, match=r"'review', foreign key 'customer_id'.*1 row"):
        build_graph(db2, dangling_fk="error")
    # a row-keyed parent: out-of-range and non-integer values are dangling too
    db = fake_db()
    db.table_dict["relations"].df["product_id"] = db.table_dict["relations"].df["product_id"].astype("float64")
    db.table_dict["relations"].df.loc[[0, 1], "product_id"] = [2.5, -1.0]
    with pytest.raises(SchemaError, match=r"'relations', foreign key 'product_id'.*2 row"):
        build_graph(db, dangling_fk="error")
    # negative control: a null foreign key is "no parent", neither dangling nor an error
    db = fake_db()
    db.table_dict["review"].df["customer_id"] = db.table_dict["review"].df["customer_id"].astype("Int64")
    db.table_dict["review"].df.loc[0, "customer_id"] = pd.NA
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", DanglingForeignKeyWarning)
        g = build_graph(db, dangling_fk="error")
    assert g.data["review", "f2p_customer_id", "customer"].edge_index.shape[1] == len(db.table_dict["review"].df) - 1
    with pytest.raises(SchemaError, match="dangling_fk must be one of"):
        build_graph(db, dangling_fk="ignore")


def test_nonfinite_numeric_features(fake_db):
    """NaN is imputed with the fitting mean (0 after standardisation; statistics from the other rows); inf raises
    a SchemaError naming table and column, or is imputed like NaN with nonfinite='missing'."""
    db = fake_db()
    price = db.table_dict["product"].df["price"].to_numpy().copy()
    db.table_dict["product"].df.loc[1, "price"] = np.nan
    g = build_graph(db)
    j = g.specs["product"].num_cols.index("price")
    x = g.data["product"].x_num[:, j].double().numpy()
    rest = np.delete(price, 1)
    assert x[1] == 0.0
    assert np.allclose(np.delete(x, 1), (rest - rest.mean()) / rest.std(), atol=1e-6)
    db.table_dict["product"].df.loc[1, "price"] = np.inf
    with pytest.raises(SchemaError, match=r"table 'product', column 'price': 1 infinite value.*key 1"):
        build_graph(db)
    g2 = build_graph(db, nonfinite="missing")
    assert torch.equal(g2.data["product"].x_num, g.data["product"].x_num)  # same as NaN
    assert torch.isfinite(g2.data["product"].x_num).all()
    db.table_dict["product"].df.loc[2, "price"] = -np.inf
    with pytest.raises(SchemaError, match="2 infinite value"):
        build_graph(db)
    # negative control: finite data is left alone by both settings
    db = fake_db()
    assert torch.equal(build_graph(db).data["product"].x_num, build_graph(db, nonfinite="missing").data["product"].x_num)
