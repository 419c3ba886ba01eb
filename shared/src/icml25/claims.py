"""The claims schema: what ``reproduce`` measured, ours against a baseline, and whether the paper's claim held.

``results.json``::

    {"method": "string-pe", "title": "...", "quick": true, "seeds": [0, 1, 2], "seconds": 41.2,
     "claims": [{"claim": "...", "metric": "...", "ours": 0.91, "baseline": 0.42, "baseline_name": "...",
                 "holds": true, "paper": "what the paper reports, with its table", "higher_is_better": true,
                 "ours_sd": 0.01, "baseline_sd": 0.05, "seeds": 3, "note": "..."}],
     "tables": {"name": {"columns": [...], "rows": [[...], ...]}},
     "figures": ["curves.png"], "notes": ["..."]}

Claims are measured, never asserted: ``holds`` is computed from the numbers by :meth:`Claim.compare` or given by
the caller from its own measured test, never hard-coded.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


class ResultsError(ValueError):
    """A results.json (or Report) does not follow the claims schema."""


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1; 0.0 for a single value)."""
    vals = [float(v) for v in values]
    if not vals:
        raise ValueError("mean_sd needs at least one value")
    m = sum(vals) / len(vals)
    if len(vals) == 1:
        return m, 0.0
    var = sum((v - m) ** 2 for v in vals) / (len(vals) - 1)
    return m, math.sqrt(var)


def _num(x: Any) -> float | None:
    if x is None:
        return None
    return float(x)


@dataclass
class Claim:
    """One measured claim: our method against one baseline on one metric.

    ``ours``/``baseline`` are means over seeds; ``ours_sd``/``baseline_sd`` the spread; ``seeds`` how many.
    ``baseline`` may be ``None`` for absolute claims (e.g. "≥ 800 decisions/s"); then ``holds`` must come from the
    caller's own measured test.
    """

    claim: str
    metric: str
    ours: float
    baseline: float | None
    baseline_name: str
    holds: bool
    paper: str
    higher_is_better: bool = True
    ours_sd: float | None = None
    baseline_sd: float | None = None
    seeds: int | None = None
    note: str = ""

    @classmethod
    def compare(
        cls,
        *,
        claim: str,
        metric: str,
        ours: float | Sequence[float],
        baseline: float | Sequence[float],
        baseline_name: str,
        paper: str,
        higher_is_better: bool = True,
        margin: float = 0.0,
        note: str = "",
    ) -> Claim:
        """Build a claim from per-seed values; ``holds`` iff ours beats the baseline by more than ``margin``.

        With ``margin < 0`` the claim is "not worse than the baseline by more than |margin|" (e.g. "comparable").
        """
        o = [ours] if isinstance(ours, (int, float)) else list(ours)
        b = [baseline] if isinstance(baseline, (int, float)) else list(baseline)
        om, osd = mean_sd(o)
        bm, bsd = mean_sd(b)
        diff = om - bm if higher_is_better else bm - om
        return cls(
            claim=claim, metric=metric, ours=om, baseline=bm, baseline_name=baseline_name,
            holds=bool(diff > margin), paper=paper, higher_is_better=higher_is_better,
            ours_sd=osd if len(o) > 1 else None, baseline_sd=bsd if len(b) > 1 else None,
            seeds=max(len(o), len(b)), note=note,
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Report:
    """Everything ``reproduce`` measured: claims, extra tables, figure paths (relative to the run dir) and notes."""

    method: str
    claims: list[Claim] = field(default_factory=list)
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    figures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    title: str = ""
    quick: bool = False
    smoke: bool = False
    seeds: list[int] = field(default_factory=list)
    seconds: float | None = None

    def add(self, claim: Claim) -> Claim:
        self.claims.append(claim)
        return claim

    def add_table(self, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        for r in rows:
            if len(r) != len(columns):
                raise ValueError(f"table {name!r}: row {list(r)!r} has {len(r)} cells, expected {len(columns)}")
        self.tables[name] = {"columns": list(columns), "rows": [list(r) for r in rows]}

    def to_dict(self) -> dict[str, Any]:
        from icml25.io import to_jsonable

        return to_jsonable(
            {
                "method": self.method, "title": self.title, "quick": self.quick, "smoke": self.smoke,
                "seeds": self.seeds, "seconds": self.seconds,
                "claims": [c.to_dict() for c in self.claims],
                "tables": self.tables, "figures": self.figures, "notes": self.notes,
            }
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        validate_results(data)
        claims = [Claim(**c) for c in data["claims"]]
        kw = {k: data[k] for k in ("title", "quick", "smoke", "seeds", "seconds", "tables", "figures", "notes") if k in data}
        return cls(method=data["method"], claims=claims, **kw)

    def to_markdown(self) -> str:
        lines = [f"# {self.method}: reproduction" + (" (quick)" if self.quick else "") + (" (smoke)" if self.smoke else "")]
        if self.title:
            lines += ["", f"*{self.title}*"]
        lines += ["", claims_table([c.to_dict() for c in self.claims])]
        for name, tab in self.tables.items():
            lines += ["", f"## {name}", "", markdown_table(tab["columns"], tab["rows"])]
        if self.figures:
            lines += ["", "## Figures", ""] + [f"![{f}]({f})" for f in self.figures]
        if self.notes:
            lines += ["", "## Notes", ""] + [f"- {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


def fmt(x: Any, sd: Any = None) -> str:
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, (int, float)):
        ax = abs(x)
        s = f"{x:.3g}" if (ax >= 1e4 or (ax < 1e-2 and ax != 0)) else f"{x:.3f}".rstrip("0").rstrip(".") if ax < 100 else f"{x:.1f}"
        if sd is not None:
            s += f" ± {sd:.2g}"
        return s
    return str(x).replace("|", "\\|").replace("\n", " ")


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = ["| " + " | ".join(str(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in rows]
    return "\n".join(out)


def claims_table(claims: Sequence[dict[str, Any]], *, method_column: str | None = None) -> str:
    cols = (["method"] if method_column else []) + ["claim", "metric", "ours", "baseline", "holds", "paper"]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for c in claims:
        row = ([fmt(c.get(method_column, ""))] if method_column else []) + [
            fmt(c["claim"]), fmt(c["metric"]), fmt(c["ours"], c.get("ours_sd")),
            (fmt(c["baseline"], c.get("baseline_sd")) + (f" ({fmt(c['baseline_name'])})" if c.get("baseline_name") else "")),
            "✅" if c["holds"] else "❌", fmt(c["paper"]),
        ]
        out.append("| " + " | ".join(row) + " |")
    return "\n".join(out)


_REQUIRED = {
    "claim": str, "metric": str, "ours": (int, float), "baseline": (int, float, type(None)),
    "baseline_name": str, "holds": bool, "paper": str,
}
_OPTIONAL = {
    "higher_is_better": bool, "ours_sd": (int, float, type(None)), "baseline_sd": (int, float, type(None)),
    "seeds": (int, type(None)), "note": str,
}


def validate_results(data: Any) -> None:
    """Raise :class:`ResultsError` naming the field if ``data`` does not follow the results.json schema."""
    if not isinstance(data, dict):
        raise ResultsError(f"results must be a JSON object, got {type(data).__name__}")
    if not isinstance(data.get("method"), str) or not data["method"]:
        raise ResultsError("results.method must be a non-empty string")
    claims = data.get("claims")
    if not isinstance(claims, list):
        raise ResultsError("results.claims must be a list")
    for i, c in enumerate(claims):
        if not isinstance(c, dict):
            raise ResultsError(f"results.claims[{i}] must be an object")
        for key, typ in _REQUIRED.items():
            if key not in c:
                raise ResultsError(f"results.claims[{i}].{key} is missing")
            val = c[key]
            if key != "holds" and isinstance(val, bool):
                raise ResultsError(f"results.claims[{i}].{key} must be {typ}, got a bool")
            if not isinstance(val, typ):
                raise ResultsError(f"results.claims[{i}].{key} has type {type(val).__name__}, expected {typ}")
            if isinstance(val, float) and not math.isfinite(val):
                raise ResultsError(f"results.claims[{i}].{key} is not finite")
        for key, typ in _OPTIONAL.items():
            if key in c and not isinstance(c[key], typ):
                raise ResultsError(f"results.claims[{i}].{key} has type {type(c[key]).__name__}, expected {typ}")
        unknown = set(c) - set(_REQUIRED) - set(_OPTIONAL)
        if unknown:
            raise ResultsError(f"results.claims[{i}] has unknown fields {sorted(unknown)}")
    for key, typ in (("tables", dict), ("figures", list), ("notes", list)):
        if key in data and not isinstance(data[key], typ):
            raise ResultsError(f"results.{key} must be a {typ.__name__}")
    for name, tab in data.get("tables", {}).items():
        if not isinstance(tab, dict) or not isinstance(tab.get("columns"), list) or not isinstance(tab.get("rows"), list):
            raise ResultsError(f"results.tables[{name!r}] must have 'columns' and 'rows' lists")
