"""Our graph builder against RelBench's own ``make_pkey_fkey_graph`` and torch-frame's data pipeline.

``build_graph`` must give the same heterogeneous graph as ``relbench.modeling.graph.make_pkey_fkey_graph`` (node
types and counts, every ``f2p`` / ``rev_f2p`` edge list element for element, node times), column types from
torch-frame's inference (as RelBench's ``get_stype_proposal``), and features that are torch-frame's materialised
``TensorFrame`` up to our encoding: numerical columns standardised, categorical codes the same categories (ranked
by count, 0 = missing where torch-frame has -1), with no cap on the number of categories.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
import torch_frame
from relbench.base import Database, Table
from relbench.modeling.graph import make_pkey_fkey_graph
from relbench.modeling.utils import get_stype_proposal
from relgnn.errors import SchemaError
from relgnn.graph import build_graph, infer_stypes
from torch_frame.data.stats import StatType


def _relbench_graph(db, g):
    stypes = {t: {c: torch_frame.stype(v) for c, v in spec.stypes.items() if c != "__const__"}
              for t, spec in g.specs.items()}
    return make_pkey_fkey_graph(db, col_to_stype_dict=stypes)


@pytest.mark.parametrize("which", ["synthetic", "fake"])
def test_same_heterodata_as_relbench_make_pkey_fkey_graph(tiny_synth, fake_db, which):
    db = tiny_synth.db if which == "synthetic" else fake_db()
    g = build_graph(db)
    rb, col_stats = _relbench_graph(db, g)
    assert set(rb.node_types) == set(g.node_types)
    assert set(rb.edge_types) == set(g.edge_types)
    for et in g.edge_types:  # element for element, in RelBench's (sorted) order
        assert torch.equal(rb[et].edge_index, g.data[et].edge_index), et
    n_checked = {"numerical": 0, "categorical": 0}
    for t in g.node_types:
        tf, spec = rb[t].tf, g.specs[t]
        assert tf.num_rows == g.num_nodes(t)
        assert ("time" in rb[t]) == ("time" in g.data[t])
        if "time" in rb[t]:
            assert torch.equal(rb[t].time, g.data[t].time)
        for st, names in tf.col_names_dict.items():
            feat = tf.feat_dict[st]
            for j, c in enumerate(names):
                if c == "__const__":  # a table without feature columns: the constant 1 in both
                    assert torch.equal(g.data[t].x_num[:, spec.num_cols.index(c)], feat[:, j].float())
                elif st == torch_frame.stype.numerical:
                    x = feat[:, j].double()
                    ok = ~torch.isnan(x)
                    mu, sd = x[ok].mean(), x[ok].std(unbiased=False)
                    want = torch.where(ok, (x - mu) / (sd if sd > 1e-12 else 1.0), torch.zeros_like(x))
                    got = g.data[t].x_num[:, spec.num_cols.index(c)].double()
                    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
                    n_checked["numerical"] += 1
                elif st == torch_frame.stype.categorical:
                    theirs = feat[:, j].numpy()  # index into col_stats COUNT (by count), -1 = missing
                    ours = g.data[t].x_cat[:, spec.cat_cols.index(c)].numpy()  # 1.. by count, 0 = missing
                    assert np.array_equal(ours == 0, theirs == -1)
                    pairs = set(zip(ours.tolist(), theirs.tolist()))
                    assert len({a for a, _ in pairs}) == len(pairs) == len({b for _, b in pairs})  # a bijection
                    cats, counts = col_stats[t][c][StatType.COUNT]
                    assert spec.cat_cards[spec.cat_cols.index(c)] == len(cats) + 1
                    ours_counts = np.bincount(ours, minlength=len(cats) + 1)[1:]
                    assert np.array_equal(ours_counts, np.asarray(counts))  # same ranking by count
                    n_checked["categorical"] += 1
                else:
                    pytest.fail(f"unexpected stype {st} for {t}.{c}")
    assert n_checked["numerical"] and n_checked["categorical"]


def test_negative_control_a_wrong_edge_list_is_caught(tiny_synth):
    g = build_graph(tiny_synth.db)
    rb, _ = _relbench_graph(tiny_synth.db, g)
    et = ("purchases", "f2p_item_id", "items")
    bad = g.data[et].edge_index.clone()
    bad[1] = bad[1].flip(0)
    assert not torch.equal(rb[et].edge_index, bad)


def test_stypes_are_torch_frames_inference(tiny_synth):
    db = tiny_synth.db  # every table has < 1,000 rows: RelBench's random sample is the whole table
    prop = get_stype_proposal(db)
    ours = infer_stypes(db)
    for t, tab in db.table_dict.items():
        keys = {tab.pkey_col, tab.time_col, *tab.fkey_col_to_pkey_table}
        assert ours[t] == {c: s.value for c, s in prop[t].items() if c not in keys}, t
    g = build_graph(db)
    assert g.specs["items"].stypes["price"] == "numerical" and "price" in g.specs["items"].num_cols
    assert g.specs["items"].stypes["category"] == "categorical" and "category" in g.specs["items"].cat_cols


def _many_categories_db(n_cat: int = 100, reps: int = 5) -> Database:
    rng = np.random.default_rng(0)
    n = n_cat * reps
    users = pd.DataFrame({"user_id": np.arange(n), "city": rng.permutation(np.repeat([f"c{i}" for i in range(n_cat)],
                                                                                     reps))})
    t0 = pd.Timestamp("2021-01-01")
    ev = pd.DataFrame({"event_id": np.arange(50), "user_id": rng.integers(0, n, 50),
                       "time": [t0 + pd.Timedelta(days=int(d)) for d in np.sort(rng.integers(0, 100, 50))],
                       "v": rng.normal(size=50)})
    return Database({"users": Table(users, {}, "user_id", None),
                     "events": Table(ev, {"user_id": "users"}, "event_id", "time")})


def test_no_category_cap():
    db = _many_categories_db()
    g = build_graph(db)
    spec = g.specs["users"]
    assert spec.stypes["city"] == "categorical"
    card = spec.cat_cards[spec.cat_cols.index("city")]
    codes = g.data["users"].x_cat[:, spec.cat_cols.index("city")]
    assert card == 101 and codes.unique().numel() == 100 and int(codes.min()) == 1  # all 100 kept (no 64 cap)


def test_col_to_stype_overrides_and_bad_values(tiny_synth):
    g = build_graph(tiny_synth.db, col_to_stype={"items": {"price": torch_frame.stype.categorical}})
    assert "price" in g.specs["items"].cat_cols and "price" not in g.specs["items"].num_cols
    with pytest.raises(SchemaError, match=r"col_to_stype\['items'\]\['price'\] must be one of"):
        build_graph(tiny_synth.db, col_to_stype={"items": {"price": "bogus"}})
    with pytest.raises(SchemaError, match="col_to_stype: no table 'nope'"):
        build_graph(tiny_synth.db, col_to_stype={"nope": {"x": "numerical"}})
    with pytest.raises(SchemaError, match="no column 'nope'"):
        build_graph(tiny_synth.db, col_to_stype={"items": {"nope": "numerical"}})
