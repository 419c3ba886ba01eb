"""Time-correct training and evaluation of a :class:`relgnn.model.RelationalModel` on a RelBench task.

Default: **sampled mini-batch training**, RelBench's recipe. The training table's rows ``(entity row, seed time,
target)`` are shuffled every epoch and cut into batches of ``batch_size`` seeds; each batch gets disjoint temporal
sub-graphs from :class:`relgnn.sampler.TemporalSampler` (``num_neighbors`` per hop, default RelBench's (128, 64);
only rows with ``time <= seed time``), one Adam step per batch (at most ``max_steps_per_epoch``). Entity tasks read
out the seed rows (binary: BCE / ROC-AUC; regression: L1 / MAE); recommendation uses the ID-GNN readout: the seed row
gets the ID embedding, every destination row of its sub-graph is scored by the head (BCE against the true
destination list) and the top-k scores give MAP@k. ``sampling="full"`` keeps the older full-graph mode for entity
tasks: one step per training seed time on :func:`relgnn.graph.snapshot` (every row with ``time <= t``).

Regression predictions on val/test are clamped to the train targets' 2nd–98th percentiles (RelBench); the L1 loss
is computed on targets shifted by the train median and scaled by the train mean absolute deviation (a constant
rescaling of RelBench's L1 that lets a linear head reach the target scale in few CPU steps). Model selection: the
epoch with the best validation metric (strict improvement, upstream RelBench).
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
from torch_geometric.data import HeteroData

from relgnn.config import SAMPLING, FitConfig  # noqa: F401 (re-exported)
from relgnn.errors import TaskError
from relgnn.graph import RelGraph, snapshot, to_seconds
from relgnn.metrics import mae, map_at_k, roc_auc
from relgnn.model import RelationalModel
from relgnn.sampler import TemporalSampler

# FitConfig (and SAMPLING) live in relgnn.config, a light module the CLI can import before torch; re-exported here.


@dataclass
class Group:
    """The rows of one split that share a seed time: ``ids`` (n,), targets, and their row positions."""

    t: int
    ids: Tensor
    y: Tensor | list
    pos: np.ndarray


@dataclass
class TaskData:
    """A task's splits: per split the seed rows (``ids`` (n,) row positions of the entity table, ``times`` (n,)
    unix seconds) in table order, their targets, and the same rows grouped by seed time."""

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
    ids: dict[str, Tensor] = field(default_factory=dict)
    times: dict[str, Tensor] = field(default_factory=dict)

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
    splits, n_rows, targets, ids_by, times_by = {}, {}, {}, {}, {}
    for split, table in tables.items():
        df = table.df.reset_index(drop=True)
        ids = graph.to_rows(ent, df[col].to_numpy())
        if len(ids) and ids.min() < 0:
            bad = df[col].to_numpy()[ids < 0][0]
            raise TaskError(f"{split} table: entity id {bad!r} is not a primary key of table {ent!r} "
                            f"({n_ent} rows)")
        ts = np.array([to_seconds(t) for t in df[task.time_col]]) if len(df) else np.zeros(0, dtype=np.int64)
        if min_t is not None and len(ts) and ts.min() < min_t:
            raise TaskError(f"{split} table: seed time {pd.Timestamp(ts.min(), unit='s')} is before the database starts")
        if kind == "recommendation":
            dst_rows = [[int(r) for r in graph.to_rows(dst, list(v)) if r >= 0] for v in df[dcol]]
        groups = []
        for t in np.unique(ts):
            pos = np.nonzero(ts == t)[0]
            if kind == "recommendation":
                y = [dst_rows[p] for p in pos]
            else:
                y = torch.tensor(df[dcol].to_numpy(dtype="float64")[pos], dtype=torch.float32)
            groups.append(Group(int(t), torch.as_tensor(ids[pos], dtype=torch.long), y, pos))
        splits[split], n_rows[split] = groups, len(df)
        targets[split] = dst_rows if kind == "recommendation" else df[dcol].to_numpy(dtype="float64")
        ids_by[split] = torch.as_tensor(ids, dtype=torch.long)
        times_by[split] = torch.as_tensor(ts, dtype=torch.long)
    if n_rows["train"] == 0:
        raise TaskError("the training table is empty")
    td = TaskData(kind, ent, dst, k, splits, n_rows, targets, ids=ids_by, times=times_by)
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
    steps: int = 0
    curve: object = None
    """The validation :class:`icml25.train.Curve` (x = optimiser steps; ``stopped_by`` "plateau" or "budget")."""


def build_model(cfg: FitConfig, graph: RelGraph, td: TaskData) -> RelationalModel:
    """The model for ``cfg`` on ``graph`` (ID awareness for recommendation)."""
    cfg.validate()
    shallow = {td.dst: graph.num_nodes(td.dst)} if (cfg.shallow and td.dst) else None
    model = RelationalModel(specs=graph.specs, edge_types=graph.edge_types, gnn=cfg.gnn, channels=cfg.channels,
                            num_layers=cfg.num_layers, num_heads=cfg.num_heads, out_channels=1, shallow=shallow,
                            id_awareness=td.kind == "recommendation", simplified_mp=cfg.simplified_mp,
                            route_aggr=cfg.route_aggr, encoder=cfg.encoder, dropout=cfg.dropout)
    return model


@dataclass
class Batch:
    """One mini-batch of seed rows: the disjoint temporal sub-graph ``sub`` of its ``B`` seeds, the seeds' local
    indices ``seed_local`` (B,) in the entity type, and their row positions ``pos`` (B,) in the split's table."""

    sub: HeteroData
    seed_local: Tensor
    pos: np.ndarray


def make_batches(sampler: TemporalSampler, td: TaskData, split: str, *, batch_size: int,
                 order: np.ndarray | None = None, max_batches: int | None = None) -> list[Batch]:
    """Sample the sub-graphs of ``split``'s seed rows, ``batch_size`` at a time, in ``order`` (default: table
    order); each seed ``(entity row, seed time)`` gets its own disjoint, time-correct sub-graph."""
    order = np.arange(td.n_rows[split]) if order is None else np.asarray(order)
    out = []
    for s in range(0, len(order), batch_size):
        if max_batches is not None and len(out) >= max_batches:
            break
        pos = order[s:s + batch_size]
        idx = torch.as_tensor(pos, dtype=torch.long)
        sub, seed_local = sampler.sample(td.entity, td.ids[split][idx], td.times[split][idx])
        out.append(Batch(sub, seed_local, pos))
    return out


class _Runner:
    def __init__(self, model: RelationalModel, graph: RelGraph, td: TaskData, cfg: FitConfig, *,
                 device: torch.device | str | None = None):
        self.model, self.graph, self.td, self.cfg = model, graph, td, cfg
        self.device = torch.device(device) if device is not None else next(model.parameters()).device
        self.gen = torch.Generator().manual_seed(cfg.seed)
        self.sampled = cfg.sampling == "sampled" or td.kind == "recommendation"
        self.sampler = (TemporalSampler(graph, num_neighbors=cfg.num_neighbors, temporal_strategy=cfg.temporal_strategy,
                                        generator=self.gen) if self.sampled else None)
        self.y = {sp: torch.as_tensor(np.asarray(v, dtype=np.float32), device=self.device)
                  for sp, v in td.targets.items() if td.kind != "recommendation"}

    def _on_device(self, b: Batch) -> Batch:
        """``b`` with its sub-graph and seed indices on the model's device (the same object on the CPU)."""
        if self.device.type == "cpu":
            return b
        return Batch(b.sub.to(self.device, non_blocking=True), b.seed_local.to(self.device), b.pos)

    # --- full-graph snapshot at a group's seed time (sampling="full", entity tasks)
    def entity_out(self, g: Group) -> Tensor:
        snap = snapshot(self.graph, g.t)
        loc = snap.inv[self.td.entity][g.ids]
        if (loc < 0).any():
            raise TaskError(f"entity rows of {self.td.entity!r} are later than their seed time")
        if self.device.type != "cpu":  # the cached snapshot moves once and stays on the device
            snap, loc = snap.to(self.device), loc.to(self.device)
        h = self.model(snap)
        return self.model.head(h[self.td.entity][loc]).squeeze(-1)  # (n,)

    # --- sampled mini-batches
    def batch_out(self, b: Batch) -> Tensor:
        """Entity: logits of the seeds (B,). Recommendation (ID-GNN): logits of every dst row of the sub-graph."""
        b = self._on_device(b)
        if self.td.kind == "recommendation":
            h = self.model(b.sub, {self.td.entity: b.seed_local})
            return self.model.head(h[self.td.dst]).squeeze(-1)  # (N_dst_sub,)
        h = self.model(b.sub)
        return self.model.head(h[self.td.entity][b.seed_local]).squeeze(-1)  # (B,)

    def rec_labels(self, b: Batch, split: str) -> Tensor:
        n_dst = self.graph.num_nodes(self.td.dst)
        lists = self.td.targets[split]
        keys = torch.tensor([i * n_dst + d for i, p in enumerate(b.pos) for d in lists[p]], dtype=torch.long,
                            device=self.device)
        st = self._on_device(b).sub[self.td.dst]
        return torch.isin(st.batch * n_dst + st.n_id, keys).float()

    def batch_loss(self, b: Batch, split: str = "train") -> Tensor | None:
        out = self.batch_out(b)
        if out.numel() == 0:
            return None
        if self.td.kind == "binary":
            return torch.nn.functional.binary_cross_entropy_with_logits(out, self.y[split][b.pos])
        if self.td.kind == "regression":
            return torch.nn.functional.l1_loss(out, (self.y[split][b.pos] - self.td.y_shift) / self.td.y_scale)
        return torch.nn.functional.binary_cross_entropy_with_logits(out, self.rec_labels(b, split))

    def batch_count(self, b: Batch) -> int:
        """How many terms :meth:`batch_loss_sum` sums: the seeds (entity tasks) or the sub-graph's dst rows (ID-GNN)."""
        return int(b.sub[self.td.dst].num_nodes) if self.td.kind == "recommendation" else len(b.pos)

    def batch_loss_sum(self, b: Batch, split: str = "train") -> Tensor:
        """The summed (not averaged) loss of :meth:`batch_loss`, over :meth:`batch_count` terms (data-parallel
        training divides by the count over all processes, so that the step equals one on the global batch)."""
        out = self.batch_out(b)
        f = torch.nn.functional
        if self.td.kind == "binary":
            return f.binary_cross_entropy_with_logits(out, self.y[split][b.pos], reduction="sum")
        if self.td.kind == "regression":
            return f.l1_loss(out, (self.y[split][b.pos] - self.td.y_shift) / self.td.y_scale, reduction="sum")
        return f.binary_cross_entropy_with_logits(out, self.rec_labels(b, split), reduction="sum")

    def group_loss(self, g: Group) -> Tensor:
        if self.td.kind == "binary":
            return torch.nn.functional.binary_cross_entropy_with_logits(self.entity_out(g), g.y)
        return torch.nn.functional.l1_loss(self.entity_out(g), (g.y - self.td.y_shift) / self.td.y_scale)

    def train_batches(self, rng: np.random.Generator) -> list:
        """This epoch's steps: shuffled seed rows in batches, freshly sampled (or full-graph seed-time groups)."""
        if not self.sampled:
            return [self.td.splits["train"][i] for i in rng.permutation(len(self.td.splits["train"]))]
        return make_batches(self.sampler, self.td, "train", batch_size=self.cfg.batch_size,
                            order=rng.permutation(self.td.n_rows["train"]), max_batches=self.cfg.max_steps_per_epoch)

    def step_loss(self, item) -> Tensor | None:
        return self.batch_loss(item) if isinstance(item, Batch) else self.group_loss(item)

    @torch.no_grad()
    def predict(self, split: str, batches: list[Batch] | None = None) -> np.ndarray:
        self.model.eval()
        td = self.td
        if td.kind == "recommendation":
            n_dst = self.graph.num_nodes(td.dst)
            out = np.zeros((td.n_rows[split], td.k), dtype=np.int64)
            if batches is None:
                batches = make_batches(self.sampler, td, split, batch_size=self.cfg.batch_size)
            for b in batches:
                logits = self.batch_out(b)
                st = b.sub[td.dst]
                scores = torch.full((len(b.pos), n_dst), -1.0, device=logits.device)  # rows outside rank last
                scores[st.batch.to(logits.device), st.n_id.to(logits.device)] = torch.sigmoid(logits)
                out[b.pos] = torch.topk(scores, td.k, dim=1).indices.cpu().numpy()
            return out
        out = np.zeros(td.n_rows[split])
        if self.sampled:
            if batches is None:
                batches = make_batches(self.sampler, td, split, batch_size=self.cfg.batch_size)
            for b in batches:
                p = self.batch_out(b)
                out[b.pos] = (torch.sigmoid(p) if td.kind == "binary" else p * td.y_scale + td.y_shift).cpu().numpy()
        else:
            for g in td.splits[split]:
                p = self.entity_out(g)
                out[g.pos] = (torch.sigmoid(p) if td.kind == "binary" else p * td.y_scale + td.y_shift).cpu().numpy()
        if td.kind == "regression":
            out = np.clip(out, *td.clamp)
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


@dataclass
class Presampled:
    """Sub-graphs sampled once and shared by several fits (``reproduce``: every model and grid point of a task
    sees the same samples). ``train`` is a fixed partition of the training rows into batches (a fit shuffles the
    batch order every epoch); ``val``/``test`` cover their splits in table order. ``seeds_per_s`` = sampler speed."""

    train: list[Batch]
    val: list[Batch]
    test: list[Batch]
    seeds_per_s: float


def presample(graph: RelGraph, td: TaskData, cfg: FitConfig, *, seed: int = 0,
              max_train_rows: int | None = None) -> Presampled:
    """Sample the batches of all three splits once (see :class:`Presampled`); ``max_train_rows`` keeps a random
    subset of the training rows (the same for every model)."""
    cfg.validate()
    gen = torch.Generator().manual_seed(seed)
    sampler = TemporalSampler(graph, num_neighbors=cfg.num_neighbors, temporal_strategy=cfg.temporal_strategy,
                              generator=gen)
    order = np.random.default_rng(seed).permutation(td.n_rows["train"])
    if max_train_rows is not None:
        order = order[:max_train_rows]
    t0 = time.perf_counter()
    tr = make_batches(sampler, td, "train", batch_size=cfg.batch_size, order=order)
    n_seeds = len(order)
    rate = n_seeds / max(time.perf_counter() - t0, 1e-9)
    va = make_batches(sampler, td, "val", batch_size=cfg.batch_size)
    te = make_batches(sampler, td, "test", batch_size=cfg.batch_size)
    return Presampled(tr, va, te, rate)


def steps_per_epoch(td: TaskData, cfg: FitConfig, batches: Presampled | None = None) -> int:
    """Optimiser steps in one epoch: the (presampled or freshly sampled) training batches, at most
    ``max_steps_per_epoch``; with ``sampling="full"`` (entity tasks) one per training seed time."""
    if batches is not None:
        return min(len(batches.train), cfg.max_steps_per_epoch)
    if cfg.sampling == "sampled" or td.kind == "recommendation":
        return min(-(-td.n_rows["train"] // cfg.batch_size), cfg.max_steps_per_epoch)
    return len(td.splits["train"])


def fit(graph: RelGraph, td: TaskData, cfg: FitConfig, *, progress=None, batches: Presampled | None = None,
        device: torch.device | str = "cpu") -> FitResult:
    """Train with Adam until the validation metric plateaus (at most ``cfg.epochs`` epochs), keep the best
    validation epoch's weights, return test predictions, the validation :class:`icml25.train.Curve` and timings.

    Early stopping (:func:`icml25.train.train_until_plateau`): the validation split is scored after every epoch;
    training stops when ``cfg.patience`` epochs in a row do not improve the best score by more than
    ``cfg.min_delta`` (``curve.stopped_by == "plateau"``), or after ``cfg.epochs`` epochs (``"budget"``). The weights
    of the best epoch (strict improvement, upstream RelBench) are restored before the test split is predicted.

    Default (``sampling="sampled"``, the RelBench recipe): every epoch shuffles the training seed rows, splits them
    into batches of ``batch_size`` (at most ``max_steps_per_epoch``), samples each batch's temporal sub-graphs
    (``num_neighbors`` per hop) and takes one Adam step per batch. ``batches`` (from :func:`presample`) reuses
    sub-graphs sampled once instead. ``sampling="full"``: one step per training seed time on the full-graph snapshot.
    ``device``: where the model and each batch live (sampling stays on the CPU; predictions come back as numpy).
    """
    from icml25.seeding import seed_everything
    from icml25.train import train_until_plateau

    cfg.validate()
    seed_everything(cfg.seed)
    model = build_model(cfg, graph, td).to(device)
    run = _Runner(model, graph, td, cfg, device=device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    rng = np.random.default_rng(cfg.seed)
    per_epoch = steps_per_epoch(td, cfg, batches)
    st = {"items": [], "t0": 0.0, "c0": 0.0, "best_state": None, "best_epoch": -1, "steps": 0}
    epoch_s, epoch_cpu, values = [], [], []

    def step(i: int) -> None:
        if i % per_epoch == 0:  # a new epoch: reshuffle (and resample, unless presampled)
            model.train()
            st["t0"], st["c0"] = time.perf_counter(), time.process_time()
            if batches is not None:
                st["items"] = [batches.train[j] for j in rng.permutation(len(batches.train))][:per_epoch]
            else:
                st["items"] = run.train_batches(rng)[:per_epoch]
        item = st["items"][i % per_epoch] if i % per_epoch < len(st["items"]) else None
        if item is None:
            return
        opt.zero_grad()
        loss = run.step_loss(item)
        if loss is None:
            return
        loss.backward()
        opt.step()
        st["steps"] += 1

    def evaluate() -> float:
        epoch_s.append(time.perf_counter() - st["t0"])
        epoch_cpu.append(time.process_time() - st["c0"])
        val = run.score("val", run.predict("val", batches.val if batches is not None else None))
        values.append(val)
        if progress is not None:
            progress(len(values) - 1, val)
        return val if np.isfinite(val) else (-1e30 if td.higher_is_better else 1e30)

    def keep(_step: int, _val: float) -> None:
        st["best_state"], st["best_epoch"] = copy.deepcopy(model.state_dict()), len(values) - 1

    curve = train_until_plateau(step, evaluate, max_steps=cfg.epochs * per_epoch, eval_every=per_epoch,
                                patience=cfg.patience, min_delta=cfg.min_delta,
                                higher_is_better=td.higher_is_better, on_improve=keep)
    best_epoch = st["best_epoch"]
    if st["best_state"] is not None:
        model.load_state_dict(st["best_state"])
    best = values[best_epoch] if best_epoch >= 0 else float("nan")
    t0 = time.perf_counter()
    pred = run.predict("test", batches.test if batches is not None else None)
    infer_s = time.perf_counter() - t0
    test = run.score("test", pred)
    n_train = (sum(len(b.pos) for b in batches.train) if batches is not None else td.n_rows["train"])
    return FitResult(
        metric=td.metric, val=float(best), test=float(test), test_pred=pred,
        val_curve=values, best_epoch=best_epoch, epoch_seconds=epoch_s, epoch_cpu_seconds=epoch_cpu,
        train_rows_per_s=n_train / max(np.mean(epoch_s), 1e-9),
        infer_rows_per_s=td.n_rows["test"] / max(infer_s, 1e-9), activation_mb=float("nan"),
        num_params=sum(p.numel() for p in model.parameters()), model=model, steps=st["steps"], curve=curve,
    )


def predict_split(model: RelationalModel, graph: RelGraph, td: TaskData, split: str, cfg: FitConfig) -> np.ndarray:
    """Predictions of a trained ``model`` on ``split`` (probabilities, values, or top-k ids), on the model's device."""
    return _Runner(model, graph, td, cfg).predict(split)
