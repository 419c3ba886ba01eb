"""Checkpoints: safetensors weights + a JSON config. Loading never unpickles.

``save_model(path, module, config)`` writes ``path/model.safetensors`` and ``path/model_config.json``.
``load_model(path, build)`` reads the config, calls ``build(config)`` to construct the module, checks that every
tensor name and shape matches, and only then copies the weights in (nothing half-loaded).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from icml25.io import atomic_write_bytes, atomic_write_json

WEIGHTS = "model.safetensors"
CONFIG = "model_config.json"


class CheckpointError(ValueError):
    """The checkpoint is missing, corrupted or does not match the model its config builds."""


def save_tensors(path: str | os.PathLike, tensors: dict[str, Any], *, metadata: dict[str, str] | None = None) -> Path:
    """Atomically write a dict of tensors to a safetensors file (shared storage is copied apart)."""
    from safetensors.torch import save

    data = {k: v.detach().contiguous().clone().cpu() for k, v in tensors.items()}
    return atomic_write_bytes(path, save(data, metadata=metadata))


def load_tensors(path: str | os.PathLike) -> dict[str, Any]:
    from safetensors.torch import load_file

    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"checkpoint file {str(path)!r} does not exist")
    try:
        return load_file(str(path))
    except Exception as exc:  # safetensors raises SafetensorError / OSError on corruption
        raise CheckpointError(f"checkpoint file {str(path)!r} is corrupted or not safetensors: {exc}") from exc


def save_model(path: str | os.PathLike, module: Any, config: dict[str, Any]) -> Path:
    """Save ``module.state_dict()`` and ``config`` into the folder ``path``; returns the folder."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    state = module.state_dict()
    save_tensors(path / WEIGHTS, state)
    atomic_write_json(path / CONFIG, config)
    return path


def load_config(path: str | os.PathLike, *, required: Iterable[str] = ()) -> dict[str, Any]:
    """The JSON config beside a checkpoint; errors name the file (and the keys in ``required`` it lacks)."""
    cfg_path = Path(path) / CONFIG
    if not cfg_path.exists():
        raise CheckpointError(f"{str(cfg_path)!r} does not exist; not a checkpoint folder written by save_model")
    try:
        cfg = json.loads(cfg_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{str(cfg_path)!r} is not valid JSON: {exc}") from exc
    required = list(required)
    if not isinstance(cfg, dict):
        raise CheckpointError(f"{str(cfg_path)!r} must hold a JSON object")
    missing = [k for k in required if k not in cfg]
    if missing:
        raise CheckpointError(f"{str(cfg_path)!r} lacks the key(s) {missing}; not a config this command wrote")
    return cfg


def load_weights_into(module: Any, weights: str | os.PathLike, *, map_location: str = "cpu") -> Any:
    """Load a safetensors file into ``module`` strictly: every tensor name and shape must match the module's
    (checked before anything is loaded, so a mismatching file never leaves a half-loaded module). Returns
    ``module``."""
    weights = Path(weights)
    state = load_tensors(weights)
    expected = module.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise CheckpointError(
            f"checkpoint {str(weights)!r} does not match the model built from its config: "
            f"missing tensors {missing[:5]}{'…' if len(missing) > 5 else ''}, "
            f"unexpected tensors {unexpected[:5]}{'…' if len(unexpected) > 5 else ''}"
        )
    bad = [(k, tuple(state[k].shape), tuple(v.shape)) for k, v in expected.items() if tuple(state[k].shape) != tuple(v.shape)]
    if bad:
        k, got, want = bad[0]
        raise CheckpointError(
            f"checkpoint {str(weights)!r}: tensor {k!r} has shape {got} but the model built from the config expects {want}"
            + (f" ({len(bad) - 1} more mismatches)" if len(bad) > 1 else "")
        )
    module.load_state_dict({k: v.to(map_location) for k, v in state.items()}, strict=True)
    return module


def load_model(path: str | os.PathLike, build: Callable[[dict[str, Any]], Any], *, map_location: str = "cpu") -> Any:
    """Build a module from the saved config and load the saved weights into it, strictly."""
    path = Path(path)
    config = load_config(path)
    return load_weights_into(build(config), path / WEIGHTS, map_location=map_location)
