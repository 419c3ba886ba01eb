"""Burgers control data, generated locally with :mod:`safediffcon.burgers` and kept in the official HDF5 layout.

File ``burgers_{split}.h5`` holding group ``{split}`` with datasets ``pde_11-{nx}`` ``[N, 11, nx]`` (the recorded
states) and ``pde_11-{nx}_f`` ``[N, 10, nx]`` (the controls) and the attributes dt, dx, nt, nx, tmin, tmax, x, so
the same :func:`load_h5` reads the official files (from the authors' Google Drive) and ours.

Splits: the training set stays wide (initial amplitudes up to ``train_amp``, a sizeable fraction unsafe); the
calibration, validation, held-out and test instances are drawn with small amplitudes (``eval_amp``) and kept only
when their whole recorded trajectory is safe (``max u^2 <= u_bound^2``), so each ``(u0, u_d)`` pair is reachable
safely by the control that generated it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from safediffcon.burgers import NT, initial_state, random_force, simulate
from safediffcon.errors import SafediffconError


@dataclass
class BurgersData:
    """``u [N, 11, nx]`` recorded states and ``f [N, 10, nx]`` controls (float32 tensors)."""

    u: torch.Tensor
    f: torch.Tensor

    def __post_init__(self) -> None:
        self.u = torch.as_tensor(self.u, dtype=torch.float32)
        self.f = torch.as_tensor(self.f, dtype=torch.float32)
        if self.u.ndim != 3 or self.u.shape[1] != NT:
            raise SafediffconError(f"u must be [N, {NT}, nx], got {tuple(self.u.shape)}")
        if self.f.ndim != 3 or self.f.shape[1] != NT - 1 or self.f.shape[0] != self.u.shape[0]:
            raise SafediffconError(f"f must be [N, {NT - 1}, nx] with the N of u, got {tuple(self.f.shape)}")
        if self.f.shape[2] != self.u.shape[2]:
            raise SafediffconError(f"f has {self.f.shape[2]} points in space, u has {self.u.shape[2]}")
        if self.u.shape[2] < 4:
            raise SafediffconError(f"nx must be >= 4, got {self.u.shape[2]}")
        if not (torch.isfinite(self.u).all() and torch.isfinite(self.f).all()):
            raise SafediffconError("data must be finite (found NaN or inf in u or f)")

    def __len__(self) -> int:
        return self.u.shape[0]

    @property
    def nx(self) -> int:
        return self.u.shape[2]

    @property
    def s(self) -> torch.Tensor:
        """Safety scores ``max_{t,x} u^2`` ``[N]``."""
        return self.u.square().flatten(1).amax(dim=1)

    @property
    def u0(self) -> torch.Tensor:
        return self.u[:, 0]

    @property
    def u_target(self) -> torch.Tensor:
        return self.u[:, -1]

    def subset(self, idx) -> BurgersData:
        return BurgersData(self.u[idx], self.f[idx])


def make_split(n: int, nx: int, *, nu: float, dt: float, amp: float, force_amp: float = 1.5,
               safe_only: bool = False, u_bound: float = 0.8, seed: int = 0,
               device: str | torch.device = "cpu") -> BurgersData:
    """``n`` trajectories from two-Gaussian initial states (amplitudes up to ``amp``) under random Gaussian forces;
    with ``safe_only`` keep only trajectories with ``max u^2 <= u_bound^2`` at every recorded frame.

    The draws come from a CPU generator (the same ones on every device); the solver runs on ``device`` and the data
    are returned on the CPU."""
    if n < 1:
        raise SafediffconError(f"n must be >= 1, got {n}")
    g = torch.Generator().manual_seed(int(seed))
    us, fs, have = [], [], 0
    for _ in range(50):
        m = max(2 * (n - have), 16) if safe_only else n
        u0 = initial_state(m, nx, amp=amp, generator=g)
        f = random_force(m, nx, amp=force_amp, generator=g)
        u = simulate(u0.to(device), f.to(device), nu=nu, dt=dt).cpu()
        if safe_only:
            ok = u.square().flatten(1).amax(dim=1) <= u_bound**2
            u, f = u[ok], f[ok]
        us.append(u)
        fs.append(f)
        have += u.shape[0]
        if have >= n:
            break
    if have < n:
        raise SafediffconError(f"could not draw {n} safe trajectories (amp={amp}, u_bound={u_bound}); raise u_bound "
                               "or lower the amplitude")
    return BurgersData(torch.cat(us)[:n], torch.cat(fs)[:n])


def _h5py():
    try:
        import h5py
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SafediffconError("reading or writing HDF5 needs h5py: pip install h5py") from exc
    return h5py


def save_h5(path: str | Path, split: str, data: BurgersData, *, dt: float) -> Path:
    """Write ``data`` in the official layout (``burgers_{split}.h5`` style; ``path`` is the file)."""
    h5py = _h5py()
    path = Path(path)
    nx = data.nx
    with h5py.File(path, "w") as fh:
        grp = fh.create_group(split)
        grp.create_dataset(f"pde_{NT}-{nx}", data=data.u.numpy())
        grp.create_dataset(f"pde_{NT}-{nx}_f", data=data.f.numpy())
        for k, v in {"dt": dt, "dx": 1.0 / (nx + 1), "nt": NT, "nx": nx, "tmin": 0.0, "tmax": 1.0}.items():
            grp.attrs[k] = v
        grp.attrs["x"] = (np.arange(1, nx + 1) / (nx + 1))
    return path


def load_h5(path: str | Path, split: str) -> BurgersData:
    """Read split ``split`` of an official-layout Burgers HDF5 file (the authors' or ours)."""
    from icml25.errors import require_hdf5

    p = require_hdf5(path, what="--data")
    h5py = _h5py()
    with h5py.File(p, "r") as fh:
        if split not in fh:
            raise SafediffconError(f"{str(p)!r} has no group {split!r} (groups: {sorted(fh.keys())})")
        grp = fh[split]
        keys = [k for k in grp.keys() if k.startswith(f"pde_{NT}-") and not k.endswith("_f")]
        if not keys:
            raise SafediffconError(f"{str(p)!r}/{split}: no dataset 'pde_{NT}-<nx>' (found {sorted(grp.keys())})")
        u = np.asarray(grp[keys[0]], dtype=np.float32)
        if keys[0] + "_f" not in grp:
            raise SafediffconError(f"{str(p)!r}/{split}: dataset {keys[0]}_f (the controls) is missing")
        f = np.asarray(grp[keys[0] + "_f"], dtype=np.float32)
    if not (np.isfinite(u).all() and np.isfinite(f).all()):
        raise SafediffconError(f"{str(p)!r}/{split}: NaN or inf in the data")
    return BurgersData(torch.from_numpy(u), torch.from_numpy(f))
