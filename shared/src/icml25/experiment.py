"""One budget idiom and one runner: ``reproduce`` is a list of experiments assembled into a Report.

A package's ``config.py`` holds its frozen config dataclasses with named presets, and one :class:`Budgets`::

    @dataclass(frozen=True)
    class Config:
        seeds: int = 5
        \"\"\"Seeds of the full run.\"\"\"
        steps: int = 2000

    BUDGETS = Budgets(smoke=Config(seeds=1, steps=20), quick=Config(seeds=3, steps=300), full=Config())

and its ``reproduce.py`` is a list of experiment functions ``(cfg, seeds, out) -> Section``::

    def accuracy(cfg: Config, seeds: list[int], out: Path) -> Section:
        s = Section("accuracy")
        s.claims.append(Claim.compare(...))
        return s

    EXPERIMENTS = [accuracy, speed]

    def reproduce(*, quick, smoke, out, seed):
        return run_experiments("my-method", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)

:func:`run_experiments` picks the budget, derives the seeds (``seed, seed + 1, ...``: as many as ``cfg.seeds``),
shows one progress line per experiment, and merges the sections' claims, tables, figures and notes in order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from icml25.claims import Claim, Report

C = TypeVar("C")


@dataclass(frozen=True)
class Budgets(Generic[C]):
    """The three budgets of ``reproduce``: ``smoke`` (seconds; checks that everything runs), ``quick`` (about a
    minute on 2 CPU cores, 3 seeds) and ``full`` (under about 30 minutes alone, >= 5 seeds where that fits; spend it on competence first)."""

    smoke: C
    quick: C
    full: C

    def pick(self, *, quick: bool = False, smoke: bool = False) -> C:
        return self.smoke if smoke else self.quick if quick else self.full

    @staticmethod
    def mode(*, quick: bool = False, smoke: bool = False) -> str:
        return "smoke" if smoke else "quick" if quick else "full"


@dataclass
class Section:
    """What one experiment measured: claims, tables (name -> (columns, rows)), figure file names, notes."""

    name: str
    claims: list[Claim] = field(default_factory=list)
    tables: dict[str, tuple[Sequence[str], Sequence[Sequence[Any]]]] = field(default_factory=dict)
    figures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, claim: Claim) -> Claim:
        self.claims.append(claim)
        return claim

    def table(self, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        self.tables[name] = (list(columns), [list(r) for r in rows])


Experiment = Callable[[Any, list[int], Path], Section]


def seeds_for(cfg: Any, seed: int) -> list[int]:
    """``[seed, seed + 1, ...]``, as many as ``cfg.seeds`` (an int) or the explicit list ``cfg.seeds``."""
    n = getattr(cfg, "seeds", 1)
    if isinstance(n, int):
        if n < 1:
            raise ValueError(f"cfg.seeds must be >= 1, got {n}")
        return [seed + i for i in range(n)]
    return [seed + int(s) for s in n]


def run_experiments(
    method: str,
    experiments: Sequence[Experiment],
    budgets: Budgets[Any],
    *,
    quick: bool,
    smoke: bool,
    out: Path,
    seed: int,
    title: str = "",
    progress: bool = True,
) -> Report:
    """Run each experiment on the picked budget and merge what it measured into one :class:`Report`."""
    from tqdm.auto import tqdm

    cfg = budgets.pick(quick=quick, smoke=smoke)
    seeds = seeds_for(cfg, seed)
    report = Report(method=method, title=title, seeds=seeds)
    bar = tqdm(experiments, desc=f"{method} reproduce ({Budgets.mode(quick=quick, smoke=smoke)})", unit="exp",
               disable=None if progress else True)
    for exp in bar:
        bar.set_postfix_str(getattr(exp, "__name__", "experiment"))
        t0 = time.perf_counter()
        sec = exp(cfg, list(seeds), Path(out))
        if not isinstance(sec, Section):
            raise TypeError(f"experiment {getattr(exp, '__name__', exp)!r} must return a Section, got {type(sec)}")
        for c in sec.claims:
            report.add(c)
        for name, (cols, rows) in sec.tables.items():
            report.add_table(name, cols, rows)
        report.figures += sec.figures
        report.notes += sec.notes
        report.notes.append(f"{sec.name}: {time.perf_counter() - t0:.1f} s")
    return report
