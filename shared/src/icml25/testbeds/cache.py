"""A content-addressed, concurrency-safe cache for the pretrained test-bed models.

Layout: ``<root>/<kind>/<key>/`` holds the files a builder wrote plus ``manifest.json`` (the key material and the
SHA-256 of every file). ``<key>`` is a hash of everything that determines the entry (configs, seeds, steps, a format
version), so a change to any of them gives a new entry instead of a stale hit.

The root is ``cache_dir`` if given, else the environment variable ``ICML25_CACHE``, else ``~/.cache/icml25``.

Concurrency: building happens under an exclusive file lock (``<root>/<kind>/<key>.lock``) into a private temporary
folder that is renamed into place in one ``os.rename``; readers therefore see either no entry or a complete one.
A second process waiting on the lock finds the finished entry and loads it instead of training again.
Corruption (a missing file, a changed byte, a manifest for another key, a loader that fails) is detected through the
manifest hashes and the loader, and the entry is rebuilt; a corrupted entry is never half-loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from icml25.io import atomic_write_json, dumps

T = TypeVar("T")

MANIFEST = "manifest.json"
ENV_VAR = "ICML25_CACHE"


class CacheError(RuntimeError):
    """A cache entry could not be built or loaded."""


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """The cache root: ``cache_dir``, else ``$ICML25_CACHE``, else ``~/.cache/icml25``."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "icml25"


def cache_key(material: Any) -> str:
    """A 20-hex-digit SHA-256 of the canonical JSON of ``material`` (dict keys sorted)."""
    canonical = json.dumps(json.loads(dumps(material, indent=None)), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:20]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@contextlib.contextmanager
def file_lock(path: str | os.PathLike) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (created if missing), held for the ``with`` block."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a+b")
    try:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            import msvcrt

            while True:
                try:
                    msvcrt.locking(fh.fileno(), msvcrt.LK_LOCK, 1)
                    break
                except OSError:
                    time.sleep(0.1)
            try:
                yield
            finally:
                fh.seek(0)
                msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    finally:
        fh.close()


def verify_entry(entry: Path, key: str) -> str | None:
    """``None`` if ``entry`` is complete and intact for ``key``, else a sentence saying what is wrong."""
    manifest_path = entry / MANIFEST
    if not entry.is_dir():
        return "missing"
    if not manifest_path.exists():
        return f"{MANIFEST} is missing"
    try:
        manifest = json.loads(manifest_path.read_text())
        files = manifest["files"]
        if manifest["key"] != key:
            return f"manifest key {manifest['key']!r} != {key!r}"
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        return f"{MANIFEST} is unreadable: {exc}"
    for name, digest in files.items():
        f = entry / name
        if not f.exists():
            return f"file {name!r} is missing"
        if _sha256(f) != digest:
            return f"file {name!r} does not match its recorded SHA-256 (corrupted)"
    return None


@dataclass(frozen=True)
class CacheInfo:
    """Where an entry lives and whether this call found it (``hit``) or built it."""

    path: Path
    key: str
    hit: bool
    seconds: float


def _remove(entry: Path) -> None:
    if entry.exists():
        # rename first so that a reader never sees a half-deleted folder under the real name
        trash = entry.parent / f".trash-{entry.name}-{uuid.uuid4().hex[:8]}"
        os.rename(entry, trash)
        shutil.rmtree(trash, ignore_errors=True)


def load_or_build(
    kind: str,
    material: dict[str, Any],
    *,
    build: Callable[[Path], None],
    load: Callable[[Path], T],
    cache_dir: str | os.PathLike | None = None,
) -> tuple[T, CacheInfo]:
    """Load the entry for ``material`` or build it (once, even with concurrent callers) and then load it.

    ``build(folder)`` writes its files into an empty folder; ``load(folder)`` reads them back (it should raise on
    anything inconsistent). The value returned always comes from ``load`` so a fresh build and a cache hit give
    bit-identical results.
    """
    t0 = time.perf_counter()
    key = cache_key({"kind": kind, **material})
    kind_dir = cache_root(cache_dir) / kind
    entry = kind_dir / key

    def _try_load() -> tuple[bool, Any]:
        problem = verify_entry(entry, key)
        if problem is not None:
            if problem != "missing":
                warnings.warn(
                    f"icml25 cache entry {str(entry)!r} is invalid ({problem}); rebuilding it", stacklevel=3
                )
            return False, None
        try:
            return True, load(entry)
        except Exception as exc:  # a loader failure on an intact-looking entry: rebuild
            warnings.warn(
                f"icml25 cache entry {str(entry)!r} failed to load ({exc}); rebuilding it", stacklevel=3
            )
            return False, None

    ok, value = _try_load()
    if ok:
        return value, CacheInfo(entry, key, True, time.perf_counter() - t0)

    with file_lock(kind_dir / f"{key}.lock"):
        ok, value = _try_load()  # somebody else may have built it while we waited
        if ok:
            return value, CacheInfo(entry, key, True, time.perf_counter() - t0)
        tmp = kind_dir / f".tmp-{key}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir(parents=True)
        try:
            build(tmp)
            files = {p.name: _sha256(p) for p in sorted(tmp.iterdir()) if p.is_file() and p.name != MANIFEST}
            atomic_write_json(
                tmp / MANIFEST, {"key": key, "kind": kind, "material": material, "files": files}
            )
            _remove(entry)
            os.rename(tmp, entry)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        try:
            value = load(entry)
        except Exception as exc:
            raise CacheError(f"freshly built cache entry {str(entry)!r} does not load: {exc}") from exc
    return value, CacheInfo(entry, key, False, time.perf_counter() - t0)
