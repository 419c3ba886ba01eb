"""Errors raised by relgnn on bad input. All are ``ValueError`` subclasses so the CLI prints ``error: ...``."""

from __future__ import annotations

from icml25.errors import UserInputError


class RelGNNError(UserInputError):
    """Base class of every user-facing relgnn error."""


class SchemaError(RelGNNError):
    """The database schema is unusable (keys, foreign keys, time columns, no relations)."""


class TaskError(RelGNNError):
    """A task or a prediction does not fit the database or the split."""


class ConfigError(RelGNNError):
    """A model or training option is out of range."""


class DataUnavailableError(RelGNNError):
    """A hosted RelBench dataset cannot be read (typically: no network)."""


def check_positive(name: str, value, *, allow_zero: bool = False) -> None:
    """Raise :class:`ConfigError` naming ``name`` unless ``value`` is a finite positive number (or zero if allowed):
    ``inf`` and ``nan`` are refused (an infinite learning rate would train into NaN and fail deep inside)."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not (value >= 0 if allow_zero else value > 0):
        allowed = ">= 0" if allow_zero else "> 0"
        raise ConfigError(f"{name} must be a finite number {allowed}, got {value!r}")


def check_fraction(name: str, value) -> None:
    """Raise :class:`ConfigError` naming ``name`` unless ``value`` is a number in [0, 1) (a dropout probability)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:  # nan fails too
        raise ConfigError(f"{name} must be a number in [0, 1), got {value!r}")
