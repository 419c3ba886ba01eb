"""Limit the BLAS threads of the OpenBLAS builds that numpy and scipy ship (for ``reproduce``'s timings).

On the 2-core machine the benchmark runs on, a 500 × 500 Cholesky factorisation takes about 1.6 ms with one
OpenBLAS thread and 3 ms with two, and 10 ms or more when the second core is busy with another process (the
threads spin-wait). K²IE's selection is 36 such factorisations, so it is the method that suffers most. ``reproduce``
therefore runs every method with ``Config.blas_threads`` threads (default 1): the same setting for all methods.

This calls ``scipy_openblas_set_num_threads*`` in the shared libraries already loaded into the process (found in
``/proc/self/maps``); where they cannot be found (another BLAS, another OS) it does nothing and says so.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_SET = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
        "openblas_set_num_threads")
_GET = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads64_",
        "openblas_get_num_threads")


def _libraries() -> list[tuple[ctypes.CDLL, str, str]]:
    import numpy  # noqa: F401  - make sure both BLAS builds are loaded
    import scipy.linalg  # noqa: F401

    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    paths = sorted({line.split()[-1] for line in maps.splitlines() if "openblas" in line and line.split()[-1][:1] == "/"})
    out = []
    for p in paths:
        try:
            lib = ctypes.CDLL(p)
        except OSError:
            continue
        set_ = next((s for s in _SET if hasattr(lib, s)), None)
        get_ = next((g for g in _GET if hasattr(lib, g)), None)
        if set_ and get_:
            out.append((lib, set_, get_))
    return out


@contextmanager
def blas_threads(n: int | None) -> Iterator[int]:
    """Run the block with ``n`` OpenBLAS threads (``None``: unchanged); yields how many libraries were set."""
    if n is None:
        yield 0
        return
    libs = _libraries()
    old = [getattr(lib, g)() for lib, _, g in libs]
    for lib, s, _ in libs:
        getattr(lib, s)(int(n))
    try:
        yield len(libs)
    finally:
        for (lib, s, _), k in zip(libs, old):
            getattr(lib, s)(int(k))
