"""Data-parallel training across processes: torch ``DistributedDataParallel`` (gloo on CPU), the sampler sharding
seed rows.

Every process holds the whole (in-memory) database and the same model. Each step takes the same global batch of
``batch_size`` training seed rows on every process (one shared permutation per epoch, seeded by ``cfg.seed``);
process ``r`` of ``W`` keeps the rows ``r, r + W, ...`` of it, samples their temporal sub-graphs with its own
generator and computes the *summed* loss of its shard. The sum is divided by the number of loss terms over all
processes (an all-reduce), scaled by ``W``, and DDP averages the gradients: the step equals a single-process step on
the global batch with the same sub-graphs (RelGNN's sub-graphs are disjoint per seed and normalisation is per node,
so a seed's loss does not depend on the other seeds of its batch; the official ``simplified_mp`` rule does, and is
refused here). Process 0 evaluates after every epoch, keeps the best-validation weights (early stopping after
``patience`` epochs without a gain above ``min_delta``, broadcast to every process, as :func:`relgnn.train.fit`) and returns the
:class:`relgnn.train.FitResult`; the others return ``None``.

Launch with ``torchrun --nproc-per-node N -m relgnn train --ddp ...`` (the process group comes from torchrun's
environment), or ``relgnn train --ddp --ddp-procs N`` / :func:`spawn_fit`, which start N local processes themselves;
process 0's result comes back to the launching process as safetensors (tensors) + JSON (the rest), never pickled
(:func:`save_result`, :func:`load_result`).
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from relgnn.config import FitConfig
from relgnn.errors import ConfigError


class _ShardLoss(nn.Module):
    """DDP's module: the forward pass is the whole loss (GNN and head), so every parameter is reached through it."""

    def __init__(self, runner) -> None:
        super().__init__()
        self.model = runner.model
        self._runner = runner

    def forward(self, batch, n_global: int, world: int) -> Tensor:
        if batch is None:  # an empty shard still joins the gradient all-reduce, with zero gradients
            return sum(p.sum() for p in self.model.parameters()) * 0.0
        return self._runner.batch_loss_sum(batch) * (world / n_global)


def _shard(run, td, rows: np.ndarray, rank: int, world: int):
    """This process's shard of the global batch ``rows`` (training table positions): its :class:`Batch` (``None``
    when it has no loss terms) and the number of loss terms over all processes (an all-reduce)."""
    import torch.distributed as dist

    from relgnn.train import Batch

    pos = np.asarray(rows)[rank::world]
    batch = None
    if len(pos):
        idx = torch.as_tensor(pos, dtype=torch.long)
        sub, seed_local = run.sampler.sample(td.entity, td.ids["train"][idx], td.times["train"][idx])
        batch = Batch(sub, seed_local, pos)
    local = run.batch_count(batch) if batch is not None else 0
    n = torch.tensor([local], dtype=torch.long)
    dist.all_reduce(n)
    return (batch if local else None), int(n)


def _check(cfg: FitConfig, td) -> None:
    cfg.validate()
    if cfg.sampling != "sampled" and td.kind != "recommendation":
        raise ConfigError("data-parallel training needs sampling='sampled' (full-graph snapshots are one step per "
                          "seed time, nothing to shard)")
    if cfg.simplified_mp:
        raise ConfigError("simplified_mp makes a seed's output depend on the other seeds of its batch, so sharded "
                          "batches would not equal the global one; use it without --ddp")


def fit_distributed(graph, td, cfg: FitConfig, *, progress=None):
    """:func:`relgnn.train.fit` in an initialised ``torch.distributed`` process group (see the module docstring);
    returns the :class:`~relgnn.train.FitResult` on process 0 and ``None`` elsewhere."""
    import torch.distributed as dist
    from icml25.seeding import seed_everything
    from icml25.train import Curve
    from torch.nn.parallel import DistributedDataParallel

    from relgnn.train import FitResult, _Runner, build_model

    if not dist.is_available() or not dist.is_initialized():
        raise ConfigError("fit_distributed needs an initialised torch.distributed process group (torchrun, or "
                          "relgnn.distributed.spawn_fit)")
    _check(cfg, td)
    rank, world = dist.get_rank(), dist.get_world_size()
    seed_everything(cfg.seed)
    model = build_model(cfg, graph, td)
    run = _Runner(model, graph, td, cfg)
    run.gen.manual_seed(cfg.seed + rank)  # each process samples its shard's sub-graphs with its own stream
    ddp = DistributedDataParallel(_ShardLoss(run), find_unused_parameters=True)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    rng = np.random.default_rng(cfg.seed)  # the same permutation on every process: the same global batches
    best, best_state, best_epoch, curve, epoch_s, epoch_cpu = None, None, -1, [], [], []
    n_steps, stopped = 0, False
    per_epoch = min(-(-td.n_rows["train"] // cfg.batch_size), cfg.max_steps_per_epoch)
    for epoch in range(cfg.epochs):
        model.train()
        t0, c0 = time.perf_counter(), time.process_time()
        order = rng.permutation(td.n_rows["train"])
        starts = list(range(0, len(order), cfg.batch_size))[: cfg.max_steps_per_epoch]
        for s in starts:
            batch, n = _shard(run, td, order[s:s + cfg.batch_size], rank, world)
            if n == 0:
                continue
            opt.zero_grad()
            ddp(batch, n, world).backward()
            opt.step()
            n_steps += 1
        epoch_s.append(time.perf_counter() - t0)
        epoch_cpu.append(time.process_time() - c0)
        stop = torch.zeros(1, dtype=torch.long)
        if rank == 0:
            val = run.score("val", run.predict("val"))
            curve.append(val)
            gain = (val - best if td.higher_is_better else best - val) if best is not None else float("inf")
            if np.isfinite(val) and gain > cfg.min_delta:
                best, best_state, best_epoch = val, copy.deepcopy(model.state_dict()), epoch
            if progress is not None:
                progress(epoch, val)
            stop[0] = int(epoch - best_epoch >= cfg.patience)  # early stopping, as relgnn.train.fit
        dist.broadcast(stop, src=0)  # every process stops after the same epoch
        if int(stop[0]):
            stopped = True
            break
    if rank != 0:
        return None
    if best_state is not None:
        model.load_state_dict(best_state)
    t0 = time.perf_counter()
    pred = run.predict("test")
    infer_s = time.perf_counter() - t0
    return FitResult(
        metric=td.metric, val=float(best if best is not None else float("nan")), test=float(run.score("test", pred)),
        test_pred=pred, val_curve=curve, best_epoch=best_epoch, epoch_seconds=epoch_s, epoch_cpu_seconds=epoch_cpu,
        train_rows_per_s=td.n_rows["train"] / max(np.mean(epoch_s), 1e-9),
        infer_rows_per_s=td.n_rows["test"] / max(infer_s, 1e-9), activation_mb=float("nan"),
        num_params=sum(p.numel() for p in model.parameters()), model=model, steps=n_steps,
        curve=Curve(steps=[(i + 1) * per_epoch for i in range(len(curve))], values=list(curve),
                    higher_is_better=td.higher_is_better, patience=cfg.patience, min_delta=cfg.min_delta,
                    stopped_by="plateau" if stopped else "budget"))


def shard_gradients(graph, td, cfg: FitConfig, positions: np.ndarray) -> dict[str, Tensor]:
    """The parameter gradients of one data-parallel step on the global batch ``positions`` (training rows), in an
    initialised process group: what DDP leaves in ``.grad`` after the all-reduce (for tests and checks)."""
    import torch.distributed as dist
    from icml25.seeding import seed_everything
    from torch.nn.parallel import DistributedDataParallel

    from relgnn.train import _Runner, build_model

    _check(cfg, td)
    rank, world = dist.get_rank(), dist.get_world_size()
    seed_everything(cfg.seed)
    model = build_model(cfg, graph, td)
    run = _Runner(model, graph, td, cfg)
    run.gen.manual_seed(cfg.seed + rank)
    ddp = DistributedDataParallel(_ShardLoss(run), find_unused_parameters=True)
    model.train()
    batch, n = _shard(run, td, positions, rank, world)
    ddp(batch, n, world).backward()
    return {k: (p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p))
            for k, p in model.named_parameters()}


# ------------------------------------------------------------------------------------------------ result files

_TENSORS = "ddp_result.safetensors"
_META = "ddp_result.json"
_FIT_FLOATS = ("val", "test", "train_rows_per_s", "infer_rows_per_s", "activation_mb")
_FIT_SERIES = ("val_curve", "epoch_seconds", "epoch_cpu_seconds")
_FIT_INTS = ("best_epoch", "num_params", "steps")


def save_result(out: Any, workdir: str | os.PathLike) -> None:
    """Write process 0's result into ``workdir`` without pickling: tensors as safetensors, the rest as JSON.

    ``out`` is ``None``, a ``{name: Tensor}`` dict (:func:`shard_gradients`) or a :class:`~relgnn.train.FitResult`
    (:func:`fit_distributed`): its model's ``state_dict`` (``model.<key>``), ``test_pred``, the per-epoch series and
    the float scalars (float64, so NaN survives) go into ``ddp_result.safetensors``; metric name, integers and the
    model's train/eval mode into ``ddp_result.json`` (written last: its presence means the result is complete).
    """
    from icml25.checkpoint import save_tensors
    from icml25.io import atomic_write_json

    from relgnn.train import FitResult

    tensors: dict[str, Tensor] = {}
    if out is None:
        meta: dict[str, Any] = {"kind": "none"}
    elif isinstance(out, FitResult):
        tensors = {f"model.{k}": v for k, v in out.model.state_dict().items()}
        tensors["test_pred"] = torch.from_numpy(np.ascontiguousarray(out.test_pred))
        for name in _FIT_SERIES:
            tensors[name] = torch.tensor([float(x) for x in getattr(out, name)], dtype=torch.float64)
        tensors["scalars"] = torch.tensor([float(getattr(out, n)) for n in _FIT_FLOATS], dtype=torch.float64)
        meta = {"kind": "fit", "metric": out.metric, "model_training": bool(out.model.training),
                **{n: int(getattr(out, n)) for n in _FIT_INTS}}
        if out.curve is not None:  # the values are val_curve (a tensor above); the rest is JSON
            c = out.curve
            meta["curve"] = {"steps": [int(x) for x in c.steps], "higher_is_better": bool(c.higher_is_better),
                             "patience": int(c.patience), "min_delta": float(c.min_delta),
                             "stopped_by": c.stopped_by}
    elif isinstance(out, dict) and all(isinstance(k, str) and isinstance(v, Tensor) for k, v in out.items()):
        tensors, meta = dict(out), {"kind": "tensors"}
    else:
        raise TypeError(f"a spawned function must return None, a dict of tensors or a FitResult, got {type(out)!r}")
    save_tensors(os.path.join(workdir, _TENSORS), tensors)
    atomic_write_json(os.path.join(workdir, _META), meta)


def load_result(workdir: str | os.PathLike, *, build: Callable[[], nn.Module] | None = None) -> Any:
    """Read what :func:`save_result` wrote (never unpickles). A FitResult's model is ``build()`` (the same
    architecture, e.g. ``build_model(cfg, graph, td)``) with the saved weights loaded strictly."""
    import json

    from icml25.checkpoint import CheckpointError, load_tensors

    from relgnn.train import FitResult

    meta_path = os.path.join(workdir, _META)
    if not os.path.exists(meta_path):
        raise CheckpointError(f"{meta_path!r} does not exist: process 0 wrote no result")
    with open(meta_path) as fh:
        meta = json.load(fh)
    kind = meta.get("kind")
    if kind == "none":
        return None
    tensors = load_tensors(os.path.join(workdir, _TENSORS))
    if kind == "tensors":
        return tensors
    if kind != "fit":
        raise CheckpointError(f"{meta_path!r}: unknown result kind {kind!r}")
    if build is None:
        raise TypeError("load_result needs build= to rebuild the model of a FitResult")
    with torch.random.fork_rng(devices=[]):  # building initialises weights: leave the caller's RNG alone
        model = build()
    model.load_state_dict({k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")}, strict=True)
    model.train(meta["model_training"])
    scalars = dict(zip(_FIT_FLOATS, tensors["scalars"].tolist(), strict=True))
    curve = None
    if "curve" in meta:
        from icml25.train import Curve

        curve = Curve(values=tensors["val_curve"].tolist(), **meta["curve"])
    return FitResult(metric=meta["metric"], test_pred=tensors["test_pred"].numpy(),
                     **{n: tensors[n].tolist() for n in _FIT_SERIES}, **scalars,
                     **{n: int(meta[n]) for n in _FIT_INTS}, model=model, curve=curve)


# ------------------------------------------------------------------------------------------------ launching


def _worker(rank: int, world: int, init: str, fn, args: tuple, workdir: str | None) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    try:
        out = fn(*args)
        if rank == 0 and workdir is not None:
            save_result(out, workdir)
    finally:
        dist.destroy_process_group()


def spawn(fn, args: tuple, *, world_size: int, workdir: str, build: Callable[[], nn.Module] | None = None) -> Any:
    """Run ``fn(*args)`` in ``world_size`` local processes joined by a gloo process group (a file rendezvous in
    ``workdir``); return process 0's result, passed back through ``workdir`` as safetensors + JSON
    (:func:`save_result`; ``build`` rebuilds a FitResult's model, see :func:`load_result`)."""
    import torch.multiprocessing as mp

    if world_size < 1:
        raise ConfigError(f"world_size must be >= 1, got {world_size}")
    init = "file://" + os.path.abspath(os.path.join(workdir, "ddp_rendezvous"))
    files = [os.path.join(workdir, name) for name in (_META, _TENSORS)]

    def clear() -> None:
        for path in files:
            if os.path.exists(path):
                os.remove(path)

    clear()  # a result left from an earlier run in this folder must not pass for this one's
    mp.spawn(_worker, args=(world_size, init, fn, args, workdir), nprocs=world_size, join=True)
    try:
        return load_result(workdir, build=build)
    finally:
        clear()


def spawn_fit(graph, td, cfg: FitConfig, *, world_size: int, workdir: str):
    """:func:`fit_distributed` in ``world_size`` local CPU processes; returns process 0's FitResult."""
    from relgnn.train import build_model

    return spawn(fit_distributed, (graph, td, cfg), world_size=world_size, workdir=workdir,
                 build=lambda: build_model(cfg, graph, td))
