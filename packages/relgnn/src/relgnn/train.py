"""Time-correct training and evaluation of a :class:`relgnn.model.RelationalModel` on a RelBench task.

Entity tasks (binary classification: BCE, ROC-AUC; regression: L1, MAE) train on **full-graph time snapshots**:
for each seed timestamp ``t`` of the training table, message passing runs on :func:`relgnn.graph.snapshot`
(rows with ``time <= t`` only) and the entity rows of that timestamp are read out — no row later than ``t`` can
influence a prediction at ``t``. Regression predictions on val/test are clamped to the train targets' 2nd–98th
percentiles (RelBench); the L1 loss is computed on targets shifted by the train median and scaled by the
train mean absolute deviation (a constant rescaling of RelBench's L1 that lets a linear head reach the target
scale within a few CPU epochs). Recommendation tasks use the ID-GNN readout on disjoint per-seed sub-graphs from the
pure-torch :class:`relgnn.sampler.TemporalSampler`: the seed row gets the ID embedding, every destination row in
its sub-graph is scored with the head (BCE against the true destination list), and the top-k scores give MAP@k.
Model selection: the epoch with the best validation metric (strict improvement, upstream RelBench).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from relbench.base import TaskType
from torch import Tensor

from relgnn.errors import ConfigError, TaskError, check_positive
from relgnn.graph import RelGraph, snapshot, to_seconds
from relgnn.metrics import mae, map_at_k, roc_auc
from relgnn.model import GNN_KINDS, RelationalModel
from relgnn.sampler import TemporalSampler


@dataclass(frozen=True)
class FitConfig:
    """Model and optimisation settings (RelBench defaults scaled to CPU)."""

    gnn: str = "relgnn"
    channels: int = 64
    num_layers: int = 2
    num_heads: int = 4
    epochs: int = 20
    lr: float = 5e-3
    simplified_mp: bool = False
    route_aggr: str = "sum"
    shallow: bool = False
    num_neighbors: tuple[int, ...] = (32, 16)
    temporal_strategy: str = "uniform"
    batch_size: int = 512
    seed: int = 0

    def validate(self) -> None:
        if self.gnn not in GNN_KINDS:
            raise ConfigError(f"gnn must be one of {GNN_KINDS}, got {self.gnn!r}")
        for name in ("channels", "num_layers", "num_heads", "epochs", "batch_size"):
            check_positive(name, getattr(self, name))
        check_positive("lr", self.lr)
        if self.route_aggr not in ("sum", "mean"):
            raise ConfigError(f"route_aggr must be 'sum' or 'mean', got {self.route_aggr!r}")


@dataclass
class Group:
    """The rows of one split that share a seed time: ``ids`` (n,), targets, and their row positions."""

    t: int
    ids: Tensor
    y: Tensor | list
    pos: np.ndarray


@dataclass
class TaskData:
    """A task's splits grouped by seed time."""

    kind: str  # "binary" | "regression" | "recommendation"
    entity: str
    dst: str | None
    k: int | None
    splits: dict[str, list[Group]]
    n_rows: dict[str, int]
    targets: dict[str, object]
    clamp: tuple[float, float] | None = None
    y_shift: float = 0.0
    y_scale: float = 1.0

    @property
    def metric(self) -> str:
        return {"binary": "roc_auc", "regression": "mae", "recommendation": f"map@{self.k}"}[self.kind]

    @property
    def higher_is_better(self) -> bool:
        return self.kind != "regression"


def prepare_task(task, graph: RelGraph, *, db=None) -> TaskData:
    """Read the train/val/test tables of a RelBench task and group their rows by seed time.

    Raises :class:`TaskError` for an unsupported task type, entity ids outside the table, or seed times before the
    database starts.
    """
    tt = getattr(task, "task_type", None)
    kinds = {TaskType.BINARY_CLASSIFICATION: "binary", TaskType.REGRESSION: "regression",
             TaskType.RECOMMENDATION: "recommendation"}
    if tt not in kinds:
        raise TaskError(f"task_type must be one of {[k.value for k in kinds]}, got {tt!r}")
    kind = kinds[tt]
    full_db = db if db is not None else task.get_db(upto_test_timestamp=False)
    tables = {"train": task.get_table("train", db=full_db), "val": task.get_table("val", db=full_db),
              "test": task.get_table("test", mask_input_cols=False, db=full_db)}
    if kind == "recommendation":
        ent, col, dst, dcol, k = task.src_entity_table, task.src_entity_col, task.dst_entity_table, \
            task.dst_entity_col, int(task.eval_k)
    else:
        ent, col, dst, dcol, k = task.entity_table, task.entity_col, None, task.target_col, None
    if ent not in graph.specs:
        raise TaskError(f"entity table {ent!r} is not in the graph (tables: {graph.node_types})")
    n_ent = graph.num_nodes(ent)
    min_t = min((int(graph.data[nt].time.min()) for nt in graph.node_types
                 if "time" in graph.data[nt] and graph.data[nt].num_nodes), default=None)
    splits, n_rows, targets = {}, {}, {}
    for split, table in tables.items():
        df = table.df.reset_index(drop=True)
        ids = df[col].to_numpy()
        if len(ids) and (ids.min() < 0 or ids.max() >= n_ent):
            raise TaskError(f"{split} table: entity ids must lie in [0, {n_ent}) of table {ent!r}")
        ts = np.array([to_seconds(t) for t in df[task.time_col]]) if len(df) else np.zeros(0, dtype=np.int64)
        if min_t is not None and len(ts) and ts.min() < min_t:
            raise TaskError(f"{split} table: seed time {pd.Timestamp(ts.min(), unit='s')} is before the database starts")
        groups = []
        for t in np.unique(ts):
            pos = np.nonzero(ts == t)[0]
            if kind == "recommendation":
                y = [list(map(int, df[dcol].iloc[p])) for p in pos]
            else:
                y = torch.tensor(df[dcol].to_numpy(dtype="float64")[pos], dtype=torch.float32)
            groups.append(Group(int(t), torch.as_tensor(ids[pos], dtype=torch.long), y, pos))
        splits[split], n_rows[split] = groups, len(df)
        targets[split] = list(df[dcol]) if kind == "recommendation" else df[dcol].to_numpy(dtype="float64")
    if n_rows["train"] == 0:
        raise TaskError("the training table is empty")
    td = TaskData(kind, ent, dst, k, splits, n_rows, targets)
    if kind == "regression":
        y = targets["train"]
        td.clamp = (float(np.percentile(y, 2)), float(np.percentile(y, 98)))
        td.y_shift = float(np.median(y))
        td.y_scale = float(max(np.mean(np.abs(y - td.y_shift)), 1e-6))
    return td


@dataclass
class FitResult:
    """What :func:`fit` measured."""

    metric: str
    val: float
    test: float
    test_pred: np.ndarray
    val_curve: list[float]
    best_epoch: int
    epoch_seconds: list[float]
    epoch_cpu_seconds: list[float]
    train_rows_per_s: float
    infer_rows_per_s: float
    activation_mb: float
    num_params: int
    model: RelationalModel = field(repr=False)


def build_model(cfg: FitConfig, graph: RelGraph, td: TaskData) -> RelationalModel:
    """The model for ``cfg`` on ``graph`` (ID awareness for recommendation)."""
    cfg.validate()
    shallow = {td.dst: graph.num_nodes(td.dst)} if (cfg.shallow and td.dst) else None
    model = RelationalModel(specs=graph.specs, edge_types=graph.edge_types, gnn=cfg.gnn, channels=cfg.channels,
                            num_layers=cfg.num_layers, num_heads=cfg.num_heads, out_channels=1, shallow=shallow,
                            id_awareness=td.kind == "recommendation", simplified_mp=cfg.simplified_mp,
                            route_aggr=cfg.route_aggr)
    return model


class _Runner:
    def __init__(self, model: RelationalModel, graph: RelGraph, td: TaskData, cfg: FitConfig):
        self.model, self.graph, self.td, self.cfg = model, graph, td, cfg
        self.gen = torch.Generator().manual_seed(cfg.seed)
        self.sampler = (TemporalSampler(graph, num_neighbors=cfg.num_neighbors, temporal_strategy=cfg.temporal_strategy,
                                        generator=self.gen) if td.kind == "recommendation" else None)

    # --- entity tasks: full-graph snapshot at the group's seed time
    def entity_out(self, g: Group) -> Tensor:
        snap = snapshot(self.graph, g.t)
        loc = snap.inv[self.td.entity][g.ids]
        if (loc < 0).any():
            raise TaskError(f"entity rows of {self.td.entity!r} are later than their seed time")
        h = self.model(snap)
        return self.model.head(h[self.td.entity][loc]).squeeze(-1)  # (n,)

    # --- recommendation: ID-GNN readout on sampled disjoint sub-graphs
    def rec_chunks(self, g: Group):
        bs = self.cfg.batch_size
        for s in range(0, g.ids.numel(), bs):
            ids = g.ids[s:s + bs]
            times = torch.full((ids.numel(),), g.t, dtype=torch.long)
            sub, seed_local = self.sampler.sample(self.td.entity, ids, times)
            h = self.model(sub, {self.td.entity: seed_local})
            logits = self.model.head(h[self.td.dst]).squeeze(-1)  # (N_dst_sub,)
            yield s, ids.numel(), sub[self.td.dst].batch, sub[self.td.dst].n_id, logits

    def loss(self, g: Group) -> Tensor:
        if self.td.kind == "binary":
            return torch.nn.functional.binary_cross_entropy_with_logits(self.entity_out(g), g.y)
        if self.td.kind == "regression":
            return torch.nn.functional.l1_loss(self.entity_out(g), (g.y - self.td.y_shift) / self.td.y_scale)
        n_dst = self.graph.num_nodes(self.td.dst)
        losses = []
        for s, _, b, nid, logits in self.rec_chunks(g):
            keys = torch.tensor([(i) * n_dst + d for i, lst in enumerate(g.y[s:s + self.cfg.batch_size]) for d in lst],
                                dtype=torch.long)
            lab = torch.isin(b * n_dst + nid, keys).float()
            if logits.numel():
                losses.append(torch.nn.functional.binary_cross_entropy_with_logits(logits, lab, reduction="sum"))
        total = sum(lab_sum for lab_sum in losses) if losses else None
        return None if total is None else total / max(1, sum(1 for _ in losses))

    @torch.no_grad()
    def predict(self, split: str) -> np.ndarray:
        self.model.eval()
        td = self.td
        if td.kind != "recommendation":
            out = np.zeros(td.n_rows[split])
            for g in td.splits[split]:
                p = self.entity_out(g)
                out[g.pos] = (torch.sigmoid(p) if td.kind == "binary" else p * td.y_scale + td.y_shift).numpy()
            if td.kind == "regression":
                out = np.clip(out, *td.clamp)
            return out
        n_dst = self.graph.num_nodes(td.dst)
        out = np.zeros((td.n_rows[split], td.k), dtype=np.int64)
        for g in td.splits[split]:
            for s, n, b, nid, logits in self.rec_chunks(g):
                scores = torch.zeros(n, n_dst)
                scores[b, nid] = torch.sigmoid(logits)
                out[g.pos[s:s + n]] = torch.topk(scores, td.k, dim=1).indices.numpy()
        return out

    def score(self, split: str, pred: np.ndarray) -> float:
        return evaluate_predictions(self.td, split, pred, num_dst=self.graph.num_nodes(self.td.dst) if self.td.dst else None)


def evaluate_predictions(td: TaskData, split: str, pred: np.ndarray, *, num_dst: int | None = None) -> float:
    """The task's metric of ``pred`` on ``split`` (ROC-AUC, MAE or MAP@k)."""
    y = td.targets[split]
    if td.kind == "binary":
        return roc_auc(y, pred)
    if td.kind == "regression":
        return mae(y, pred)
    return map_at_k(pred, y, k=td.k, num_dst=num_dst)


def activation_megabytes(fn) -> float:
    """Bytes saved for backward while running ``fn()`` (the activation memory of one training step), in MB."""
    total = [0]

    def pack(t):
        total[0] += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    del out
    return total[0] / 2**20


def fit(graph: RelGraph, td: TaskData, cfg: FitConfig, *, progress=None) -> FitResult:
    """Train with Adam for ``cfg.epochs`` epochs (one step per training seed time; chunks of ``batch_size`` seeds
    for recommendation), select the best validation epoch, and return test predictions and timings."""
    from icml25.seeding import seed_everything

    cfg.validate()
    seed_everything(cfg.seed)
    model = build_model(cfg, graph, td)
    run = _Runner(model, graph, td, cfg)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    rng = np.random.default_rng(cfg.seed)
    best, best_state, best_epoch, curve, epoch_s, epoch_cpu = None, None, -1, [], [], []
    model.train()
    act_mb = activation_megabytes(lambda: run.loss(td.splits["train"][-1]))
    for epoch in range(cfg.epochs):
        model.train()
        t0, c0 = time.perf_counter(), time.process_time()
        for gi in rng.permutation(len(td.splits["train"])):
            g = td.splits["train"][gi]
            opt.zero_grad()
            loss = run.loss(g)
            if loss is None:
                continue
            loss.backward()
            opt.step()
        epoch_s.append(time.perf_counter() - t0)
        epoch_cpu.append(time.process_time() - c0)
        val = run.score("val", run.predict("val"))
        curve.append(val)
        better = best is None or (val > best if td.higher_is_better else val < best)
        if better and np.isfinite(val):
            best, best_state, best_epoch = val, copy.deepcopy(model.state_dict()), epoch
        if progress is not None:
            progress(epoch, val)
    if best_state is not None:
        model.load_state_dict(best_state)
    t0 = time.perf_counter()
    pred = run.predict("test")
    infer_s = time.perf_counter() - t0
    test = run.score("test", pred)
    return FitResult(
        metric=td.metric, val=float(best if best is not None else float("nan")), test=float(test), test_pred=pred,
        val_curve=curve, best_epoch=best_epoch, epoch_seconds=epoch_s, epoch_cpu_seconds=epoch_cpu,
        train_rows_per_s=td.n_rows["train"] / max(np.mean(epoch_s), 1e-9),
        infer_rows_per_s=td.n_rows["test"] / max(infer_s, 1e-9), activation_mb=act_mb,
        num_params=sum(p.numel() for p in model.parameters()), model=model,
    )


def predict_split(model: RelationalModel, graph: RelGraph, td: TaskData, split: str, cfg: FitConfig) -> np.ndarray:
    """Predictions of a trained ``model`` on ``split`` (probabilities, values, or top-k ids)."""
    return _Runner(model, graph, td, cfg).predict(split)
