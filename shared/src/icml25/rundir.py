"""The run directory every command writes into.

Layout::

    DIR/config.json      the resolved configuration
    DIR/env.json         package versions, git SHA, python, platform, device, threads
    DIR/metrics.jsonl    one JSON object per log step (append-only)
    DIR/results.json     the Report (claims, tables, figures)
    DIR/results.md       the same as a markdown table
    DIR/*.png            plots

Every whole-file write is atomic (temp file + rename). A run directory that exists and is not empty is refused
unless ``overwrite=True`` (or ``resume=True`` for runs that continue from their own checkpoints).
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata as md
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from icml25.io import _fsync_dir, atomic_write_json, atomic_write_text, dumps


def _fsync_parent(path: Path) -> None:
    _fsync_dir(path.parent)


class RunDirError(ValueError):
    """The run directory cannot be used (exists, not writable, not a directory)."""


def default_run_dir(name: str, *, root: str | os.PathLike = "runs") -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    return Path(root) / name / stamp


def _git_sha() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and sha else None


_ENV_PACKAGES = (
    "icml25", "numpy", "scipy", "torch", "transformers", "trl", "peft", "tokenizers", "torch_geometric",
    "relbench", "scanpy", "anndata", "gymnasium", "stable_baselines3", "flwr", "open_clip_torch", "pot",
    "scikit-learn", "tyro", "safetensors",
)


def environment_info(*, device: str | None = None, extra_packages: tuple[str, ...] = ()) -> dict[str, Any]:
    versions = {}
    for name in _ENV_PACKAGES + tuple(extra_packages):
        try:
            versions[name] = md.version(name)
        except md.PackageNotFoundError:
            continue
    threads = None
    if "torch" in sys.modules:
        threads = sys.modules["torch"].get_num_threads()
    return {
        "time": _dt.datetime.now(_dt.UTC).isoformat(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "git_sha": _git_sha(),
        "device": device,
        "torch_threads": threads,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "argv": sys.argv,
        "packages": versions,
    }


class RunDir:
    """A run directory with atomic writes.

    Args:
        path: the folder; created if missing.
        overwrite: allow a folder that exists and is not empty (its files are replaced as they are written).
        resume: allow an existing folder and keep what is in it (for resumable runs).
    """

    def __init__(self, path: str | os.PathLike, *, overwrite: bool = False, resume: bool = False,
                 staged: bool = False) -> None:
        self.path = Path(path)
        self.target = self.path
        self._staged = staged and not resume
        if self.path.exists():
            if not self.path.is_dir():
                raise RunDirError(f"--out {str(self.path)!r} exists and is not a directory")
            if any(self.path.iterdir()) and not (overwrite or resume):
                raise RunDirError(
                    f"--out {str(self.path)!r} exists and is not empty; choose a new folder or pass --overwrite"
                )
        if self._staged:
            # Write the whole run into a hidden sibling and move it into place in commit(): an interrupted run
            # leaves the old one (or nothing) behind, never two runs mixed.
            self.path = self.target.parent / f".{self.target.name}.partial-{os.getpid()}"
            if self.path.exists():
                shutil.rmtree(self.path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            probe = self.path / ".write-probe"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise RunDirError(f"--out {str(self.path)!r} is not writable: {exc.strerror or exc}") from exc
        if overwrite and not resume:
            metrics = self.path / "metrics.jsonl"
            if metrics.exists():
                metrics.unlink()

    def __repr__(self) -> str:
        return f"RunDir({str(self.target)!r})"

    def commit(self) -> Path:
        """Staged runs: move the finished run into ``target`` (replacing an old run there). Returns ``target``."""
        if not self._staged or self.path == self.target:
            return self.target
        old = None
        if self.target.exists():
            old = self.target.parent / f".{self.target.name}.old-{os.getpid()}"
            os.replace(self.target, old)
        os.replace(self.path, self.target)
        _fsync_parent(self.target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        self.path = self.target
        return self.target

    def carry(self, names: tuple[str, ...] | list[str] | None = None) -> list[str]:
        """Staged runs: copy each finished sub-run ``target/NAME`` (a folder with a ``results.json``, e.g. a separate
        ``reproduce --task scale`` committed inside the main run) into the new run, so that replacing the main run
        keeps it. ``names=None``: every such folder. Returns the names carried; nothing is copied for an unstaged run
        (it writes in place), for a sub-run without ``results.json`` (unfinished), or where the new run already wrote
        its own ``NAME``."""
        if not self._staged or self.path == self.target or not self.target.is_dir():
            return []
        if names is None:
            names = sorted(p.name for p in self.target.iterdir() if p.is_dir() and not p.name.startswith("."))
        carried = []
        for name in names:
            src, dst = self.target / name, self.path / name
            if (src / "results.json").is_file() and not dst.exists():
                shutil.copytree(src, dst)
                carried.append(name)
        return carried

    def abort(self) -> None:
        """Staged runs: remove the unfinished run; the old one at ``target`` (if any) is untouched."""
        if self._staged and self.path != self.target:
            shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> RunDir:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    def file(self, name: str) -> Path:
        return self.path / name

    def write_json(self, name: str, obj: Any) -> Path:
        return atomic_write_json(self.path / name, obj)

    def write_text(self, name: str, text: str) -> Path:
        return atomic_write_text(self.path / name, text)

    def read_json(self, name: str) -> Any:
        return json.loads((self.path / name).read_text())

    def write_config(self, config: Any) -> Path:
        return self.write_json("config.json", config)

    def write_env(self, *, device: str | None = None) -> Path:
        return self.write_json("env.json", environment_info(device=device))

    def log(self, step: int | None = None, **metrics: Any) -> None:
        """Append one JSON object (``{"step": step, **metrics}``) to ``metrics.jsonl`` in a single write."""
        record = {"step": step, **metrics} if step is not None else dict(metrics)
        line = dumps(record, indent=None) + "\n"
        with open(self.path / "metrics.jsonl", "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()

    def metrics(self) -> list[dict[str, Any]]:
        path = self.path / "metrics.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def write_results(self, report: Any) -> Path:
        """Validate and write ``results.json`` and ``results.md`` for a :class:`icml25.claims.Report`, recording the
        ``source_hash`` of the method's code (:mod:`icml25.freshness`) unless the report already has one."""
        from icml25.claims import validate_results
        from icml25.freshness import method_source_hash

        if getattr(report, "source_hash", None) is None and hasattr(report, "method"):
            report.source_hash = method_source_hash(report.method)
        data = report.to_dict()
        validate_results(data)
        self.write_text("results.md", report.to_markdown())
        return self.write_json("results.json", data)
