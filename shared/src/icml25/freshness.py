"""Fresh results: which code a ``results.json`` was measured with.

``source_hash`` is the sha256 over a package's ``src/**/*.py`` files in sorted relative-path order, each contributing
``path.encode() + b"\\0" + content + b"\\0"`` where ``path`` is relative to the package's ``src/`` folder with ``/``
separators (``"string_pe/model.py"``). :meth:`icml25.rundir.RunDir.write_results` records it in every
``results.json``; :mod:`icml25.report` recomputes it from the checkout and marks a committed run whose hash differs
as *stale* (its numbers come from older code), and one without a hash as *unknown*.

Installed from a wheel, a package's files sit in ``site-packages/<import_name>/``; hashing that folder with paths
relative to its parent gives the same value as hashing ``src/`` in the checkout, because every package's ``src/``
holds exactly its one import package.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Iterable
from pathlib import Path

FRESH, STALE, UNKNOWN = "fresh", "stale", "unknown"


def _hash_files(root: Path, files: Iterable[Path]) -> str:
    h = hashlib.sha256()
    for rel in sorted(f.relative_to(root).as_posix() for f in files):
        h.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
    return h.hexdigest()


def _py_files(folder: Path) -> list[Path]:
    return [f for f in folder.rglob("*.py") if f.is_file() and "__pycache__" not in f.parts]


def source_hash(src: str | Path) -> str:
    """sha256 (hex) over ``src/**/*.py`` as defined in the module docstring. ``src`` is a package's ``src/`` folder."""
    root = Path(src)
    if not root.is_dir():
        raise FileNotFoundError(f"source_hash: {root} is not a folder")
    return _hash_files(root, _py_files(root))


def module_source_hash(import_name: str) -> str | None:
    """The source hash of an importable package (checkout or installed wheel), ``None`` if it cannot be found."""
    try:
        spec = importlib.util.find_spec(import_name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    pkg = Path(next(iter(spec.submodule_search_locations)))
    return _hash_files(pkg.parent, _py_files(pkg))


def method_source_hash(method: str) -> str | None:
    """The source hash for a method's distribution name (``"string-pe"`` -> import ``string_pe``)."""
    return module_source_hash(method.replace("-", "_"))


def freshness(recorded: str | None, package_dir: str | Path) -> str:
    """``fresh`` when ``recorded`` equals the hash of ``package_dir/src`` now, ``stale`` when it differs,
    ``unknown`` when the run recorded none."""
    if not recorded:
        return UNKNOWN
    return FRESH if recorded == source_hash(Path(package_dir) / "src") else STALE


__all__ = ["FRESH", "STALE", "UNKNOWN", "source_hash", "module_source_hash", "method_source_hash", "freshness"]
