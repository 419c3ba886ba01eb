"""RelBench graph construction, snapshots, the temporal sampler, and no temporal leakage."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from relbench.base import Database, Table
from relgnn.graph import build_graph, snapshot, to_seconds
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


def test_primary_keys_are_rekeyed(fake_db):
    """Keys that are not 0..n-1 (strings, gaps, shuffled order) load: the graph equals the one of the row-keyed
    database, FKs follow the key map, unknown FKs are dropped, and task ids map through the same key map."""
    db = fake_db()
    g0 = build_graph(db)
    ckeys = np.array([f"c{10 * i + 3}" for i in range(len(db.table_dict["customer"].df))])
    pkeys = np.array([100 + 7 * i for i in range(len(db.table_dict["product"].df))])[::-1]  # gaps, descending
    db2 = fake_db()
    cust, prod = db2.table_dict["customer"].df, db2.table_dict["product"].df
    cust["customer_id"], prod["product_id"] = ckeys, pkeys
    for t in ("review", "relations"):
        df = db2.table_dict[t].df
        df["customer_id"] = ckeys[df["customer_id"].to_numpy()]
        df["product_id"] = pkeys[df["product_id"].to_numpy()]
    g2 = build_graph(db2)
    for et in g0.edge_types:
        assert torch.equal(g0.data[et].edge_index, g2.data[et].edge_index), et
    assert list(g2.to_rows("customer", [ckeys[2], "nope"])) == [2, -1]
    assert list(g2.to_keys("product", [0, 1])) == list(pkeys[:2])
    # negative control: a foreign key that is not a key of its parent becomes dangling (dropped)
    db2.table_dict["review"].df.loc[0, "customer_id"] = "c999"
    g3 = build_graph(db2)
    assert g3.data["review", "f2p_customer_id", "customer"].edge_index.shape[1] == \
        g0.data["review", "f2p_customer_id", "customer"].edge_index.shape[1] - 1
