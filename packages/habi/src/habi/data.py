"""Offline-RL data in D4RL's layout, the ``qlearning_dataset`` view, the state normaliser and normalised scores.

A data set is a dict of equal-length arrays (the D4RL HDF5 layout)::

    observations (N, obs_dim) float32     actions   (N, act_dim) float32 in [-1, 1]
    rewards      (N,)         float32     terminals (N,) bool      timeouts (N,) bool

Row ``i`` is one environment step: ``observations[i]`` was seen, ``actions[i]`` taken, ``rewards[i]`` received;
``terminals[i]`` marks a true environment termination, ``timeouts[i]`` a time-limit truncation (the episode ends but
the state is not absorbing). Episodes are stored back to back, so ``observations[i + 1]`` is the next observation
of row ``i`` unless row ``i`` ends an episode.

:func:`qlearning_dataset` gives the transition view used by Diffusion-QL and Habi (D4RL's ``qlearning_dataset``):
rows that end with a timeout (and the last row) are dropped because their next observation is unknown, and
``terminals`` keeps only true terminations.

Files: ``.hdf5``/``.h5`` (real D4RL files load as they are) and ``.npz`` with the same keys; extra keys are kept.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from habi.errors import DataError, HabiConfigError

REQUIRED_KEYS = ("observations", "actions", "rewards", "terminals")
"""Keys every data set must have; ``timeouts`` is optional (all False when absent, as in old D4RL files)."""


def validate_dataset(data: dict[str, np.ndarray], *, obs_dim: int | None = None, act_dim: int | None = None,
                     action_bound: float | None = 1.0, name: str = "dataset") -> None:
    """Raise :class:`DataError` naming the field if ``data`` is not a valid D4RL-layout data set.

    Args:
        data: dict with at least :data:`REQUIRED_KEYS`.
        obs_dim, act_dim: expected sizes (e.g. from the environment); ``None`` skips the check.
        action_bound: actions must lie in ``[-bound, bound]`` (D4RL convention: 1); ``None`` skips the check
            (use it when you normalise actions yourself).
    """
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        raise DataError(f"{name}: missing key(s) {missing}; a D4RL-layout data set needs {list(REQUIRED_KEYS)} "
                        "(and optionally 'timeouts')")
    obs, act = np.asarray(data["observations"]), np.asarray(data["actions"])
    n = obs.shape[0] if obs.ndim else 0
    if n == 0:
        raise DataError(f"{name}: empty data set (0 rows in 'observations'); need at least 2 steps")
    if obs.ndim != 2 or act.ndim != 2:
        raise DataError(f"{name}: 'observations' and 'actions' must be 2-D (N, dim); got shapes {obs.shape}, {act.shape}")
    for k in ("actions", "rewards", "terminals", "timeouts"):
        if k in data and np.asarray(data[k]).shape[0] != n:
            raise DataError(f"{name}: '{k}' has {np.asarray(data[k]).shape[0]} rows but 'observations' has {n}")
    for k in ("observations", "actions", "rewards"):
        arr = np.asarray(data[k], dtype=np.float64)
        if not np.all(np.isfinite(arr)):
            bad = int(np.count_nonzero(~np.isfinite(arr)))
            raise DataError(f"{name}: '{k}' contains {bad} NaN/inf value(s); clean the data first")
    if obs_dim is not None and obs.shape[1] != obs_dim:
        raise DataError(f"{name}: observation size {obs.shape[1]} does not match the environment's {obs_dim}")
    if act_dim is not None and act.shape[1] != act_dim:
        raise DataError(f"{name}: action size {act.shape[1]} does not match the environment's {act_dim}")
    if action_bound is not None and np.abs(act).max() > action_bound + 1e-6:
        raise DataError(f"{name}: 'actions' lie outside [-{action_bound}, {action_bound}] (max |a| = "
                        f"{np.abs(act).max():.3g}); rescale them to [-1, 1] (gymnasium.wrappers.RescaleAction) "
                        "or pass action_bound=None")


def _to_arrays(raw: dict[str, Any]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for k, v in raw.items():
        out[k] = np.asarray(v)
    if "timeouts" not in out and "observations" in out:
        out["timeouts"] = np.zeros(len(out["observations"]), dtype=bool)
    for k in ("observations", "actions", "rewards"):
        if k in out:
            out[k] = out[k].astype(np.float32)
    for k in ("terminals", "timeouts"):
        if k in out:
            out[k] = out[k].astype(bool)
    if "rewards" in out:
        out["rewards"] = out["rewards"].reshape(-1)  # (N, 1) in some files -> (N,)
    return out


def _from_minari(f: Any, episodes: list[str]) -> dict[str, np.ndarray]:
    """Minari's HDF5 layout (``episode_<i>/{observations (T+1), actions (T), rewards, terminations, truncations}``)
    -> D4RL rows: the final observation of each episode is dropped, ``terminals = terminations`` and
    ``timeouts = truncations`` (the last row of an episode that neither terminated nor truncated is marked as a
    timeout, since its successor is not stored)."""
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("observations", "actions", "rewards", "terminals", "timeouts")}
    for name in episodes:
        g = f[name]
        for key in ("observations", "actions", "rewards", "terminations", "truncations"):
            if key not in g or not hasattr(g[key], "shape"):
                raise DataError(f"Minari episode {name!r}: missing array {key!r} (dict observations are not supported)")
        act = np.asarray(g["actions"][()])
        t = len(act)
        term = np.asarray(g["terminations"][()], bool).reshape(-1)[:t]
        trunc = np.asarray(g["truncations"][()], bool).reshape(-1)[:t].copy()
        if t and not (term[-1] or trunc[-1]):
            trunc[-1] = True
        cols["observations"].append(np.asarray(g["observations"][()])[:t])
        cols["actions"].append(act)
        cols["rewards"].append(np.asarray(g["rewards"][()]).reshape(-1)[:t])
        cols["terminals"].append(term)
        cols["timeouts"].append(trunc & ~term)
    return {k: np.concatenate(v) for k, v in cols.items()}


def load_offline(path: str | Path, *, obs_dim: int | None = None, act_dim: int | None = None,
                 action_bound: float | None = 1.0) -> dict[str, np.ndarray]:
    """Load a D4RL-layout file (``.hdf5``/``.h5`` or ``.npz``) and validate it.

    Real D4RL HDF5 files load as they are (top-level datasets; groups such as ``infos/`` are skipped); Minari
    ``main_data.hdf5`` files (one group per episode) are converted to D4RL rows. Metadata stored as a JSON string attribute/entry ``meta`` is returned under the key ``"meta"``.

    Returns:
        dict with ``observations (N, obs_dim)``, ``actions (N, act_dim)``, ``rewards (N,)``, ``terminals (N,)``,
        ``timeouts (N,)`` and any extra arrays.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"offline data file {str(path)!r} does not exist (make one with `habi make-data`)")
    meta: dict[str, Any] = {}
    suffix = path.suffix.lower()
    if suffix in (".hdf5", ".h5"):
        import h5py
        from icml25.errors import require_hdf5

        require_hdf5(path, what="offline data file")

        with h5py.File(path, "r") as f:
            episodes = sorted((k for k in f.keys() if k.startswith("episode_") and isinstance(f[k], h5py.Group)),
                              key=lambda k: int(k.split("_")[-1]) if k.split("_")[-1].isdigit() else k)
            if episodes:
                raw = _from_minari(f, episodes)
            else:
                raw = {k: f[k][()] for k in f.keys() if isinstance(f[k], h5py.Dataset)}
            if "meta" in f.attrs:
                meta = json.loads(f.attrs["meta"])
    elif suffix == ".npz":
        import zipfile

        try:
            with np.load(path, allow_pickle=False) as f:
                raw = {k: f[k] for k in f.files if k != "meta"}
                if "meta" in f.files:
                    meta = json.loads(str(f["meta"]))
        except (ValueError, OSError, zipfile.BadZipFile) as exc:
            why = "it would need pickle, which is refused" if "pickle" in str(exc) else str(exc).splitlines()[0][:120]
            raise DataError(f"offline data file {str(path)!r} is not a numeric .npz archive written by numpy "
                            f"({why})") from None
    else:
        raise DataError(f"offline data file {str(path)!r}: unsupported suffix {suffix!r}; use .hdf5, .h5 or .npz")
    data = _to_arrays(raw)
    validate_dataset(data, obs_dim=obs_dim, act_dim=act_dim, action_bound=action_bound, name=str(path))
    data["meta"] = meta  # type: ignore[assignment]
    return data


def save_offline(path: str | Path, data: dict[str, Any], *, meta: dict[str, Any] | None = None) -> Path:
    """Write a D4RL-layout data set to ``.hdf5``/``.h5`` or ``.npz`` atomically (temp file + rename)."""
    import os
    import tempfile

    path = Path(path)
    arrays = {k: np.asarray(v) for k, v in data.items() if k != "meta"}
    validate_dataset(arrays, action_bound=None, name=str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=path.suffix)
    os.close(fd)
    try:
        if path.suffix.lower() in (".hdf5", ".h5"):
            import h5py

            with h5py.File(tmp, "w") as f:
                for k, v in arrays.items():
                    f.create_dataset(k, data=v)
                f.attrs["meta"] = json.dumps(meta or {})
        elif path.suffix.lower() == ".npz":
            with open(tmp, "wb") as fh:
                np.savez(fh, **arrays, meta=np.asarray(json.dumps(meta or {})))
        else:
            raise DataError(f"unsupported suffix {path.suffix!r}; use .hdf5, .h5 or .npz")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def qlearning_dataset(data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """D4RL's ``qlearning_dataset``: transitions ``(s, a, r, s', done)``.

    ``next_observations[j] = observations[i + 1]`` for the kept rows ``i``; rows that end an episode by timeout,
    and the final row, are dropped (their successor belongs to another episode). ``terminals`` keeps only true
    terminations (timeouts never count as terminal).

    Returns:
        dict with ``observations (M, obs_dim)``, ``actions (M, act_dim)``, ``next_observations (M, obs_dim)``,
        ``rewards (M,)``, ``terminals (M,)`` float32 in {0, 1}.
    """
    validate_dataset(data, action_bound=None)
    n = len(data["observations"])
    timeouts = np.asarray(data.get("timeouts", np.zeros(n, bool)), bool)
    terminals = np.asarray(data["terminals"], bool)
    keep = np.ones(n, dtype=bool)
    keep[-1] = False
    keep &= ~timeouts
    idx = np.nonzero(keep)[0]
    if idx.size == 0:
        raise DataError("dataset: no complete transition (every row ends with a timeout or is the last row)")
    return {
        "observations": data["observations"][idx].astype(np.float32),
        "actions": data["actions"][idx].astype(np.float32),
        "next_observations": data["observations"][idx + 1].astype(np.float32),
        "rewards": data["rewards"][idx].astype(np.float32),
        "terminals": terminals[idx].astype(np.float32),
    }


@dataclass(frozen=True)
class GaussianNormalizer:
    """Per-dimension state normaliser ``(s - mean) / std`` (std floored at 1e-6), as in the official pipelines.

    Saved with the teacher and reused for Habi, so teacher and habit see identical inputs (audit: the official
    MuJoCo pipeline rebuilds the statistics from different rows).
    """

    mean: tuple[float, ...]
    std: tuple[float, ...]

    @classmethod
    def fit(cls, x: np.ndarray) -> GaussianNormalizer:
        x = np.asarray(x, dtype=np.float64)
        return cls(mean=tuple(float(v) for v in x.mean(0)), std=tuple(float(max(v, 1e-6)) for v in x.std(0)))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return ((np.asarray(x, dtype=np.float32) - np.asarray(self.mean, np.float32))
                / np.asarray(self.std, np.float32)).astype(np.float32)

    def to_dict(self) -> dict[str, list[float]]:
        return {"mean": list(self.mean), "std": list(self.std)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GaussianNormalizer:
        return cls(mean=tuple(d["mean"]), std=tuple(d["std"]))


D4RL_REFERENCES: dict[str, tuple[float, float]] = {
    "Hopper-v5": (-20.272305, 3234.3),
    "HalfCheetah-v5": (-280.178953, 12135.0),
    "Walker2d-v5": (1.629008, 4592.3),
}
"""D4RL's ``(random, expert)`` reference returns per locomotion task (``REF_MIN_SCORE`` / ``REF_MAX_SCORE`` of
``d4rl/infos.py``, Fu et al. 2020, the same for the v0 and v2 data sets). They were measured on the mujoco-py
``-v2/-v3`` environments; gymnasium's ``-v5`` keeps their dynamics and rewards, so they are the closest published
references, not an exact match."""


def normalized_score(returns: np.ndarray | float, *, random_return: float, expert_return: float) -> np.ndarray:
    """D4RL normalised score ``100 (R - R_random) / (R_expert - R_random)``."""
    if not math.isfinite(random_return) or not math.isfinite(expert_return) or expert_return == random_return:
        raise HabiConfigError(f"normalized_score: need finite, distinct references (random={random_return}, "
                         f"expert={expert_return})")
    return 100.0 * (np.asarray(returns, dtype=np.float64) - random_return) / (expert_return - random_return)
