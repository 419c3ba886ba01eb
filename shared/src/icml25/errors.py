"""User-facing errors: one base class, and the translation of library errors that a user's file can trigger.

Every package's own errors derive from :class:`UserInputError` (a ``ValueError``), so ``method_main`` can turn them
into ``<prog>: error: ...`` and exit status 2 instead of a traceback. Library errors raised while reading a file the
user gave (an HDF5 file that is not one, a corrupt safetensors file, invalid JSON, a config without a key) are
translated by :func:`user_message` into one line that names the file or the field.

Readers for a user's files::

    cfg = read_json(path, what="--config", required=("task", "gnn"))  # names the file and the missing key
    x = read_npy(path, what="--input", error=MyPackageError)           # text / truncated / object arrays refused
    d = read_npz(path, what="--data", keys=("x", "z"), error=MyPackageError, hint="the data.npz of `simulate`")
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class UserInputError(ValueError):
    """Bad input from the user (an argument, a file, a config): reported as ``error: ...`` with exit status 2."""


class ConfigKeyError(UserInputError):
    """A JSON config a run folder or a user gave lacks a key the command needs."""


def read_json(path: str | Path, *, what: str = "file", required: Iterable[str] = ()) -> Any:
    """Read a JSON file the user gave; errors name ``what`` and the file (and the missing keys, if any)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserInputError(f"{what} {str(p)!r}: no such file") from None
    except IsADirectoryError:
        raise UserInputError(f"{what} {str(p)!r} is a directory, expected a JSON file") from None
    except UnicodeDecodeError:
        raise UserInputError(f"{what} {str(p)!r} is not a text (JSON) file") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserInputError(f"{what} {str(p)!r} is not valid JSON ({exc.msg} at line {exc.lineno}, "
                             f"column {exc.colno})") from None
    required = list(required)
    if required:
        if not isinstance(data, dict):
            raise ConfigKeyError(f"{what} {str(p)!r} must hold a JSON object with keys {required}")
        missing = [k for k in required if k not in data]
        if missing:
            raise ConfigKeyError(f"{what} {str(p)!r} lacks the key(s) {missing} (expected {required})")
    return data


_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def require_hdf5(path: str | Path, *, what: str = "file") -> Path:
    """Refuse a path that is not an HDF5 file (``.h5ad``, ``.hdf5``, ``.h5``) with a message naming ``what``.

    Checks the signature without h5py: HDF5 puts it at byte 0 or, after a user block, at 512, 1024, 2048, ...
    """
    p = Path(path)
    if not p.exists():
        raise UserInputError(f"{what} {str(p)!r}: no such file")
    if not p.is_file():
        raise UserInputError(f"{what} {str(p)!r} is not a file")
    size = p.stat().st_size
    with p.open("rb") as fh:
        offset = 0
        while offset + 8 <= size:
            fh.seek(offset)
            if fh.read(8) == _HDF5_SIGNATURE:
                return p
            offset = 512 if offset == 0 else offset * 2
    raise UserInputError(f"{what} {str(p)!r} is not an HDF5 file (no HDF5 signature); expected {p.suffix or '.h5'} "
                         "written by h5py/anndata")


_NPY_MAGIC, _ZIP_MAGIC = b"\x93NUMPY", b"PK\x03\x04"


def _user_file(p: Path, what: str, error: type[Exception], hint: str) -> None:
    if not p.exists():
        raise error(f"{what} {str(p)!r}: no such file" + (f" ({hint})" if hint else ""))
    if not p.is_file():
        raise error(f"{what} {str(p)!r} is not a file")


def _why(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _numeric(a: Any) -> bool:
    import numpy as np

    return bool(np.issubdtype(a.dtype, np.number) or np.issubdtype(a.dtype, np.bool_))


def read_npy(path: str | Path, *, what: str = "file", error: type[Exception] = UserInputError,
             hint: str = "") -> Any:
    """A numeric array from a user's ``.npy`` file (no pickles). A missing file, one without the NumPy header
    (e.g. a text file), a truncated or corrupt one and a non-numeric array each raise ``error`` (a
    :class:`UserInputError` subclass, the package's own) naming ``what`` (the flag) and the file."""
    import numpy as np

    p = Path(path)
    _user_file(p, what, error, hint)
    with p.open("rb") as fh:
        if fh.read(6) != _NPY_MAGIC:
            raise error(f"{what} {str(p)!r} is not a .npy array file (no NumPy header; write it with numpy.save)")
    try:
        a = np.load(p, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise error(f"{what} {str(p)!r}: a truncated or corrupt .npy file, or an object array "
                    f"(not read: {_why(exc)})") from None
    if not _numeric(a):
        raise error(f"{what} {str(p)!r}: expected a numeric array, got dtype {a.dtype}")
    return a


def read_npz(path: str | Path, *, what: str = "file", keys: Iterable[str] | None = None,
             error: type[Exception] = UserInputError, hint: str = "", numeric: bool = True) -> dict[str, Any]:
    """The arrays of a user's ``.npz`` archive (``keys``, or every array when ``None``; no pickles), read into
    memory. Errors as :func:`read_npy`, plus the missing keys by name; ``hint`` says how such a file is written."""
    import zipfile
    import zlib

    import numpy as np

    p = Path(path)
    _user_file(p, what, error, hint)
    want = None if keys is None else list(keys)
    with p.open("rb") as fh:
        if fh.read(4) != _ZIP_MAGIC:
            raise error(f"{what} {str(p)!r} is not a .npz archive (no zip header)"
                        + (f"; expected {hint}" if hint else (f"; write it with numpy.savez holding {want}"
                                                               if want else "")))
    try:
        with np.load(p, allow_pickle=False) as z:
            names = z.files if want is None else want
            missing = [k for k in names if k not in z.files]
            if missing:
                raise error(f"{what} {str(p)!r} lacks the arrays {missing} (needs {names})")
            arrays = {k: z[k] for k in names}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        if isinstance(exc, error):
            raise
        raise error(f"{what} {str(p)!r}: a truncated or corrupt .npz archive, or object arrays "
                    f"(not read: {_why(exc)})") from None
    if numeric:
        for k, a in arrays.items():
            if not _numeric(a):
                raise error(f"{what} {str(p)!r}: array {k!r} must be numeric, got dtype {a.dtype}")
    return arrays


def user_message(exc: BaseException) -> str | None:
    """One line for a library error that bad user input causes, or ``None`` for a genuine bug (keep the traceback).

    Translated: :class:`ValueError` (incl. :class:`UserInputError`), ``FileNotFoundError`` and other ``OSError``
    s from opening a file (h5py raises ``OSError`` for a non-HDF5 file), ``json.JSONDecodeError``, safetensors'
    ``SafetensorError`` and numpy's pickle refusal.
    """
    name = type(exc).__name__
    if name == "SafetensorError":
        return f"not a valid safetensors file ({exc})"
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
    if isinstance(exc, ValueError):
        msg = str(exc)
        if "allow_pickle" in msg and not isinstance(exc, UserInputError):  # numpy's advice to unpickle: no
            return "the file is not a numeric .npy/.npz array file (object arrays need pickle, which is refused)"
        return msg
    if isinstance(exc, OSError):
        fname = getattr(exc, "filename", None)
        reason = exc.strerror or str(exc)
        if isinstance(exc, FileNotFoundError) and fname:
            return f"{fname!s}: no such file or directory"
        return f"{fname}: {reason}" if fname else reason
    return None


def _flag(prefix: str, name: str) -> str:
    """``--`` + the flag spelling tyro gives the field (dashes), or ``prefix + name`` for any other prefix."""
    return "--" + name.replace("_", "-") if prefix == "--" else prefix + name


def check_positive(obj: Any, *names: str, integer: bool = True, prefix: str = "") -> None:
    """Raise :class:`UserInputError` naming the field (``prefix="--"``: as its command-line flag) unless each
    ``obj.<name>`` is a positive (integer) number."""
    import math

    for n in names:
        v = getattr(obj, n)
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
        if integer:
            ok = ok and float(v).is_integer()
        if not ok:
            kind = "a positive integer" if integer else "a positive finite number"
            raise UserInputError(f"{_flag(prefix, n)} must be {kind}, got {v!r}")


def check_non_negative(obj: Any, *names: str, prefix: str = "") -> None:
    """Raise :class:`UserInputError` naming the field (``prefix="--"``: as its flag) unless each ``obj.<name>`` is a
    finite number >= 0."""
    import math

    for n in names:
        v = getattr(obj, n)
        if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0):
            raise UserInputError(f"{_flag(prefix, n)} must be a finite number >= 0, got {v!r}")
