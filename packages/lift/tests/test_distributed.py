"""Data parallelism (2 CPU processes, gloo): the same masks on every rank and the same weights as one process
training on the same global batch (grad accumulation over the two halves)."""

from __future__ import annotations

import os
import socket

import pytest
import torch


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _train(rank: int, world: int, accum: int, sync: bool):
    from icml25.testbeds.lm import build_tiny_lm, build_tokenizer, make_examples
    from lift.finetune import finetune
    from lift.optim import SparseAdamW

    torch.set_num_threads(1)
    tok = build_tokenizer()
    model = build_tiny_lm(tok, hidden_size=32, num_layers=1, seed=0)
    opt = SparseAdamW(model, lr=1e-2, filter_rank=2, budget_rank=1, update_interval=2, sync_ranks=sync)
    finetune(model, tok, make_examples("mul", 64, seed=0), optimizer=opt, steps=5, batch_size=4, grad_accum=accum,
             seed=0, rank=rank, world_size=world)
    return {"masks": opt.masks(), "weights": {n: p.detach().clone() for n, p in model.named_parameters()},
            "mask_update_steps": opt.mask_update_steps}


def _worker(rank: int, world: int, port: int, sync: bool, path: str) -> None:
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        torch.save(_train(rank, world, 1, sync), f"{path}.{rank}")
    finally:
        dist.destroy_process_group()


def _spawn(tmp_path, sync: bool):
    import torch.multiprocessing as mp

    path = str(tmp_path / f"rank-sync{sync}")
    mp.spawn(_worker, args=(2, _free_port(), sync, path), nprocs=2, join=True)
    return [torch.load(f"{path}.{r}", weights_only=False) for r in range(2)]


@pytest.mark.slow
def test_two_processes_match_one_process_on_the_same_global_batch(tmp_path):
    single = _train(0, 1, 2, True)  # one process: the two micro-batches of each step accumulated
    ranks = _spawn(tmp_path, True)
    for r in ranks:
        assert r["mask_update_steps"] == single["mask_update_steps"] == [2, 4]
        for name, m in single["masks"].items():
            assert torch.equal(r["masks"][name], m), name  # identical masks on every rank and in one process
        for name, w in single["weights"].items():
            torch.testing.assert_close(r["weights"][name], w, rtol=1e-4, atol=1e-5)
    for name in single["weights"]:
        assert torch.equal(ranks[0]["weights"][name], ranks[1]["weights"][name])  # ranks bit-identical
    # negative control: without averaging the gradients each rank follows its own half of the data
    bad = _spawn(tmp_path, False)
    assert not all(torch.equal(bad[0]["weights"][n], bad[1]["weights"][n]) for n in single["weights"])
