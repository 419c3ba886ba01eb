"""Independent jobs on forked worker processes with one torch thread each: the one pool every ``reproduce`` uses.

A full reproduction is mostly many small independent runs (seeds x methods x grid points). On a 2-core laptop two
one-thread workers beat one two-thread process for small networks (no OpenMP spin, no thread thrash). Every job
must seed itself, so its numbers do not depend on which worker ran it or in which order; :func:`fork_map` returns
results in item order whatever the submission ``order`` was.

Workers are *forked* after the parent imported what they need (``preload``), so they share already-built objects
(a pretrained base model, data in module globals, imported libraries) instead of rebuilding them. Jobs must be
module-level functions of picklable arguments. Where the platform has no fork (Windows), or with ``workers <= 1``
(or a single job), everything runs here, in this process, one job after another: a spawned worker would not see
the parent's module state that the jobs rely on.
"""

from __future__ import annotations

import importlib
import multiprocessing
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

__all__ = ["ForkPool", "fork_map", "one_thread"]


def one_thread() -> None:
    """Worker initializer: one torch intra-op thread (when torch is importable; numpy's BLAS is left alone)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch-free packages
        return
    torch.set_num_threads(1)


class ForkPool:
    """``workers`` forked one-thread processes (inline for ``workers <= 1`` or without fork), with ``submit`` /
    ``map`` / ``imap``.

    Use as a context manager (or call :meth:`close`). ``preload`` names modules imported in the parent before the
    first fork so that the workers inherit them.
    """

    def __init__(self, workers: int, *, preload: Iterable[str] = ()) -> None:
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 0:
            raise ValueError(f"workers must be an integer >= 0 (0 or 1 run inline), got {workers!r}")
        self.workers = workers
        for name in preload:
            importlib.import_module(name)
        self._ex: ProcessPoolExecutor | None = None
        if workers > 1 and "fork" in multiprocessing.get_all_start_methods():
            self._ex = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                                           initializer=one_thread)

    @property
    def inline(self) -> bool:
        """True when jobs run in this process."""
        return self._ex is None

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        """``fn(*args, **kwargs)`` in a worker (a Future); inline, it runs now and the Future is already done (an
        exception is raised here, as a direct call would)."""
        if self._ex is not None:
            return self._ex.submit(fn, *args, **kwargs)
        f: Future = Future()
        f.set_result(fn(*args, **kwargs))
        return f

    def imap(self, fn: Callable[[Any], Any], items: Sequence[Any], *,
             order: Sequence[int] | None = None) -> Iterator[Any]:
        """``fn(item)`` for each item, yielded in item order; ``order`` is the submission order (e.g. longest first,
        so that the workers finish together). Inline, the jobs run lazily in item order."""
        items = list(items)
        if self._ex is None:
            for it in items:
                yield fn(it)
            return
        sub = list(range(len(items))) if order is None else list(order)
        if sorted(sub) != list(range(len(items))):
            raise ValueError(f"order must be a permutation of range({len(items)}), got {list(order or [])!r}")
        futs: dict[int, Future] = {}
        for i in sub:
            futs[i] = self._ex.submit(fn, items[i])
        for i in range(len(items)):
            yield futs.pop(i).result()

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any], *,
            order: Sequence[int] | None = None) -> list[Any]:
        """``[fn(item) for item in items]`` (see :meth:`imap`)."""
        return list(self.imap(fn, items, order=order))

    def close(self) -> None:
        if self._ex is not None:
            self._ex.shutdown()
            self._ex = None

    def __enter__(self) -> ForkPool:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._ex is not None and exc[0] is not None:
            self._ex.shutdown(cancel_futures=True)
            self._ex = None
        self.close()


def fork_map(fn: Callable[[Any], Any], items: Sequence[Any], workers: int, *,
             order: Sequence[int] | None = None, preload: Iterable[str] = ()) -> list[Any]:
    """``[fn(item) for item in items]`` on ``workers`` forked one-thread processes, results in item order.

    A single job, or ``workers <= 1``, runs inline in this process. ``order`` is the submission order.
    """
    items = list(items)
    if workers <= 1 or len(items) <= 1:
        return [fn(it) for it in items]
    with ForkPool(min(workers, len(items)), preload=preload) as pool:
        return pool.map(fn, items, order=order)
