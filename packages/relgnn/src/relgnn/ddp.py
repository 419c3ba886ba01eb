"""Data-parallel training (torch DDP): the sampler shards each global batch of seed rows over the processes.

Every process holds the whole graph and the same model; for each step the global batch of ``B`` seed rows (the same
shuffled order on every rank, from the shared seed) is split into ``world_size`` shards ``pos[rank::world_size]``;
each rank samples its shard's disjoint sub-graphs, computes the mean loss over its seeds, and DDP averages the
gradients (gloo on CPU, nccl on GPU). With equal shard sizes the averaged gradient equals the gradient of the mean
loss over the global batch (the seeds' sub-graphs are disjoint and the model has no batch statistics), which
:func:`grads_one_step` lets a test check against a single-process run.
"""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

import numpy as np
import torch

from relgnn.graph import RelGraph
from relgnn.train import FitConfig, TaskData, _Runner, build_model, make_batches


def shard(pos: np.ndarray, rank: int, world_size: int) -> np.ndarray:
    """The seed rows of ``pos`` that rank ``rank`` of ``world_size`` handles (strided, so shard sizes differ by <= 1)."""
    return np.asarray(pos)[rank::world_size]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(rank: int, world_size: int, port: int, graph: RelGraph, td: TaskData, cfg: FitConfig, pos: np.ndarray,
            out_dir: str, backend: str) -> None:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    torch.set_num_threads(1)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group(backend, rank=rank, world_size=world_size)
    try:
        torch.manual_seed(cfg.seed)
        model = build_model(cfg, graph, td)
        ddp = DistributedDataParallel(model, find_unused_parameters=True)
        run = _Runner(model, graph, td, cfg)
        run.model = ddp.module
        mine = shard(pos, rank, world_size)
        batch = make_batches(run.sampler, td, "train", batch_size=len(mine), order=mine)[0]
        model.train()
        # forward through the DDP wrapper so its gradient hooks fire
        if td.kind == "recommendation":
            h = ddp(batch.sub, {td.entity: batch.seed_local})
            out = model.head(h[td.dst]).squeeze(-1)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(out, run.rec_labels(batch, "train"))
        else:
            h = ddp(batch.sub)
            out = model.head(h[td.entity][batch.seed_local]).squeeze(-1)
            y = run.y["train"][batch.pos]
            loss = (torch.nn.functional.binary_cross_entropy_with_logits(out, y) if td.kind == "binary"
                    else torch.nn.functional.l1_loss(out, (y - td.y_shift) / td.y_scale))
        loss.backward()
        if rank == 0:
            grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
            torch.save(grads, Path(out_dir) / "grads.pt")
    finally:
        dist.destroy_process_group()


def grads_one_step(graph: RelGraph, td: TaskData, cfg: FitConfig, pos: np.ndarray, *,
                   world_size: int = 2) -> dict[str, torch.Tensor]:
    """Gradients of one step on the global batch ``pos`` (training-row positions) with ``world_size`` DDP processes
    (gloo, CPU, forked). The shards must have equal sizes for the gradients to equal a single-process step's."""
    import torch.multiprocessing as mp

    if len(pos) % world_size:
        raise ValueError(f"the global batch ({len(pos)} rows) must split evenly over world_size={world_size}")
    ctx = mp.get_context("fork")
    port = _free_port()
    with tempfile.TemporaryDirectory() as d:
        procs = [ctx.Process(target=_worker, args=(r, world_size, port, graph, td, cfg, pos, d, "gloo"))
                 for r in range(world_size)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        if any(p.exitcode != 0 for p in procs):
            raise RuntimeError(f"a DDP worker failed (exit codes {[p.exitcode for p in procs]})")
        return torch.load(Path(d) / "grads.pt")


def grads_single(graph: RelGraph, td: TaskData, cfg: FitConfig, pos: np.ndarray) -> dict[str, torch.Tensor]:
    """Gradients of the same step in one process on the whole global batch."""
    torch.manual_seed(cfg.seed)
    model = build_model(cfg, graph, td)
    run = _Runner(model, graph, td, cfg)
    batch = make_batches(run.sampler, td, "train", batch_size=len(pos), order=pos)[0]
    model.train()
    run.batch_loss(batch).backward()
    return {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}


def _fit_worker(rank: int, world_size: int, port: int, graph: RelGraph, td: TaskData, cfg: FitConfig, out_dir: str,
                backend: str) -> None:
    import copy

    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    torch.set_num_threads(1)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group(backend, rank=rank, world_size=world_size)
    try:
        from icml25.seeding import seed_everything

        seed_everything(cfg.seed)
        model = build_model(cfg, graph, td)
        ddp = DistributedDataParallel(model, find_unused_parameters=True)
        run = _Runner(model, graph, td, cfg)
        run.gen.manual_seed(cfg.seed + 1000 * rank)  # each rank samples its own shard
        opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
        rng = np.random.default_rng(cfg.seed)  # the same global order on every rank
        best, best_state, curve = None, None, []
        B = cfg.batch_size
        for _ in range(cfg.epochs):
            model.train()
            order = rng.permutation(td.n_rows["train"])
            n_full = len(order) // B if len(order) >= B else 1
            for step in range(min(n_full, cfg.max_steps_per_epoch)):
                glob = order[step * B:(step + 1) * B]
                mine = shard(glob, rank, world_size)
                if len(glob) < world_size:
                    break
                batch = make_batches(run.sampler, td, "train", batch_size=len(mine), order=mine)[0]
                opt.zero_grad()
                if td.kind == "recommendation":
                    h = ddp(batch.sub, {td.entity: batch.seed_local})
                    out = model.head(h[td.dst]).squeeze(-1)
                    loss = torch.nn.functional.binary_cross_entropy_with_logits(out, run.rec_labels(batch, "train"))
                else:
                    h = ddp(batch.sub)
                    out = model.head(h[td.entity][batch.seed_local]).squeeze(-1)
                    y = run.y["train"][batch.pos]
                    loss = (torch.nn.functional.binary_cross_entropy_with_logits(out, y) if td.kind == "binary"
                            else torch.nn.functional.l1_loss(out, (y - td.y_shift) / td.y_scale))
                loss.backward()
                opt.step()
            if rank == 0:
                val = run.score("val", run.predict("val"))
                curve.append(val)
                if np.isfinite(val) and (best is None or (val > best if td.higher_is_better else val < best)):
                    best, best_state = val, copy.deepcopy(model.state_dict())
            dist.barrier()
        if rank == 0:
            if best_state is not None:
                model.load_state_dict(best_state)
            pred = run.predict("test")
            torch.save({"state": model.state_dict(), "val": best, "curve": curve, "test": run.score("test", pred)},
                       Path(out_dir) / "fit.pt")
    finally:
        dist.destroy_process_group()


def fit_ddp(graph: RelGraph, td: TaskData, cfg: FitConfig, *, world_size: int = 2) -> dict:
    """Sampled mini-batch training with ``world_size`` DDP processes on CPU (gloo, forked): each global batch of
    ``batch_size`` seed rows is sharded over the ranks, each rank samples its shard. Returns the best-validation
    ``state`` dict, ``val``, ``curve`` and ``test`` (evaluated on rank 0)."""
    import torch.multiprocessing as mp

    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    ctx = mp.get_context("fork")
    port = _free_port()
    with tempfile.TemporaryDirectory() as d:
        procs = [ctx.Process(target=_fit_worker, args=(r, world_size, port, graph, td, cfg, d, "gloo"))
                 for r in range(world_size)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        if any(p.exitcode != 0 for p in procs):
            raise RuntimeError(f"a DDP worker failed (exit codes {[p.exitcode for p in procs]})")
        return torch.load(Path(d) / "fit.pt")
