"""icml25.parallel: the shared fork pool (order, processes, one thread, inline fallback, errors)."""

from __future__ import annotations

import os

import pytest
from icml25.parallel import ForkPool, fork_map


def _square(x: int) -> int:
    return x * x


def _pid_threads(_: int) -> tuple[int, int]:
    import torch

    return os.getpid(), torch.get_num_threads()


def _affine(x: int, *, a: int = 1, b: int = 0) -> int:
    return a * x + b


def _boom(x: int) -> int:
    if x == 2:
        raise RuntimeError("job 2 failed")
    return x


def test_results_in_item_order_whatever_the_submission_order():
    items = list(range(7))
    want = [_square(i) for i in items]
    assert fork_map(_square, items, 2, order=[6, 5, 4, 3, 2, 1, 0]) == want
    assert fork_map(_square, items, 1) == want  # inline
    # negative control: the submission order is not the result order
    assert [_square(i) for i in [6, 5, 4, 3, 2, 1, 0]] != want


def test_workers_are_other_processes_with_one_thread():
    torch = pytest.importorskip("torch")
    prev = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        out = fork_map(_pid_threads, [0, 1, 2, 3], 2)
        assert all(pid != os.getpid() for pid, _ in out)
        assert all(t == 1 for _, t in out)
        inline = fork_map(_pid_threads, [0, 1], 1)
        # negative control: inline runs here, with this process's threads untouched
        assert all(pid == os.getpid() and t == 2 for pid, t in inline)
    finally:
        torch.set_num_threads(prev)


def test_pool_submit_and_imap_inline_and_forked_agree():
    with ForkPool(2) as pool:
        assert not pool.inline
        futs = [pool.submit(_square, i) for i in range(4)]
        forked = [f.result() for f in futs]
        assert list(pool.imap(_square, range(4), order=[3, 1, 0, 2])) == forked
        kw = [pool.submit(_affine, i, a=3, b=1).result() for i in range(3)]
    with ForkPool(1) as pool:
        assert pool.inline
        assert [pool.submit(_square, i).result() for i in range(4)] == forked
        assert [pool.submit(_affine, i, a=3, b=1).result() for i in range(3)] == kw == [1, 4, 7]


def test_errors_propagate_and_bad_arguments_are_named():
    with pytest.raises(RuntimeError, match="job 2 failed"):
        fork_map(_boom, [0, 1, 2, 3], 2)
    with pytest.raises(RuntimeError, match="job 2 failed"):
        fork_map(_boom, [0, 1, 2, 3], 1)
    with pytest.raises(ValueError, match="workers"):
        ForkPool(-1)
    with ForkPool(2) as pool, pytest.raises(ValueError, match="order must be a permutation"):
        pool.map(_square, [1, 2, 3], order=[0, 0, 1])


def test_without_fork_the_pool_runs_inline(monkeypatch):
    import multiprocessing

    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    with ForkPool(2) as pool:
        assert pool.inline
        assert pool.map(_square, [1, 2, 3]) == [1, 4, 9]
    monkeypatch.undo()
    with ForkPool(2) as pool:  # negative control: with fork the same call forks
        assert not pool.inline
