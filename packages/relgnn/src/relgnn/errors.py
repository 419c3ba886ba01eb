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
    """Raise :class:`ConfigError` naming ``name`` unless ``value`` is a positive number (or zero if allowed)."""
    ok = value >= 0 if allow_zero else value > 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not ok:
        allowed = ">= 0" if allow_zero else "> 0"
        raise ConfigError(f"{name} must be a number {allowed}, got {value!r}")
