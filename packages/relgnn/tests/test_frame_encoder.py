"""The torch-frame per-table encoder (RelBench's ResNet): rows are encoded independently (the encoding of a row does
not depend on the other rows of its batch), it trains end to end, and fits are deterministic."""

from __future__ import annotations

import numpy as np
import torch
from relgnn.config import FitConfig
from relgnn.graph import TableSpec, build_graph
from relgnn.model import FrameEncoder, TableEncoder
from relgnn.train import fit, prepare_task


def test_frame_encoder_encodes_rows_independently():
    torch.manual_seed(0)
    spec = TableSpec(num_cols=["a", "b"], cat_cols=["c"], cat_cards=[4], has_time=False)
    enc = FrameEncoder(spec=spec, channels=8).eval()
    x_num, x_cat = torch.randn(6, 2), torch.randint(0, 4, (6, 1))
    full = enc(x_num, x_cat)
    assert full.shape == (6, 8) and torch.isfinite(full).all()
    perm = torch.randperm(6)
    torch.testing.assert_close(enc(x_num[perm], x_cat[perm]), full[perm])  # row-wise: equivariant to row order
    torch.testing.assert_close(enc(x_num[:2], x_cat[:2]), full[:2])  # and independent of the other rows
    assert enc(x_num[:0], x_cat[:0]).shape == (0, 8)
    # negative control: the categorical column matters (another category, another encoding)
    assert not torch.allclose(enc(x_num, (x_cat + 1) % 4), full)
    assert sum(p.numel() for p in enc.parameters()) > sum(p.numel() for p in TableEncoder(spec=spec, channels=8)
                                                          .parameters())


def test_fit_with_torch_frame_encoder_is_deterministic(tiny_synth):
    task = tiny_synth.tasks["user-churn"]
    graph = build_graph(task.get_db())
    td = prepare_task(task, graph)
    cfg = FitConfig(gnn="relgnn", num_layers=1, channels=8, num_heads=2, epochs=1, seed=3, num_neighbors=(8, 4),
                    batch_size=32, encoder="torch-frame")
    a, b = fit(graph, td, cfg), fit(graph, td, cfg)
    assert np.array_equal(a.test_pred, b.test_pred) and np.isfinite(a.test)
    assert all(isinstance(e, FrameEncoder) for e in a.model.encoders.values())  # the option reached the model
