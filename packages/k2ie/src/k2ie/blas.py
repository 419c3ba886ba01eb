"""Limit the BLAS threads of numpy / scipy for ``reproduce``'s timings (through ``threadpoolctl``).

On the 2-core machine the benchmark runs on, a 500 × 500 Cholesky factorisation takes about 1.6 ms with one
OpenBLAS thread and 3 ms with two, and 10 ms or more when the second core is busy with another process (the
threads spin-wait). K²IE's selection is 36 such factorisations, so it is the method that suffers most. ``reproduce``
therefore runs every method with ``Config.blas_threads`` threads (default 1): the same setting for all methods.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


def blas_pools() -> list[dict]:
    """The BLAS thread pools loaded in this process (numpy's and scipy's), as ``threadpoolctl`` reports them."""
    import numpy  # noqa: F401  - make sure both BLAS builds are loaded
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_info

    return [p for p in threadpool_info() if p.get("user_api") == "blas"]


@contextmanager
def blas_threads(n: int | None) -> Iterator[int]:
    """Run the block with ``n`` BLAS threads (``None``: unchanged); yields how many BLAS libraries were limited."""
    if n is None:
        yield 0
        return
    from threadpoolctl import threadpool_limits

    pools = blas_pools()
    with threadpool_limits(limits=int(n), user_api="blas"):
        yield len(pools)
