from __future__ import annotations

import pytest
from relgnn import atomic_routes
from relgnn.errors import SchemaError
from relgnn.graph import build_graph
from relgnn.routes import expected_route_count


def _tuples(ets):
    return {r.as_tuple() for r in atomic_routes(ets)}


def test_fake_dataset_routes_exact(fake_db):
    g = build_graph(fake_db())
    assert _tuples(g.edge_types) == {
        ("dim-fact-dim", "review", "f2p_customer_id", "customer", "product", "rev_f2p_product_id", "review"),
        ("dim-fact-dim", "review", "f2p_product_id", "product", "customer", "rev_f2p_customer_id", "review"),
        ("dim-fact-dim", "relations", "f2p_customer_id", "customer", "product", "rev_f2p_product_id", "relations"),
        ("dim-fact-dim", "relations", "f2p_product_id", "product", "customer", "rev_f2p_customer_id", "relations"),
    }


def test_synthetic_routes_exact(tiny_graph):
    ol = ["user_id", "item_id", "store_id"]
    par = {"user_id": "users", "item_id": "items", "store_id": "stores"}
    expected = {
        ("dim-fact-dim", "purchases", "f2p_user_id", "users", "items", "rev_f2p_item_id", "purchases"),
        ("dim-fact-dim", "purchases", "f2p_item_id", "items", "users", "rev_f2p_user_id", "purchases"),
        ("dim-dim", "visits", "f2p_user_id", "users"), ("dim-dim", "users", "rev_f2p_user_id", "visits"),
        ("dim-dim", "posts", "f2p_author_id", "users"), ("dim-dim", "users", "rev_f2p_author_id", "posts"),
        ("dim-dim", "posts", "f2p_parent_id", "posts"), ("dim-dim", "posts", "rev_f2p_parent_id", "posts"),
    }
    expected |= {("dim-fact-dim", "order_lines", f"f2p_{q}", par[q], par[v], f"rev_f2p_{v}", "order_lines")
                 for q in ol for v in ol if q != v}
    got = atomic_routes(tiny_graph.edge_types)
    assert {r.as_tuple() for r in got} == expected
    assert len(got) == 14 == expected_route_count(tiny_graph.edge_types)


def test_note_schema_count_and_invariants():
    fks = [("purchase", "f2p_user", "user"), ("purchase", "f2p_item", "item"), ("item_tag", "f2p_item", "item"),
           ("item_tag", "f2p_tag", "tag"), ("follows", "f2p_src_user", "user"), ("follows", "f2p_dst_user", "user"),
           ("visit", "f2p_user", "user"), ("order_line", "f2p_user", "user"), ("order_line", "f2p_item", "item"),
           ("order_line", "f2p_store", "store")]
    ets = fks + [(d, "rev_" + r, s) for s, r, d in fks]
    routes = atomic_routes(ets)
    assert len(routes) == 14 == expected_route_count(ets)
    for r in routes:
        if r.agg_edge is not None:
            v, rel, f = r.agg_edge
            assert (f, rel[4:], v) in ets  # aggregation edge is the reverse of an existing f2p edge
            assert rel[4:] != r.edge[1]  # never pairs an FK with itself
            assert r.fact == f == r.edge[0]


def test_self_fk_isolated():
    ets = [("posts", "f2p_owner", "users"), ("users", "rev_f2p_owner", "posts"),
           ("posts", "f2p_parent", "posts"), ("posts", "rev_f2p_parent", "posts")]
    routes = atomic_routes(ets)
    assert all(r.kind == "dim-dim" for r in routes) and len(routes) == 4


def test_no_fk_is_an_error():
    with pytest.raises(SchemaError, match="no foreign keys"):
        atomic_routes([("a", "rel", "b")])
    with pytest.raises(SchemaError, match="reverse"):
        atomic_routes([("a", "f2p_x", "b")])
