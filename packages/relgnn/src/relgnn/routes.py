"""Atomic routes (RelGNN, Sec. 3): the composite message paths derived automatically from a relational schema.

RelBench turns every foreign key ``F.c -> D`` into two edge types, ``(F, "f2p_c", D)`` and its reverse
``(D, "rev_f2p_c", F)``. RelGNN groups the ``f2p`` edges by their source table ``F``:

* a **self-FK** (``F == D``) is a group of its own (it never pairs with another FK);
* a group with **one** FK ``F -> D`` gives two ``dim-dim`` routes ``F -> D`` and ``D -> F`` (plain edges);
* a group with **k >= 2** FKs (a bridge for k = 2, a hub/star for k >= 3) gives, for every ordered pair
  ``(q, v)``, ``q != v``, one ``dim-fact-dim`` route **V -> F -> Q**: aggregation edges ``(V, rev_f2p_v, F)`` then
  attention edges ``(F, f2p_q, Q)``. A fact table with k FKs yields k(k-1) routes and no plain route.

Total: ``sum_{k>=2 groups} k(k-1) + 2 * #single-FK groups + 2 * #self-FKs``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from relgnn.errors import SchemaError

EdgeType = tuple[str, str, str]


@dataclass(frozen=True)
class Route:
    """One atomic route.

    ``kind == "dim-dim"``: messages flow along ``edge`` only (``agg_edge`` is None).
    ``kind == "dim-fact-dim"``: ``agg_edge = (V, rev_f2p_v, F)`` updates the fact rows from V, then
    ``edge = (F, f2p_q, Q)`` carries attention messages from the fact rows into Q.
    """

    kind: str
    edge: EdgeType
    agg_edge: EdgeType | None = None

    @property
    def src(self) -> str:
        """The table whose rows start the route (V, or the source of a dim-dim edge)."""
        return self.agg_edge[0] if self.agg_edge is not None else self.edge[0]

    @property
    def dst(self) -> str:
        """The table that receives the attention output (Q)."""
        return self.edge[2]

    @property
    def fact(self) -> str | None:
        """The fact (bridge / hub) table F of a composite route, else None."""
        return self.edge[0] if self.agg_edge is not None else None

    @property
    def key(self) -> str:
        """A string usable as a ``ModuleDict`` key."""
        parts = [self.kind, *self.edge] + ([*self.agg_edge] if self.agg_edge is not None else [])
        return "__".join(parts).replace(".", "_")

    def as_tuple(self) -> tuple[str, ...]:
        """The official code's tuple format: ``('dim-dim', F, 'f2p_c', D)`` or
        ``('dim-fact-dim', F, 'f2p_q', Q, V, 'rev_f2p_v', F)``."""
        if self.agg_edge is None:
            return (self.kind, *self.edge)
        return (self.kind, *self.edge, *self.agg_edge)


def atomic_routes(edge_types: Iterable[Sequence[str]]) -> list[Route]:
    """Derive RelGNN's atomic routes from RelBench edge types.

    Args:
        edge_types: ``(src_table, relation, dst_table)`` triples; only ``f2p_*`` relations are inspected, and
            each must have its ``rev_f2p_*`` reverse in the list.

    Returns:
        The routes in a deterministic order (groups sorted by table, pairs in FK order).

    Raises:
        SchemaError: no ``f2p`` edge at all (a schema without foreign keys has no routes), or a missing reverse.
    """
    ets = [tuple(e) for e in edge_types]
    for e in ets:
        if len(e) != 3:
            raise SchemaError(f"edge types must be (src, relation, dst) triples, got {e!r}")
    present = set(ets)
    groups: dict[str, list[EdgeType]] = {}
    for src, rel, dst in ets:
        if not rel.startswith("f2p_"):
            continue
        if (dst, "rev_" + rel, src) not in present:
            raise SchemaError(f"edge type {(src, rel, dst)!r} has no reverse {(dst, 'rev_' + rel, src)!r}")
        key = f"{src}--{rel}" if src == dst else src  # self-FKs never pair with other FKs
        groups.setdefault(key, []).append((src, rel, dst))
    if not groups:
        raise SchemaError("the schema has no foreign keys (no 'f2p_*' edge types), so there are no atomic routes")
    routes: list[Route] = []
    for key in sorted(groups):
        fks = groups[key]
        if len(fks) == 1:
            f, rel, d = fks[0]
            routes.append(Route("dim-dim", (f, rel, d)))
            routes.append(Route("dim-dim", (d, "rev_" + rel, f)))
            continue
        for q in fks:
            for v in fks:
                if q == v:
                    continue
                f, rel_q, q_tab = q
                _, rel_v, v_tab = v
                routes.append(Route("dim-fact-dim", (f, rel_q, q_tab), (v_tab, "rev_" + rel_v, f)))
    return routes


def expected_route_count(edge_types: Iterable[Sequence[str]]) -> int:
    """The closed-form count ``sum_{k>=2} k(k-1) + 2 * #single-FK groups + 2 * #self-FKs``."""
    counts: dict[str, int] = {}
    self_fk = 0
    for src, rel, dst in edge_types:
        if not rel.startswith("f2p_"):
            continue
        if src == dst:
            self_fk += 1
        else:
            counts[src] = counts.get(src, 0) + 1
    return sum(k * (k - 1) if k >= 2 else 2 for k in counts.values()) + 2 * self_fk
