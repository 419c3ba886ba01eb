"""Data parallelism (2 CPU processes, gloo): the same masks on every rank and the same weights as one process
training on the same global batch (grad accumulation over the two halves)."""

from __future__ import annotations

import socket

import pytest
import torch


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(tmp_path, sync: bool):
    import torch.multiprocessing as mp
    from lift.parallel import spawn_worker

    path = str(tmp_path / f"rank-sync{sync}")
    mp.spawn(spawn_worker, args=(2, _free_port(), sync, path), nprocs=2, join=True)
    return [torch.load(f"{path}.{r}", weights_only=False) for r in range(2)]


@pytest.mark.slow
@pytest.mark.engine
def test_two_processes_match_one_process_on_the_same_global_batch(tmp_path):
    from lift.parallel import train_tiny

    single = train_tiny(0, 1, 2, True)  # one process: the two micro-batches of each step accumulated
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
