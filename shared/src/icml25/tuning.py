"""Tune the method and every baseline alike: the same grid size and budget, chosen on a validation split.

A comparison is only as fair as its baselines. :func:`tune_alike` runs :func:`select` for each competitor on a grid
of the same size (it refuses unequal grids), picks each one's best validation score, and flags any choice that sits
at the edge of its grid: an optimum at the edge means the grid did not bracket it. With ``extend=k`` a numeric knob
chosen at an edge is extended up to ``k`` times by one more step in that direction (geometric for positive
log-spaced grids, arithmetic otherwise), holding the other knobs at their chosen values, until the choice is
interior; whatever is still at an edge is reported in :attr:`Selection.at_edge` and in the claim's note. A knob
whose values need another rule passes it in ``steps``: :func:`integer_step` (geometric, rounded to a new integer, e.g.
channels 16 -> 8, tree sizes 15 -> 7) or :func:`arithmetic_step` (e.g. depth 2 -> 3), or any
``(values, upward) -> next value``.

Usage::

    sel = tune_alike({
        "ours": (lambda p: val_acc(train_ours(lr=p["lr"])), {"lr": [1e-4, 3e-4, 1e-3]}),
        "DPO":  (lambda p: val_acc(train_dpo(lr=p["lr"], beta=p["beta"])), {"lr": [1e-4, 1e-3], "beta": [0.1, 1.0]}),
    }, extend=1)   # ValueError: grids of 3 and 4 points are not alike
    sel["ours"].params, sel["ours"].at_edge, sel["ours"].note()

Diverged trials (a non-finite score) are kept in the trial list and never chosen.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Params = dict[str, Any]


@dataclass
class Selection:
    """The outcome of :func:`select`: the chosen knobs, their validation score, every trial, and the edges."""

    name: str
    params: Params
    score: float
    trials: list[dict[str, Any]] = field(default_factory=list)
    at_edge: list[str] = field(default_factory=list)
    grid: dict[str, list[Any]] = field(default_factory=dict)
    grid_size: int = 0
    higher_is_better: bool = True

    def note(self) -> str:
        """One line for a claim's note: what was chosen from how many points, and any edge."""
        chosen = ", ".join(f"{k}={_short(v)}" for k, v in self.params.items())
        s = f"{self.name}: {chosen} chosen on validation from {self.grid_size} grid points"
        extra = len(self.trials) - self.grid_size
        if extra > 0:
            s += f" (+{extra} from extending the grid)"
        if self.at_edge:
            s += f"; at the edge of its grid: {', '.join(self.at_edge)}"
        return s

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "params": self.params, "score": self.score, "trials": self.trials,
                "at_edge": self.at_edge, "grid": self.grid, "grid_size": self.grid_size}


def _short(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def _validate_grid(grid: Mapping[str, Sequence[Any]], name: str) -> dict[str, list[Any]]:
    if not grid:
        raise ValueError(f"{name}: grid must name at least one knob")
    out = {}
    for k, vals in grid.items():
        vals = list(vals)
        if not vals:
            raise ValueError(f"{name}: grid[{k!r}] is empty")
        if len(set(map(repr, vals))) != len(vals):
            raise ValueError(f"{name}: grid[{k!r}] has repeated values {vals}")
        out[k] = vals
    return out


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _edges(params: Params, grid: Mapping[str, list[Any]]) -> list[str]:
    """Knobs whose chosen value is the smallest or largest numeric value of a grid axis with >= 2 values."""
    out = []
    for k, vals in grid.items():
        if len(vals) < 2 or not all(_is_num(v) for v in vals):
            continue
        v = params[k]
        if v == min(vals):
            out.append(f"{k}={_short(v)} (lowest of {len(vals)})")
        elif v == max(vals):
            out.append(f"{k}={_short(v)} (highest of {len(vals)})")
    return out


def _next_value(vals: list[Any], upward: bool) -> Any:
    s = sorted(vals)
    a, b = (s[-2], s[-1]) if upward else (s[1], s[0])
    if all(x > 0 for x in s) and isinstance(a, float | int) and a != 0:
        ratio = b / a
        nxt = b * ratio
    else:
        nxt = b + (b - a)
    return type(s[0])(nxt) if isinstance(s[0], int) and float(nxt).is_integer() else nxt


def arithmetic_step(vals: Sequence[Any], upward: bool) -> Any:
    """One more value beyond the edge at the spacing of the two outermost values (depth (1, 2) -> 3 or 0)."""
    s = sorted(vals)
    a, b = (s[-2], s[-1]) if upward else (s[1], s[0])
    return b + (b - a)


def integer_step(vals: Sequence[Any], upward: bool) -> int:
    """The default step (geometric on a positive grid) rounded to an integer; the arithmetic step when rounding
    lands on a value already in the grid (15, 31 -> 7 or 64; 100, 300 -> 33 or 900; 1, 2 -> 0 or 4)."""
    nxt = int(round(_next_value(list(vals), upward)))
    if nxt in vals:
        nxt = int(arithmetic_step(vals, upward))
    return nxt


def select(
    evaluate: Callable[[Params], float],
    grid: Mapping[str, Sequence[Any]],
    *,
    name: str = "",
    higher_is_better: bool = True,
    extend: int = 0,
    steps: Mapping[str, Callable[[Sequence[Any], bool], Any]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Selection:
    """Evaluate every point of the Cartesian ``grid`` and keep the best finite validation score.

    ``evaluate(params) -> score`` trains on the training split and scores on the validation split. With
    ``extend > 0`` a numeric knob chosen at an edge gets up to ``extend`` new values beyond it (see the module
    docstring); ``steps[knob](values, upward)`` overrides the step for that knob. Ties go to the first point in
    grid order.
    """
    g = _validate_grid(grid, name or "select")
    steps = dict(steps or {})
    if unknown := sorted(set(steps) - set(g)):
        raise ValueError(f"{name or 'select'}: steps names knobs not in the grid: {unknown}; the grid has {list(g)}")
    if extend < 0:
        raise ValueError(f"extend must be >= 0, got {extend}")
    keys = list(g)
    trials: list[dict[str, Any]] = []

    def run(params: Params) -> float:
        score = float(evaluate(dict(params)))
        trials.append({"params": dict(params), "score": score if math.isfinite(score) else None})
        if progress is not None:
            progress(f"{name} {params} -> {score:.4g}")
        return score

    def better(a: float, b: float) -> bool:
        if not math.isfinite(a):
            return False
        if not math.isfinite(b):
            return True
        return a > b if higher_is_better else a < b

    best_p: Params | None = None
    best_s = math.nan
    for combo in itertools.product(*(g[k] for k in keys)):
        p = dict(zip(keys, combo))
        s = run(p)
        if best_p is None or better(s, best_s):
            best_p, best_s = p, s
    grid_size = len(trials)
    assert best_p is not None
    if not math.isfinite(best_s):
        raise ValueError(f"{name or 'select'}: every grid point diverged (non-finite validation score)")
    for _ in range(extend):
        edges = [k for k in keys if len(g[k]) >= 2 and all(_is_num(v) for v in g[k])
                 and best_p[k] in (min(g[k]), max(g[k]))]
        if not edges:
            break
        moved = False
        for k in edges:
            upward = best_p[k] == max(g[k])
            v = steps.get(k, _next_value)(g[k], upward)
            g[k] = sorted(g[k] + [v])
            p = {**best_p, k: v}
            s = run(p)
            if better(s, best_s):
                best_p, best_s, moved = p, s, True
        if not moved:
            break
    return Selection(name=name, params=best_p, score=best_s, trials=trials, at_edge=_edges(best_p, g), grid=g,
                     grid_size=grid_size, higher_is_better=higher_is_better)


def grid_size(grid: Mapping[str, Sequence[Any]]) -> int:
    return math.prod(len(list(v)) for v in grid.values())


def tune_alike(
    competitors: Mapping[str, tuple[Callable[[Params], float], Mapping[str, Sequence[Any]]]],
    *,
    higher_is_better: bool = True,
    extend: int = 0,
    steps: Mapping[str, Callable[[Sequence[Any], bool], Any]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Selection]:
    """:func:`select` for each ``name -> (evaluate, grid)``, refusing grids of unequal size (same budget for all).

    ``steps`` (knob -> step rule, see :func:`select`) applies to every competitor whose grid has that knob."""
    if not competitors:
        raise ValueError("tune_alike needs at least one competitor")
    sizes = {n: grid_size(_validate_grid(gr, n)) for n, (_, gr) in competitors.items()}
    if len(set(sizes.values())) != 1:
        raise ValueError(f"grids are not alike (same number of points for every method): {sizes}")
    steps = dict(steps or {})
    return {n: select(fn, gr, name=n, higher_is_better=higher_is_better, extend=extend,
                      steps={k: f for k, f in steps.items() if k in gr}, progress=progress)
            for n, (fn, gr) in competitors.items()}


def selections_table(selections: Mapping[str, Selection]) -> tuple[list[str], list[list[Any]]]:
    """Columns and rows for ``Report.add_table``: method, chosen knobs, validation score, grid points, edge."""
    cols = ["method", "chosen on validation", "validation score", "grid points", "at the edge"]
    rows = []
    for n, s in selections.items():
        rows.append([n, ", ".join(f"{k}={_short(v)}" for k, v in s.params.items()), s.score, len(s.trials),
                     "; ".join(s.at_edge) or "no"])
    return cols, rows
