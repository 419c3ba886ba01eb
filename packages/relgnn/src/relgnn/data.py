"""Where databases and tasks come from: the synthetic generator, or RelBench's real loader.

``load_task("synthetic", "user-churn", ...)`` builds the synthetic database locally; any other dataset name goes
to ``relbench.load.load_dataset`` (a hosted RelBench dataset such as ``rel-f1`` → ``stanford-star/relbench-v1/
rel-f1``, a Hub ``org/repo[/subdir]``, or a local folder with ``manifest.yaml`` + parquet). Hosted datasets need
the network on first use; without it a :class:`relgnn.errors.DataUnavailableError` says so.
"""

from __future__ import annotations

from pathlib import Path

from relgnn.errors import DataUnavailableError, TaskError

HOSTED_PREFIX = "stanford-star/relbench-v1/"


def _resolve_name(dataset: str) -> str:
    if Path(dataset).expanduser().exists() or "/" in dataset:
        return dataset
    return HOSTED_PREFIX + dataset


def load_task(dataset: str, task: str, *, num_users: int = 200, num_items: int = 80, num_windows: int = 16,
              data_seed: int = 0):
    """Return ``(task_object, synthetic_database_or_None)``."""
    if dataset == "synthetic":
        from relgnn.synthetic import TASKS, make_database

        if task not in TASKS:
            raise TaskError(f"task must be one of {sorted(TASKS)} for the synthetic dataset, got {task!r}")
        sdb = make_database(num_users=num_users, num_items=num_items, num_windows=num_windows, seed=data_seed)
        return sdb.tasks[task], sdb
    try:
        from relbench.load import load_dataset

        ds = load_dataset(_resolve_name(dataset))
    except Exception as exc:  # network / hub / manifest errors
        raise DataUnavailableError(
            f"cannot load RelBench dataset {dataset!r} ({type(exc).__name__}: {exc}). Hosted datasets are downloaded "
            "from the Hugging Face hub on first use and need the network; pass a local folder with manifest.yaml "
            "and parquet files, or use --dataset synthetic") from exc
    try:
        return ds.load_task(task), None
    except Exception as exc:
        raise DataUnavailableError(f"cannot load task {task!r} of dataset {dataset!r} ({type(exc).__name__}: {exc})") from exc
