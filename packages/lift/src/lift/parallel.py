"""Data-parallel check harness: the same tiny LIFT fine-tuning in one process or in several ``torch.distributed``
ranks (gloo on the CPU), so that tests can compare masks and weights (``tests/test_distributed.py``).

:class:`~lift.optim.SparseAdamW` averages the gradients over the ranks inside ``step()`` and
:func:`~lift.finetune.finetune` gives rank ``r`` the ``r``-th of every ``world_size`` consecutive micro-batches, so
``world_size`` ranks with ``grad_accum=1`` train on the same global batch as one process with
``grad_accum=world_size``.
"""

from __future__ import annotations

import os
from typing import Any

import torch

__all__ = ["train_tiny", "spawn_worker"]


def train_tiny(rank: int, world: int, accum: int, sync: bool, *, steps: int = 5) -> dict[str, Any]:
    """LIFT on a hidden-32 tiny Llama (seed 0) for ``steps`` steps of ``accum`` micro-batches of 4 on this rank;
    returns ``{"masks", "weights", "mask_update_steps"}``."""
    from icml25.testbeds.lm import build_tiny_lm, build_tokenizer, make_examples

    from lift.finetune import finetune
    from lift.optim import SparseAdamW

    torch.set_num_threads(1)
    tok = build_tokenizer()
    model = build_tiny_lm(tok, hidden_size=32, num_layers=1, seed=0)
    opt = SparseAdamW(model, lr=1e-2, filter_rank=2, budget_rank=1, update_interval=2, sync_ranks=sync)
    finetune(model, tok, make_examples("mul", 64, seed=0), optimizer=opt, steps=steps, batch_size=4,
             grad_accum=accum, seed=0, rank=rank, world_size=world)
    return {"masks": opt.masks(), "weights": {n: p.detach().clone() for n, p in model.named_parameters()},
            "mask_update_steps": opt.mask_update_steps}


def spawn_worker(rank: int, world: int, port: int, sync: bool, path: str) -> None:
    """``torch.multiprocessing.spawn`` target: join a gloo group, run :func:`train_tiny`, save to ``path.rank``."""
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        torch.save(train_tiny(rank, world, 1, sync), f"{path}.{rank}")
    finally:
        dist.destroy_process_group()
