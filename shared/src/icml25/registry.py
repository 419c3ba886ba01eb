"""The method registry: entry point group ``icml25.methods``.

A package registers one :class:`Method` object::

    [project.entry-points."icml25.methods"]
    string-pe = "string_pe.registry:METHOD"

``icml25 list`` reads only entry-point and distribution metadata (no import of the package, so no torch);
``icml25 reproduce`` loads the object and calls ``METHOD.reproduce(quick=..., smoke=..., out=..., seed=...)``.
"""

from __future__ import annotations

import importlib.metadata as md
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GROUP = "icml25.methods"


@dataclass(frozen=True)
class Method:
    """One paper's method.

    ``reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> icml25.claims.Report`` runs the method and
    its baselines side by side and returns what it measured; figures go into ``out``.
    """

    name: str
    title: str
    venue: str
    url: str
    reproduce: Callable[..., Any]
    cli: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("Method.name must be non-empty")


@dataclass(frozen=True)
class MethodInfo:
    """What ``icml25 list`` knows without importing the package."""

    name: str
    value: str
    distribution: str
    version: str
    title: str
    url: str


def _url(meta: Any) -> str:
    for entry in meta.get_all("Project-URL") or []:
        label, _, url = entry.partition(",")
        if label.strip().lower() in ("paper", "homepage", "documentation"):
            return url.strip()
    return meta.get("Home-page") or ""


def discover() -> list[MethodInfo]:
    """Every installed method, sorted by name, from entry-point metadata only."""
    out = []
    for ep in md.entry_points(group=GROUP):
        dist = ep.dist
        title, version, url, dist_name = "", "", "", ""
        if dist is not None:
            meta = dist.metadata
            title = meta.get("Summary") or ""
            version = dist.version
            url = _url(meta)
            dist_name = meta.get("Name") or ""
        out.append(MethodInfo(ep.name, ep.value, dist_name, version, title, url))
    return sorted(out, key=lambda m: m.name)


def names() -> list[str]:
    return [m.name for m in discover()]


class UnknownMethodError(ValueError):
    pass


def load(name: str) -> Method:
    """Import and return the registered :class:`Method` called ``name``."""
    for ep in md.entry_points(group=GROUP):
        if ep.name == name:
            obj = ep.load()
            if not isinstance(obj, Method):
                raise TypeError(f"entry point {name!r} ({ep.value}) is not an icml25.registry.Method")
            return obj
    known = ", ".join(names()) or "(none installed)"
    raise UnknownMethodError(f"unknown method {name!r}; installed methods: {known}")


def default_out(name: str) -> Path:
    from icml25.rundir import default_run_dir

    return default_run_dir(name)
