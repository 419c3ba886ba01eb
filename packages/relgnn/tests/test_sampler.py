"""The temporal sampler against a brute-force sampler on small graphs: time correctness, fan-out bounds, induced
edges, and a negative control (a future row planted in a sub-graph is caught)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from relbench.base import Database, Table
from relgnn.graph import build_graph
from relgnn.sampler import TemporalSampler, check_time_correct


def brute_force(graph, seed_type, seed_id, seed_time, hops):
    """Every (type, row) reachable from the seed within ``hops`` steps along incoming edges, using only rows with
    ``time <= seed_time`` (static tables always), by plain Python breadth-first search."""
    data = graph.data

    def ok(nt, i):
        st = data[nt]
        return "time" not in st or int(st.time[i]) <= seed_time

    seen = {(seed_type, int(seed_id))}
    frontier = set(seen)
    for _ in range(hops):
        nxt = set()
        for s, r, d in graph.edge_types:
            ei = data[s, r, d].edge_index.t().tolist()
            for a, b in ei:
                if (d, b) in frontier and ok(s, a) and (s, a) not in seen:
                    nxt.add((s, a))
        seen |= nxt
        frontier = nxt
    return seen


def sampled_sets(sub, n_seeds):
    out = [set() for _ in range(n_seeds)]
    for nt in sub.node_types:
        st = sub[nt]
        for b, i in zip(st.batch.tolist(), st.n_id.tolist()):
            out[b].add((nt, i))
    return out


@pytest.mark.parametrize("hops", [1, 2])
def test_equals_brute_force_without_cap(tiny_graph, hops):
    t_all = tiny_graph.data["purchases"].time
    tf = t_all.double()
    times = torch.tensor([int(tf.quantile(0.3)), int(tf.quantile(0.7)), int(t_all.max())] * 2)
    seeds = torch.tensor([0, 0, 0, 5, 9, 3])
    sub, loc = TemporalSampler(tiny_graph, num_neighbors=[10**6] * hops).sample("users", seeds, times)
    got = sampled_sets(sub, len(seeds))
    for b in range(len(seeds)):
        want = brute_force(tiny_graph, "users", int(seeds[b]), int(times[b]), hops)
        assert got[b] == want, b
    check_time_correct(sub)
    # induced edges: exactly the full graph's edges among each seed's sampled nodes
    for et in tiny_graph.edge_types:
        s, _, d = et
        e = sub[et].edge_index
        got_e = set(zip(sub[s].batch[e[0]].tolist(), sub[s].n_id[e[0]].tolist(), sub[d].n_id[e[1]].tolist()))
        full = tiny_graph.data[et].edge_index.t().tolist()
        want_e = {(b, a, c) for b in range(len(seeds)) for a, c in full
                  if (s, a) in got[b] and (d, c) in got[b]}
        assert got_e == want_e, et


def _star_db(n_leaves=40):
    """One hub user with ``n_leaves`` purchases at days 0..n-1 (a fan-out that binds)."""
    t0 = pd.Timestamp("2021-01-01")
    users = pd.DataFrame({"user_id": [0], "age": [30]})
    items = pd.DataFrame({"item_id": np.arange(3), "price": [1.0, 2.0, 3.0]})
    p = pd.DataFrame({"purchase_id": np.arange(n_leaves), "user_id": 0, "item_id": np.arange(n_leaves) % 3,
                      "time": [t0 + pd.Timedelta(days=int(d)) for d in range(n_leaves)]})
    return Database({"users": Table(users, {}, "user_id", None), "items": Table(items, {}, "item_id", None),
                     "purchases": Table(p, {"user_id": "users", "item_id": "items"}, "purchase_id", "time")})


@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_fanout_bound_and_strategy(strategy):
    g = build_graph(_star_db(40))
    t = int(g.data["purchases"].time[29])  # rows 0..29 are visible
    sampler = TemporalSampler(g, num_neighbors=(7, 2), temporal_strategy=strategy,
                              generator=torch.Generator().manual_seed(0))
    sub, _ = sampler.sample("users", torch.tensor([0, 0]), torch.tensor([t, t]))
    check_time_correct(sub)
    for b in (0, 1):
        rows = sub["purchases"].n_id[sub["purchases"].batch == b]
        assert rows.numel() == 7  # fan-out 7 of 30 visible purchases, per seed
        assert int(rows.max()) <= 29
        if strategy == "last":
            assert sorted(rows.tolist()) == list(range(23, 30))  # the 7 most recent
    # a visible set smaller than the fan-out is taken whole
    sub, _ = TemporalSampler(g, num_neighbors=(100,)).sample("users", torch.tensor([0]), torch.tensor([t]))
    assert sub["purchases"].num_nodes == 30


def test_uniform_is_uniform():
    """Each of the 30 visible purchases is drawn with probability 7/30 (not biased to early or late rows)."""
    g = build_graph(_star_db(40))
    t = int(g.data["purchases"].time[29])
    sampler = TemporalSampler(g, num_neighbors=(7,), generator=torch.Generator().manual_seed(1))
    sub, _ = sampler.sample("users", torch.zeros(600, dtype=torch.long), torch.full((600,), t))
    counts = torch.bincount(sub["purchases"].n_id, minlength=40).float() / 600
    assert counts[30:].sum() == 0
    assert torch.allclose(counts[:30], torch.full((30,), 7 / 30), atol=0.08)
    assert float(counts[:10].mean()) == pytest.approx(float(counts[20:30].mean()), abs=0.05)


def test_leak_of_a_future_row_is_caught(tiny_graph):
    """Negative control: plant a purchase later than its seed's time; the time check must fail."""
    t = int(tiny_graph.data["purchases"].time.median())
    sub, _ = TemporalSampler(tiny_graph, num_neighbors=(50, 50)).sample("users", torch.arange(4),
                                                                        torch.full((4,), t))
    check_time_correct(sub)
    st = sub["purchases"]
    assert st.num_nodes > 0
    late = int(torch.nonzero(tiny_graph.data["purchases"].time > t)[0, 0])
    st.n_id[0], st.time[0] = late, tiny_graph.data["purchases"].time[late]
    with pytest.raises(AssertionError, match="future row"):
        check_time_correct(sub)
