"""RelGNN's composite message passing (Sec. 3.2) and the RelBench HeteroGraphSAGE baseline.

For a composite route ρ = V → F → Q (weights specific to ρ), with ``h`` of shape (N_type, C):

* fact update (SAGE, sum): ``m_f = W1 h_f + W2 Σ_{v→f} h_v + b``   (a fact row has ≤ 1 parent per FK)
* attention into Q (TransformerConv, H heads, root weight):
  ``α^k_{qf} = softmax_{f∈N(q)}((W_Q^k h_q)ᵀ(W_K^k m_f)/√C)``,
  ``o_q = W_O [ ∥_k Σ_f α^k_{qf} W_V^k m_f + W_S h_q ]``  (W_S: C → H·C, W_O: H·C → C)
* the route emits ``o_q`` to Q **and** ``m_f`` to F.

A ``dim-dim`` route applies the same TransformerConv + W_O directly on its edge. Per layer, every node type sums
(``route_aggr="sum"``, or averages) the updates it receives, then LayerNorm + ReLU; a type that receives nothing is
carried over unchanged (default), or, with ``simplified_mp=True``, as ``ReLU(LayerNorm(x))`` (the released code puts
the untouched input into the layer's output, which the model then normalises like every other type).

Default semantics are per node: a destination without fact rows gets only ``W_O W_S h_q``; a fact row without a
parent gets ``W1 h_f + b``. ``simplified_mp=True`` reproduces the official code's graph-level switch (a route
whose attention edges are empty in the whole graph is skipped; if its aggregation edges are empty, ``m_f = h_f``; a
table that then receives no route output gets ``ReLU(LayerNorm(h))``, not its raw input).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch_geometric.data import HeteroData
from torch_geometric.nn import HeteroConv, SAGEConv, TransformerConv

from relgnn.errors import ConfigError, check_positive
from relgnn.routes import Route, atomic_routes

_EMPTY = torch.zeros(2, 0, dtype=torch.long)


def mkey(name: str) -> str:
    """A ``ModuleDict`` key for a table name (avoids clashes such as ``"items"`` and forbidden dots)."""
    return "t__" + name.replace(".", "_")


def reset_all(module: nn.Module) -> None:
    """Re-draw every sub-module that has ``reset_parameters`` (the official code misses SAGE and W_O)."""
    for m in module.modules():
        if m is not module and hasattr(m, "reset_parameters"):
            m.reset_parameters()


class RelGNNConv(nn.Module):
    """One route's composite operator.

    Args:
        channels: C, input and output width.
        num_heads: H attention heads (concatenated, then projected back to C by ``final_proj``).
        composite: True for ``dim-fact-dim`` routes (with the SAGE fact update), False for ``dim-dim``.
        attention: False replaces the attention by a mean over fact rows (the ablation "composite routes, mean
            instead of attention"): ``o_q = W_O [W_V mean_f m_f + W_S h_q]``.
        fact_aggr: aggregation of the SAGE fact update ("sum", the official default, or "mean").
    """

    def __init__(self, *, channels: int, num_heads: int = 1, composite: bool = True, attention: bool = True,
                 fact_aggr: str = "sum"):
        super().__init__()
        check_positive("channels", channels)
        check_positive("num_heads", num_heads)
        if fact_aggr not in ("sum", "mean"):
            raise ConfigError(f"fact_aggr must be 'sum' or 'mean', got {fact_aggr!r}")
        self.composite, self.attention = composite, attention
        self.fact_conv = SAGEConv((channels, channels), channels, aggr=fact_aggr) if composite else None
        if attention:
            self.dst_conv = TransformerConv((channels, channels), channels, heads=num_heads, concat=True,
                                            root_weight=True)
            self.final_proj = nn.Linear(num_heads * channels, channels)
        else:
            self.dst_conv = SAGEConv((channels, channels), channels, aggr="mean")
            self.final_proj = nn.Linear(channels, channels)

    def reset_parameters(self) -> None:
        reset_all(self)

    def fact_update(self, h_src: Tensor, h_fact: Tensor, agg_edge_index: Tensor) -> Tensor:
        """``m_f = W1 h_f + W2 Σ h_v + b`` of shape (N_F, C)."""
        return self.fact_conv((h_src, h_fact), agg_edge_index)

    def attend(self, m_fact: Tensor, h_dst: Tensor, edge_index: Tensor, *, return_attention_weights: bool = False):
        """``o_q`` of shape (N_Q, C); with ``return_attention_weights`` also ``(edge_index, alpha (E, H))``."""
        if self.attention and return_attention_weights:
            out, (ei, alpha) = self.dst_conv((m_fact, h_dst), edge_index, return_attention_weights=True)
            return self.final_proj(out), (ei, alpha)
        out = self.dst_conv((m_fact, h_dst), edge_index)  # (N_Q, H*C)
        return self.final_proj(out)

    def forward(self, h_src: Tensor, h_dst: Tensor, edge_index: Tensor, *, h_fact: Tensor | None = None,
                agg_edge_index: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """Composite: ``(o_q, m_f)``; dim-dim: ``(o_dst, None)``."""
        if not self.composite:
            return self.attend(h_src, h_dst, edge_index), None
        m = self.fact_update(h_src, h_fact, agg_edge_index)
        return self.attend(m, h_dst, edge_index), m


def _edges(edge_index_dict, et) -> Tensor:
    ei = edge_index_dict.get(et)
    return _EMPTY if ei is None else ei


class RelGNNLayer(nn.Module):
    """One RelGNN layer: all routes, per-type ``route_aggr`` of the emitted updates, LayerNorm, ReLU."""

    def __init__(self, *, node_types: Sequence[str], routes: Sequence[Route], channels: int, num_heads: int = 1,
                 route_aggr: str = "sum", attention: bool = True, simplified_mp: bool = False,
                 fact_aggr: str = "sum"):
        super().__init__()
        if route_aggr not in ("sum", "mean"):
            raise ConfigError(f"route_aggr must be 'sum' or 'mean', got {route_aggr!r}")
        self.routes = list(routes)
        self.route_aggr, self.simplified_mp = route_aggr, simplified_mp
        self.convs = nn.ModuleDict({
            r.key: RelGNNConv(channels=channels, num_heads=num_heads, composite=r.kind == "dim-fact-dim",
                              attention=attention, fact_aggr=fact_aggr)
            for r in self.routes
        })
        self.norms = nn.ModuleDict({mkey(nt): nn.LayerNorm(channels) for nt in node_types})

    def forward(self, x_dict: dict[str, Tensor], edge_index_dict: dict) -> dict[str, Tensor]:
        outs: dict[str, list[Tensor]] = {}
        for r in self.routes:
            conv = self.convs[r.key]
            ei = _edges(edge_index_dict, r.edge)
            if self.simplified_mp and ei.numel() == 0:
                continue
            if r.agg_edge is None:
                o, _ = conv(x_dict[r.edge[0]], x_dict[r.dst], ei)
                outs.setdefault(r.dst, []).append(o)
                continue
            agg = _edges(edge_index_dict, r.agg_edge)
            h_f = x_dict[r.fact]
            m = h_f if (self.simplified_mp and agg.numel() == 0) else conv.fact_update(x_dict[r.src], h_f, agg)
            outs.setdefault(r.dst, []).append(conv.attend(m, x_dict[r.dst], ei))
            outs.setdefault(r.fact, []).append(m)
        new = {}
        for nt, x in x_dict.items():
            if nt not in outs:
                # unreached table: carried over unchanged (per-node semantics); the official simplified rule carries
                # it into the layer's output dict, where the per-type LayerNorm + ReLU still apply to it
                new[nt] = torch.relu(self.norms[mkey(nt)](x)) if self.simplified_mp else x
                continue
            s = torch.stack(outs[nt], 0)  # (R_nt, N, C)
            s = s.sum(0) if self.route_aggr == "sum" else s.mean(0)
            new[nt] = torch.relu(self.norms[mkey(nt)](s))
        return new


class RelGNN(nn.Module):
    """RelGNN's message-passing stack over a RelBench heterogeneous graph.

    ``forward(x_dict, edge_index_dict)`` or ``forward(data)`` (a ``HeteroData`` whose node stores carry ``x``)
    returns the updated ``{node_type: (N_type, C)}``.

    Args:
        node_types / edge_types: the graph's metadata (``data.metadata()``); routes come from
            :func:`relgnn.atomic_routes`.
        channels, num_layers, num_heads: C, L, H.
        route_aggr: combination of the route outputs per node type ("sum" default, "mean").
        attention: False = the mean-aggregation ablation.
        simplified_mp: the official code's graph-level skip rule (see module docstring).
    """

    def __init__(self, *, node_types: Sequence[str], edge_types: Sequence[tuple[str, str, str]], channels: int = 64,
                 num_layers: int = 2, num_heads: int = 1, route_aggr: str = "sum", attention: bool = True,
                 simplified_mp: bool = False, fact_aggr: str = "sum"):
        super().__init__()
        check_positive("channels", channels)
        check_positive("num_layers", num_layers)
        check_positive("num_heads", num_heads)
        self.routes = atomic_routes(edge_types)
        self.layers = nn.ModuleList(
            RelGNNLayer(node_types=node_types, routes=self.routes, channels=channels, num_heads=num_heads,
                        route_aggr=route_aggr, attention=attention, simplified_mp=simplified_mp,
                        fact_aggr=fact_aggr)
            for _ in range(num_layers)
        )

    def reset_parameters(self) -> None:
        reset_all(self)

    def forward(self, x_dict, edge_index_dict=None) -> dict[str, Tensor]:
        if isinstance(x_dict, HeteroData):
            x_dict, edge_index_dict = x_dict.x_dict, x_dict.edge_index_dict
        for layer in self.layers:
            x_dict = layer(x_dict, edge_index_dict)
        return x_dict


class HeteroGraphSAGE(nn.Module):
    """RelBench's baseline: ``h'_v = ReLU(LN(Σ_{e → type(v)} W1_e h_v + W2_e AGG_{u∈N_e(v)} h_u))``."""

    def __init__(self, *, node_types: Sequence[str], edge_types: Sequence[tuple[str, str, str]], channels: int = 64,
                 num_layers: int = 2, aggr: str = "sum"):
        super().__init__()
        check_positive("channels", channels)
        check_positive("num_layers", num_layers)
        if aggr not in ("sum", "mean", "max"):
            raise ConfigError(f"aggr must be 'sum', 'mean' or 'max', got {aggr!r}")
        self.edge_types = [tuple(e) for e in edge_types]
        self.convs = nn.ModuleList(
            HeteroConv({et: SAGEConv((channels, channels), channels, aggr=aggr) for et in self.edge_types},
                       aggr="sum")
            for _ in range(num_layers)
        )
        self.norms = nn.ModuleList(nn.ModuleDict({mkey(nt): nn.LayerNorm(channels) for nt in node_types})
                                   for _ in range(num_layers))

    def reset_parameters(self) -> None:
        reset_all(self)

    def forward(self, x_dict, edge_index_dict=None) -> dict[str, Tensor]:
        if isinstance(x_dict, HeteroData):
            x_dict, edge_index_dict = x_dict.x_dict, x_dict.edge_index_dict
        eid = {et: _edges(edge_index_dict, et) for et in self.edge_types}
        for conv, norms in zip(self.convs, self.norms):
            out = conv(x_dict, eid)
            x_dict = {nt: torch.relu(norms[mkey(nt)](out[nt])) if nt in out else x for nt, x in x_dict.items()}
        return x_dict
