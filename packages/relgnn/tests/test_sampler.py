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


def _random_db(seed, n_users=8, n_items=6, n_rows=60):
    """A small random bipartite database: users and items (static), purchases with random parents and times."""
    rng = np.random.default_rng(seed)
    t0 = pd.Timestamp("2021-01-01")
    users = pd.DataFrame({"user_id": np.arange(n_users), "age": rng.integers(18, 60, n_users)})
    items = pd.DataFrame({"item_id": np.arange(n_items), "price": rng.random(n_items)})
    p = pd.DataFrame({"purchase_id": np.arange(n_rows), "user_id": rng.integers(0, n_users, n_rows),
                      "item_id": rng.integers(0, n_items, n_rows),
                      "time": [t0 + pd.Timedelta(days=int(d)) for d in rng.integers(0, 50, n_rows)]})
    return Database({"users": Table(users, {}, "user_id", None), "items": Table(items, {}, "item_id", None),
                     "purchases": Table(p, {"user_id": "users", "item_id": "items"}, "purchase_id", "time")})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_graphs_brute_force_and_fanout_bound(seed, monkeypatch):
    """On random graphs: with fan-out >= the max degree, exactly the brute-force temporal k-hop neighbourhood
    (3 hops); with fan-out 2, every node's expansion per hop and edge type keeps min(2, visible) neighbours, all no
    later than the seed time. Negative control: the fan-out-2 sample misses part of the brute-force set."""
    g = build_graph(_random_db(seed))
    max_deg = max(int(torch.bincount(g.data[et].edge_index[1]).max()) for et in g.edge_types)
    seeds = torch.arange(8)
    times = torch.tensor([int(g.data["purchases"].time.double().quantile(float(q))) for q in np.linspace(0.2, 1.0, 8)])
    sub, _ = TemporalSampler(g, num_neighbors=[max_deg] * 3).sample("users", seeds, times)
    check_time_correct(sub)
    full = sampled_sets(sub, 8)
    for b in range(8):
        assert full[b] == brute_force(g, "users", int(seeds[b]), int(times[b]), 3), b
    sampler = TemporalSampler(g, num_neighbors=[2, 2, 2], generator=torch.Generator().manual_seed(seed))
    orig = TemporalSampler._expand
    calls = []

    def spy(self, et, b, n, seed_times, k):
        grp, bb, nbr = orig(self, et, b, n, seed_times, k)
        if k is not None:
            t = self._time(et[0])
            ptr, col = self.csc[et]
            for i in range(n.numel()):
                nb = col[ptr[n[i]]:ptr[n[i] + 1]]
                vis = int((t[nb] <= seed_times[b[i]]).sum()) if t is not None else nb.numel()
                got = nbr[grp == i]
                assert got.numel() == min(k, vis)  # at most the fan-out, and all when fewer are visible
                assert got.unique().numel() == got.numel()  # without replacement
                if t is not None:
                    assert bool((t[got] <= seed_times[b[i]]).all())
            calls.append(et)
        return grp, bb, nbr

    monkeypatch.setattr(TemporalSampler, "_expand", spy)
    small, _ = sampler.sample("users", seeds, times)
    assert calls
    check_time_correct(small)
    capped = sampled_sets(small, 8)
    assert all(capped[b] <= full[b] for b in range(8))
    assert any(capped[b] != full[b] for b in range(8))  # negative control: the cap binds somewhere


def test_uniform_passes_chi_square():
    """Chi-square goodness of fit of the per-row draw counts (fan-out 7 of 30 visible, 3,000 draws) against the
    uniform 7/30; negative control: the 'last' strategy (deterministic, most recent) is rejected."""
    from scipy.stats import chisquare

    g = build_graph(_star_db(40))
    t = int(g.data["purchases"].time[29])
    n = 3000
    for strategy, should_pass in (("uniform", True), ("last", False)):
        sampler = TemporalSampler(g, num_neighbors=(7,), temporal_strategy=strategy,
                                  generator=torch.Generator().manual_seed(2))
        sub, _ = sampler.sample("users", torch.zeros(n, dtype=torch.long), torch.full((n,), t))
        counts = torch.bincount(sub["purchases"].n_id, minlength=40).numpy()
        assert counts[30:].sum() == 0 and counts.sum() == 7 * n
        p = chisquare(counts[:30], np.full(30, 7 * n / 30)).pvalue
        assert (p > 1e-3) if should_pass else (p < 1e-6), (strategy, p)
