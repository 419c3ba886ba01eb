"""The full relational model (RelBench recipe): table encoders + temporal encoding + GNN + linear head.

``RelationalModel(graph_specs, edge_types, gnn="relgnn" | "sage" | "relgnn-mean")``:

* per-table encoder (the plain path used when torch-frame is absent): ``x = MLP(W_num x_num + Σ_j E_j[x_cat_j])``
  of shape (N, C);
* temporal encoding for time-stamped tables: ``x += W_t PE((seed_time − row_time) / 86400)`` (sinusoidal
  ``PositionalEncoding``, as RelBench's ``HeteroTemporalEncoder``);
* optional shallow embeddings ``x += E_table[n_id]``;
* optional ID-awareness (ID-GNN): a learned vector added to the seed rows;
* GNN: :class:`relgnn.conv.RelGNN`, its mean ablation, or :class:`relgnn.conv.HeteroGraphSAGE`;
* head: one ``Linear(C → out)`` (the official one-layer MLP head, whose norm argument PyG ignores).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch_geometric.data import HeteroData
from torch_geometric.nn import PositionalEncoding

from relgnn.config import GNN_KINDS  # noqa: F401 (re-exported; one list in the light config module)
from relgnn.conv import HeteroGraphSAGE, RelGNN, mkey, reset_all
from relgnn.errors import ConfigError, check_fraction, check_positive
from relgnn.graph import TableSpec


class TableEncoder(nn.Module):
    """Plain feature encoder of one table: (N, d_num) float + (N, d_cat) long → (N, C)."""

    def __init__(self, *, spec: TableSpec, channels: int):
        super().__init__()
        self.num = nn.Linear(len(spec.num_cols), channels) if spec.num_cols else None
        self.cats = nn.ModuleList(nn.Embedding(card, channels) for card in spec.cat_cards)
        self.bias = nn.Parameter(torch.zeros(channels))
        self.mlp = nn.Sequential(nn.LayerNorm(channels), nn.ReLU(), nn.Linear(channels, channels))

    def forward(self, x_num: Tensor, x_cat: Tensor) -> Tensor:
        h = self.bias.expand(x_num.shape[0], -1)
        if self.num is not None:
            h = h + self.num(x_num)
        for j, emb in enumerate(self.cats):
            h = h + emb(x_cat[:, j])
        return self.mlp(h)


class FrameEncoder(nn.Module):
    """RelBench's per-table encoder: a torch-frame ``ResNet`` (``num_layers`` residual blocks, ``LinearEncoder`` per
    numeric column, ``EmbeddingEncoder`` per categorical one) over the table's columns → (N, C). Our columns arrive
    already encoded (numerics standardised on the training rows, categories as 0..card-1 with 0 = unknown), so the
    column statistics are mean 0 / sd 1 and the category counts' sizes. Dropout 0.2 (torch-frame's default, as RelBench)."""

    def __init__(self, *, spec: TableSpec, channels: int, num_layers: int = 4, dropout: float = 0.2):
        super().__init__()
        import torch_frame
        from torch_frame.data.stats import StatType
        from torch_frame.nn.models import ResNet

        self._stype = torch_frame.stype
        self._tensor_frame = torch_frame.TensorFrame
        names, stats = {}, {}
        if spec.num_cols:
            names[torch_frame.stype.numerical] = list(spec.num_cols)
            stats.update({c: {StatType.MEAN: 0.0, StatType.STD: 1.0} for c in spec.num_cols})
        if spec.cat_cols:
            names[torch_frame.stype.categorical] = list(spec.cat_cols)
            stats.update({c: {StatType.COUNT: (list(range(card)), [1] * card)}
                          for c, card in zip(spec.cat_cols, spec.cat_cards, strict=True)})
        self.col_names = names
        self.net = ResNet(channels=channels, out_channels=channels, num_layers=num_layers, col_stats=stats,
                          col_names_dict=names, dropout_prob=dropout)

    def forward(self, x_num: Tensor, x_cat: Tensor) -> Tensor:
        feat = {}
        if self._stype.numerical in self.col_names:
            feat[self._stype.numerical] = x_num
        if self._stype.categorical in self.col_names:
            feat[self._stype.categorical] = x_cat
        n = x_num.shape[0]
        if n == 0:
            return x_num.new_zeros((0, self.net.decoder[-1].out_features))
        return self.net(self._tensor_frame(feat, self.col_names, num_rows=n))


ENCODERS = ("mlp", "torch-frame")


class RelationalModel(nn.Module):
    """Encoders + temporal encoding + GNN + head over a :func:`relgnn.graph.snapshot` or a sampled sub-graph.

    Args:
        specs: ``RelGraph.specs`` (table → feature layout).
        edge_types: ``RelGraph.edge_types``.
        gnn: "relgnn" (paper), "relgnn-mean" (ablation: mean instead of attention), "sage" (RelBench
            HeteroGraphSAGE, sum) or "sage-mean".
        channels, num_layers, num_heads: C, L, H.
        out_channels: head width (1 for binary / regression / ID-GNN scores).
        shallow: ``{table: num_rows}`` tables that get a learned embedding per row.
        id_awareness: add a learned vector to seed rows (ID-GNN recommendation readout).
        simplified_mp, route_aggr: RelGNN options (see :class:`relgnn.conv.RelGNN`).
        encoder: "mlp" (:class:`TableEncoder`) or "torch-frame" (:class:`FrameEncoder`, RelBench's ResNet).
        dropout: dropout probability of the torch-frame encoder (ignored by the MLP encoder).
    """

    def __init__(self, *, specs: dict[str, TableSpec], edge_types: Sequence[tuple[str, str, str]], gnn: str = "relgnn",
                 channels: int = 64, num_layers: int = 2, num_heads: int = 4, out_channels: int = 1,
                 shallow: dict[str, int] | None = None, id_awareness: bool = False, simplified_mp: bool = False,
                 route_aggr: str = "sum", encoder: str = "mlp", dropout: float = 0.2):
        super().__init__()
        if encoder not in ENCODERS:
            raise ConfigError(f"encoder must be one of {ENCODERS}, got {encoder!r}")
        if gnn not in GNN_KINDS:
            raise ConfigError(f"gnn must be one of {GNN_KINDS}, got {gnn!r}")
        check_positive("channels", channels)
        check_positive("num_layers", num_layers)
        check_positive("num_heads", num_heads)
        check_positive("out_channels", out_channels)
        if channels % 2:
            raise ConfigError(f"channels must be even (sinusoidal time encoding), got {channels}")
        self.gnn_kind = gnn
        node_types = list(specs)
        self.node_types = node_types
        check_fraction("dropout", dropout)
        if encoder == "torch-frame":
            self.encoders = nn.ModuleDict({mkey(nt): FrameEncoder(spec=s, channels=channels, dropout=dropout)
                                           for nt, s in specs.items()})
        else:
            self.encoders = nn.ModuleDict({mkey(nt): TableEncoder(spec=s, channels=channels) for nt, s in specs.items()})
        self.pe = PositionalEncoding(channels)
        self.time_lins = nn.ModuleDict({mkey(nt): nn.Linear(channels, channels) for nt, s in specs.items() if s.has_time})
        self.shallow = nn.ModuleDict({mkey(nt): nn.Embedding(n, channels) for nt, n in (shallow or {}).items()})
        self.id_emb = nn.Parameter(torch.zeros(channels)) if id_awareness else None
        if gnn.startswith("relgnn"):
            self.gnn = RelGNN(node_types=node_types, edge_types=edge_types, channels=channels, num_layers=num_layers,
                              num_heads=num_heads, attention=gnn == "relgnn", simplified_mp=simplified_mp,
                              route_aggr=route_aggr)
        else:
            self.gnn = HeteroGraphSAGE(node_types=node_types, edge_types=edge_types, channels=channels,
                                       num_layers=num_layers, aggr="mean" if gnn == "sage-mean" else "sum")
        self.head = nn.Linear(channels, out_channels)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        reset_all(self)
        if self.id_emb is not None:
            nn.init.normal_(self.id_emb, std=1.0)

    def encode(self, data: HeteroData, seed_index: dict[str, Tensor] | None = None) -> dict[str, Tensor]:
        """Initial node states ``{type: (N_type, C)}``."""
        x = {}
        for nt in self.node_types:
            st, k = data[nt], mkey(nt)
            h = self.encoders[k](st.x_num, st.x_cat)
            if k in self.time_lins and "time" in st:
                rel_days = (st.seed_time - st.time).to(torch.float32) / 86400.0  # (N,)
                h = h + self.time_lins[k](self.pe(rel_days))
            if k in self.shallow:
                h = h + self.shallow[k](st.n_id)
            x[nt] = h
        if self.id_emb is not None and seed_index:
            for nt, idx in seed_index.items():
                bump = torch.zeros_like(x[nt])
                bump[idx] = self.id_emb
                x[nt] = x[nt] + bump
        return x

    def forward(self, data: HeteroData, seed_index: dict[str, Tensor] | None = None) -> dict[str, Tensor]:
        """Final node states ``{type: (N_type, C)}`` (apply :attr:`head` to the rows you read out)."""
        x = self.encode(data, seed_index)
        return self.gnn(x, data.edge_index_dict)
