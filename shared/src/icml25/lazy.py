"""``lazy_exports``: the ``__getattr__``/``__dir__`` pair that keeps a package's ``import`` cheap (no torch).

In a package's ``__init__.py``::

    from icml25.lazy import lazy_exports

    __getattr__, __dir__, __all__ = lazy_exports(__name__, {
        "Model": "my_pkg.model",        # name -> module that defines it
        "train": "my_pkg.train",
    }, submodules=("data", "reproduce"))   # ``my_pkg.data`` as an attribute, imported on first use
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_exports(
    package: str, names: Mapping[str, str], *, submodules: Iterable[str] = (),
    extra: tuple[str, ...] = ("__version__",),
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """Return ``(__getattr__, __dir__, __all__)`` resolving each public name from its module on first use.

    ``names`` maps a public name to the module that defines it; ``submodules`` are the package's own submodules
    reachable as attributes (``pkg.data`` without ``import pkg.data``).
    """
    table = dict(names)
    subs = set(submodules)
    overlap = subs & set(table)
    if overlap:
        raise ValueError(f"names both exported and submodules: {sorted(overlap)}")
    public = sorted(table) + sorted(subs) + list(extra)

    def __getattr__(name: str) -> Any:
        if name in subs:
            value = importlib.import_module(f"{package}.{name}")
            setattr(sys.modules[package], name, value)
            return value
        try:
            module = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return public

    return __getattr__, __dir__, public
