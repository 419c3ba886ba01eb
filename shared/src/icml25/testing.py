"""Pytest helpers shared by every package's tests.

- :func:`run_cli`: call a package's ``main(argv)`` in-process and capture its exit code, stdout and stderr.
- :func:`run_cli_subprocess`: run a console script or ``python -m`` in a subprocess.
- :func:`run_cli_fresh`: run ``module.main(argv)`` for several argvs in one fresh interpreter and say whether
  ``torch`` was imported (bad input must be refused before the heavy import).
- :func:`assert_close64`: float64 closeness with a message that says where and by how much.
- :func:`seeded`: a context manager that seeds everything and restores torch's global RNG state afterwards.
- ``seed`` fixture: importable into a conftest (``from icml25.testing import seed``).
- :func:`tiny_open_clip_checkpoint`: a registered open_clip architecture with its weights in a local file and a
  ``local-dir:`` folder, standing in for a user's real CLIP checkpoint (offline).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


def run_cli(main: Callable[..., Any], argv: Sequence[str]) -> CliResult:
    """Run ``main(argv)`` in-process; ``SystemExit`` (argparse/tyro ``--help`` or errors) becomes the return code."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(argv))
        except SystemExit as exc:
            code = exc.code
            rc = code if isinstance(code, int) else (0 if code is None else 1)
    return CliResult(int(rc or 0), out.getvalue(), err.getvalue())


def run_cli_subprocess(args: Sequence[str], *, timeout: float = 300, env: dict[str, str] | None = None,
                       cwd: str | os.PathLike | None = None) -> CliResult:
    """Run a command (e.g. ``["string-pe", "--help"]`` or ``[sys.executable, "-m", "string_pe", "--help"]``)."""
    full_env = {**os.environ, "MPLBACKEND": "Agg", **(env or {})}
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, env=full_env, cwd=cwd)
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


_FRESH = """
import contextlib, importlib, io, json, sys
main = importlib.import_module(sys.argv[1]).main
out = []
for argv in json.loads(sys.argv[2]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(argv)
    out.append([rc, err.getvalue()])
print(json.dumps({"results": out, "modules": sorted(m for m in sys.argv[3:] if m in sys.modules)}))
"""


def run_cli_fresh(module: str, argvs: Sequence[Sequence[str]], *, watch: Sequence[str] = ("torch",),
                  timeout: float = 120) -> tuple[list[CliResult], set[str]]:
    """Call ``<module>.main(argv)`` for each ``argv`` in ONE fresh interpreter; returns the results (stderr only) and
    which of the ``watch`` modules ended up imported (e.g. to assert bad input is refused before torch loads)."""
    import json

    proc = subprocess.run([sys.executable, "-c", _FRESH, module, json.dumps([list(a) for a in argvs]), *watch],
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"run_cli_fresh({module!r}) failed:\n{proc.stderr[-3000:]}")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    return [CliResult(int(rc or 0), "", err) for rc, err in data["results"]], set(data["modules"])


def python_module(module: str, *args: str, **kw: Any) -> CliResult:
    return run_cli_subprocess([sys.executable, "-m", module, *args], **kw)


def assert_close64(actual: Any, expected: Any, *, rtol: float = 1e-10, atol: float = 1e-12, msg: str = "") -> None:
    """Assert two arrays/tensors are close in float64; the message gives the worst entry."""
    import numpy as np

    def _np(x: Any) -> Any:
        if hasattr(x, "detach"):
            x = x.detach().cpu().to(dtype=__import__("torch").float64).numpy()
        return np.asarray(x, dtype=np.float64)

    a, e = _np(actual), _np(expected)
    if a.shape != e.shape:
        raise AssertionError(f"{msg} shape mismatch: {a.shape} vs {e.shape}")
    diff = np.abs(a - e)
    tol = atol + rtol * np.abs(e)
    if not np.all(diff <= tol) or not np.all(np.isfinite(a) == np.isfinite(e)):
        idx = np.unravel_index(np.nanargmax(diff - tol), diff.shape) if diff.size else ()
        raise AssertionError(
            f"{msg} not close: max |diff| = {np.nanmax(diff):.3e} at {idx} "
            f"(actual {a[idx] if diff.size else a}, expected {e[idx] if diff.size else e}; rtol={rtol}, atol={atol})"
        )


@contextlib.contextmanager
def seeded(seed: int = 0):
    """Seed python/numpy/torch for the block; torch's global RNG state is restored afterwards."""
    from icml25.seeding import seed_everything

    state = None
    try:
        import torch

        state = torch.get_rng_state()
    except ImportError:  # pragma: no cover
        torch = None
    seed_everything(seed)
    try:
        yield seed
    finally:
        if state is not None:
            torch.set_rng_state(state)


try:  # a fixture when pytest is importable; harmless otherwise
    import pytest

    @pytest.fixture
    def seed() -> Any:
        """Seeds everything with 0 for the test and restores torch's global RNG state afterwards."""
        with seeded(0) as s:
            yield s

except ImportError:  # pragma: no cover
    pass


def tiny_open_clip_checkpoint(folder: Any, name: str, *, image_size: int = 32, patch_size: int = 8,
                              context_length: int = 77, width: int = 32, seed: int = 0) -> Any:
    """Register a tiny open_clip ViT architecture ``name`` (BPE vocabulary, as real CLIPs have) from a JSON config
    in ``folder`` and save randomly initialised weights as ``folder/<name>.safetensors`` and as a ``local-dir:``
    folder ``folder/<name>-local`` (``open_clip_config.json`` + ``open_clip_model.safetensors``).
    Returns the path of the weight file. Needs ``open_clip`` and ``safetensors``."""
    import json
    from pathlib import Path

    import open_clip
    import torch
    from safetensors.torch import save_file

    folder = Path(folder)
    cfg = {
        "embed_dim": width,
        "vision_cfg": {"image_size": image_size, "layers": 1, "width": 2 * width, "head_width": width,
                       "patch_size": patch_size},
        "text_cfg": {"context_length": context_length, "vocab_size": 49408, "width": width, "heads": 2, "layers": 1},
    }  # fmt: skip
    cfg_dir = folder / f"{name}-config"
    cfg_dir.mkdir(parents=True, exist_ok=True)
    (cfg_dir / f"{name}.json").write_text(json.dumps(cfg))
    open_clip.add_model_config(cfg_dir)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = open_clip.create_model(name)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    weights = folder / f"{name}.safetensors"
    save_file(state, str(weights))
    local = folder / f"{name}-local"
    local.mkdir(exist_ok=True)
    (local / "open_clip_config.json").write_text(json.dumps({"model_cfg": cfg}))
    save_file(state, str(local / "open_clip_model.safetensors"))
    return weights
