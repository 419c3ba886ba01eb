"""The claims schema: what ``reproduce`` measured, ours against a baseline, and whether the paper's claim held.

``results.json``::

    {"method": "string-pe", "title": "...", "quick": true, "seeds": [0, 1, 2], "seconds": 41.2,
     "claims": [{"claim": "...", "metric": "...", "ours": 0.91, "baseline": 0.42, "baseline_name": "...",
                 "holds": true, "paper": "what the paper reports, with its table", "higher_is_better": true,
                 "ours_sd": 0.01, "baseline_sd": 0.05, "seeds": 5, "note": "...",
                 "kind": "paper|property|target|gate", "verdict": "holds|inconclusive|fails|untested",
                 "test": "welch", "p_value": 0.003, "ci": [0.41, 0.57], "margin": 0.0,
                 "ours_values": [...], "baseline_values": [...], "gates": ["<claim text of a gate>"],
                 "measured_verdict": "holds", "controls": {...}, "plateau": {...}}],
     "tables": {"name": {"columns": [...], "rows": [[...], ...]}},
     "figures": ["curves.png"], "notes": ["..."], "source_hash": "<sha256 of src/**/*.py>"}

Claims are measured, never asserted: the verdict is computed from the per-seed numbers by :meth:`Claim.compare` /
:meth:`Claim.threshold` (a statistical test, :mod:`icml25.stats`) or given by the caller from its own measured test,
never hard-coded. A difference inside the noise is ``inconclusive`` (≈), not a win.

Competence before comparison: a ``gate`` claim (:meth:`Claim.gate`) states that a method has learned the task: its
validation curve plateaued (:func:`icml25.train.plateau_check`) and it beats every trivial control (copy the last
frame, zero action, box centre, the prior model, chance, ...) by a statistical test. A claim lists the gates it
depends on in ``gates``; when :class:`Report` is written, a claim any of whose gates does not hold gets the verdict
``untested`` (⊘; the measured verdict is kept in ``measured_verdict`` and the failing gate is named in ``note``):
comparing methods that have not learned the task says nothing about the paper.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
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

def fmt_seeds(values: Sequence[float | None], spec: str = ".3g", sd_spec: str = ".2g") -> str:
    """Per-seed values as one table cell: ``"mean ± sd"`` (sample sd), the value alone for one seed, ``"—"`` when
    none is finite (``None`` and NaN are dropped). ``spec``/``sd_spec`` are format specs, e.g. ``".3f"``."""
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals:
        return "—"
    m, sd = mean_sd(vals)
    return f"{m:{spec}} ± {sd:{sd_spec}}" if len(vals) > 1 else f"{m:{spec}}"



def _num(x: Any) -> float | None:
    if x is None:
        return None
    return float(x)


KINDS = ("paper", "property", "target", "gate")
"""``paper``: a claim of the paper measured against a baseline (only these count as reproductions); ``property``: true
by construction or by a test of the mathematics (invariances, exact counts, equivalences): it documents the method but
reproduces nothing; ``target``: an engineering goal (speed, memory, time); ``gate``: a method (or a baseline) has
learned the task: plateaued and beats the trivial controls (:meth:`Claim.gate`)."""

MARKS = {"holds": "✅", "inconclusive": "≈", "fails": "❌", "untested": "⊘"}
MEASURED = ("holds", "inconclusive", "fails")
"""The verdicts a test can give; ``untested`` is only ever given by :meth:`Report.resolve_gates`."""


@dataclass
class Claim:
    """One measured claim: our method against one baseline on one metric.

    ``ours``/``baseline`` are means over seeds; ``ours_values``/``baseline_values`` the per-seed numbers they come
    from; ``ours_sd``/``baseline_sd`` the spread; ``seeds`` how many. ``verdict`` is one of ``holds``,
    ``inconclusive``, ``fails`` (see :mod:`icml25.stats`); ``holds`` is ``verdict == "holds"``. ``test``,
    ``p_value`` (of H0 "the claim is false") and ``ci`` (one-sided bounds of the signed difference) say how the
    verdict was reached. ``kind`` is ``paper``, ``property`` or ``target`` (:data:`KINDS`).

    ``baseline`` may be ``None`` for absolute claims (e.g. "≥ 800 decisions/s"); build those with
    :meth:`threshold` (a measured test against a fixed number), or give ``holds``/``verdict`` from the caller's own
    measured test.

    ``gates`` names (by their ``claim`` text) the gate claims of the same report this claim depends on; a failing
    gate turns the verdict into ``untested`` when the report is written (``measured_verdict`` keeps the test's).
    ``controls``/``plateau`` carry a gate claim's evidence (see :meth:`gate`).
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
    kind: str = "paper"
    verdict: str = ""
    test: str = ""
    p_value: float | None = None
    ci: list[float] | None = None
    margin: float = 0.0
    ours_values: list[float] | None = None
    baseline_values: list[float] | None = None
    gates: list[str] | None = None
    measured_verdict: str = ""
    controls: dict[str, Any] | None = None
    plateau: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.claim!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if not self.verdict:
            self.verdict = "holds" if self.holds else "fails"
            self.test = self.test or "measured"
        if self.verdict not in MARKS:
            raise ValueError(f"claim {self.claim!r}: verdict must be one of {tuple(MARKS)}, got {self.verdict!r}")
        if self.verdict == "untested" and self.measured_verdict not in MEASURED:
            raise ValueError(f"claim {self.claim!r}: an untested claim keeps its measured_verdict (one of {MEASURED})")
        if self.gates is not None:
            if isinstance(self.gates, str) or not all(isinstance(g, str) and g for g in self.gates):
                raise ValueError(f"claim {self.claim!r}: gates must be a list of gate claim texts, got {self.gates!r}")
            self.gates = list(self.gates)
        self.holds = self.verdict == "holds"

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
        kind: str = "paper",
        higher_is_better: bool = True,
        margin: float = 0.0,
        paired: bool = False,
        test: str = "welch",
        deterministic: bool = False,
        note: str = "",
        gates: Sequence[str] | None = None,
    ) -> Claim:
        """Build a claim from per-seed values; the verdict is :func:`icml25.stats.verdict` of "ours beats the
        baseline by more than ``margin``".

        With ``margin < 0`` the claim is "not worse than the baseline by more than |margin|" (e.g. "comparable").
        ``paired=True`` when both lists come from the same seeds in the same order; ``deterministic=True`` when the
        numbers do not depend on the seed (exact counts, closed forms): then the means decide.
        """
        from icml25.stats import verdict

        o = [float(ours)] if isinstance(ours, (int, float)) else [float(x) for x in ours]
        b = [float(baseline)] if isinstance(baseline, (int, float)) else [float(x) for x in baseline]
        v = verdict(o, b, higher_is_better=higher_is_better, margin=margin, paired=paired, test=test,
                    deterministic=deterministic)
        om, osd = mean_sd(o)
        bm, bsd = mean_sd(b)
        return cls(
            claim=claim, metric=metric, ours=om, baseline=bm, baseline_name=baseline_name,
            holds=v.verdict == "holds", paper=paper, higher_is_better=higher_is_better,
            ours_sd=osd if len(o) > 1 else None, baseline_sd=bsd if len(b) > 1 else None,
            seeds=max(len(o), len(b)), note=note, kind=kind, verdict=v.verdict, test=v.test,
            p_value=v.p_value, ci=list(v.ci) if v.ci is not None else None, margin=float(margin),
            ours_values=o, baseline_values=b, gates=list(gates) if gates is not None else None,
        )

    @classmethod
    def threshold(
        cls,
        *,
        claim: str,
        metric: str,
        ours: float | Sequence[float],
        threshold: float,
        paper: str,
        kind: str = "target",
        higher_is_better: bool = True,
        deterministic: bool = False,
        note: str = "",
        gates: Sequence[str] | None = None,
    ) -> Claim:
        """A claim "the measured values are beyond the fixed ``threshold``" (:func:`icml25.stats.threshold_verdict`);
        ``baseline`` holds the threshold and ``baseline_name`` says so."""
        from icml25.stats import threshold_verdict

        o = [float(ours)] if isinstance(ours, (int, float)) else [float(x) for x in ours]
        v = threshold_verdict(o, threshold, higher_is_better=higher_is_better, deterministic=deterministic)
        om, osd = mean_sd(o)
        return cls(
            claim=claim, metric=metric, ours=om, baseline=float(threshold),
            baseline_name=("threshold ≥ " if higher_is_better else "threshold ≤ ") + fmt(float(threshold)),
            holds=v.verdict == "holds", paper=paper, higher_is_better=higher_is_better,
            ours_sd=osd if len(o) > 1 else None, seeds=len(o), note=note, kind=kind, verdict=v.verdict,
            test=v.test, p_value=v.p_value, ci=list(v.ci) if v.ci is not None else None, ours_values=o,
            gates=list(gates) if gates is not None else None,
        )

    @classmethod
    def gate(
        cls,
        *,
        claim: str,
        metric: str,
        ours: float | Sequence[float],
        controls: Mapping[str, float | Sequence[float]],
        curves: Sequence[Any] | None = None,
        higher_is_better: bool = True,
        margin: float = 0.0,
        paired: bool = False,
        test: str = "welch",
        noise: float | None = None,
        window: int | None = None,
        paper: str = "competence gate: the method has learned the task before it is compared",
        note: str = "",
    ) -> Claim:
        """A ``gate`` claim: "this method has learned the task".

        It holds when (a) every validation curve in ``curves`` (:class:`icml25.train.Curve`, one per seed; omit for
        methods without a training curve) plateaued by :func:`icml25.train.plateau_check` and (b) ``ours`` (the
        method's per-seed held-out metric) beats every trivial control in ``controls`` (name -> per-seed values or
        one number) by more than ``margin`` by :func:`icml25.stats.verdict` (a single number is a fixed threshold:
        :func:`icml25.stats.threshold_verdict`). It fails when a curve was still
        improving at the end of the budget or a control comparison fails; otherwise it is inconclusive. The
        baseline shown is the hardest control (the one whose comparison is weakest); every control's mean, verdict
        and p-value are kept in ``controls``.
        """
        from icml25.stats import threshold_verdict, verdict
        from icml25.train import plateau_check

        if not controls:
            raise ValueError(f"gate {claim!r}: needs at least one trivial control")
        o = [float(ours)] if isinstance(ours, (int, float)) else [float(x) for x in ours]
        per: dict[str, Any] = {}
        verdicts = {}
        for name, vals in controls.items():
            b = [float(vals)] if isinstance(vals, (int, float)) else [float(x) for x in vals]
            if len(b) == 1:  # a fixed number (chance, a constant predictor): a one-sample test against it
                thr = b[0] + (margin if higher_is_better else -margin)
                v = threshold_verdict(o, thr, higher_is_better=higher_is_better, test=test)
            else:
                v = verdict(o, b, higher_is_better=higher_is_better, margin=margin,
                            paired=paired and len(b) == len(o), test=test)
            verdicts[name] = (v, b)
            per[name] = {"mean": mean_sd(b)[0], "values": b, "verdict": v.verdict, "p_value": v.p_value,
                         "test": v.test}
        order = {"fails": 0, "inconclusive": 1, "holds": 2}
        hardest = min(verdicts, key=lambda k: (order[verdicts[k][0].verdict], verdicts[k][0].diff))
        hv, hb = verdicts[hardest]
        pl = plateau_check(list(curves), noise=noise, window=window) if curves else None
        ctrl_v = [v.verdict for v, _ in verdicts.values()]
        if (pl is not None and not pl.plateaued) or "fails" in ctrl_v:
            final = "fails"
        elif all(x == "holds" for x in ctrl_v):
            final = "holds"
        else:
            final = "inconclusive"
        why = [pl.describe()] if pl is not None else ["no training curve (not an iterative fit)"]
        why += [f"vs {k}: {per[k]['verdict']}" for k in per]
        om, osd = mean_sd(o)
        return cls(
            claim=claim, metric=metric, ours=om, baseline=mean_sd(hb)[0], baseline_name=f"control: {hardest}",
            holds=final == "holds", paper=paper, higher_is_better=higher_is_better,
            ours_sd=osd if len(o) > 1 else None, baseline_sd=mean_sd(hb)[1] if len(hb) > 1 else None,
            seeds=max(len(o), len(hb)), note="; ".join(([note] if note else []) + why), kind="gate",
            verdict=final, test=hv.test, p_value=hv.p_value, ci=list(hv.ci) if hv.ci is not None else None,
            margin=float(margin), ours_values=o, baseline_values=hb, controls=per,
            plateau=pl.to_dict() if pl is not None else None,
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def count_verdicts(claims: Sequence[dict[str, Any] | Claim], *, kind: str = "paper") -> dict[str, int]:
    """How many claims of ``kind`` hold, are inconclusive, fail and are untested (a gate did not hold)."""
    out = {v: 0 for v in MARKS}
    for c in claims:
        d = c.to_dict() if isinstance(c, Claim) else c
        if d.get("kind", "paper") == kind:
            out[_verdict_of(d)] += 1
    return out


def verdict_summary(claims: Sequence[dict[str, Any] | Claim]) -> str:
    """``paper claims: H hold, I inconclusive, F fail, U untested`` plus the counts of gates, properties and
    targets (``U untested`` shown wherever a claim of that kind is untested)."""
    parts = []
    for kind in ("paper", "gate", "property", "target"):
        n = count_verdicts(claims, kind=kind)
        if kind == "paper" or sum(n.values()):
            text = f"{kind} claims: {n['holds']} hold, {n['inconclusive']} inconclusive, {n['fails']} fail"
            if kind == "paper" or n["untested"]:
                text += f", {n['untested']} untested"
            parts.append(text)
    return "; ".join(parts)


def resolve_gates(claims: Sequence[Claim]) -> None:
    """Apply the gates in place: a claim whose ``gates`` name a gate claim that does not hold becomes ``untested``
    (its test's verdict kept in ``measured_verdict``, the failing gates named in ``note``); a claim whose gates all
    hold gets its measured verdict back. Raises :class:`ResultsError` for a gate name that is not a gate claim of
    these claims."""
    gates: dict[str, Claim] = {}
    for c in claims:
        if c.kind == "gate":
            if c.claim in gates:
                raise ResultsError(f"two gate claims are both called {c.claim!r}")
            gates[c.claim] = c
    for c in claims:
        if not c.gates:
            continue
        missing = [g for g in c.gates if g not in gates]
        if missing:
            raise ResultsError(f"claim {c.claim!r} depends on gates {missing} that are not gate claims of this "
                               f"report (gates: {sorted(gates)})")
        measured = c.measured_verdict or c.verdict
        failed = [g for g in c.gates if gates[g].verdict != "holds"]
        tag = "untested: gate not met: "
        base_note = c.note.split(tag)[0].rstrip("; ") if tag in c.note else c.note
        if failed:
            c.measured_verdict, c.verdict, c.holds = measured, "untested", False
            why = tag + ", ".join(f"{g!r} ({gates[g].verdict})" for g in failed)
            c.note = f"{base_note}; {why}" if base_note else why
        else:
            c.verdict, c.holds, c.note = measured, measured == "holds", base_note
            c.measured_verdict = measured


def _verdict_of(c: dict[str, Any]) -> str:
    return c.get("verdict") or ("holds" if c.get("holds") else "fails")


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
    source_hash: str | None = None

    def add(self, claim: Claim) -> Claim:
        self.claims.append(claim)
        return claim

    def add_table(self, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        for r in rows:
            if len(r) != len(columns):
                raise ValueError(f"table {name!r}: row {list(r)!r} has {len(r)} cells, expected {len(columns)}")
        self.tables[name] = {"columns": list(columns), "rows": [list(r) for r in rows]}

    def resolve_gates(self) -> None:
        """See :func:`resolve_gates`; called by :meth:`to_dict`, so a written report always has its gates
        applied."""
        resolve_gates(self.claims)

    def to_dict(self) -> dict[str, Any]:
        from icml25.io import to_jsonable

        self.resolve_gates()
        out = {
            "method": self.method, "title": self.title, "quick": self.quick, "smoke": self.smoke,
            "seeds": self.seeds, "seconds": self.seconds,
            "claims": [c.to_dict() for c in self.claims],
            "tables": self.tables, "figures": self.figures, "notes": self.notes,
        }
        if self.source_hash:
            out["source_hash"] = self.source_hash
        return to_jsonable(out)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        validate_results(data)
        claims = [Claim(**c) for c in data["claims"]]
        kw = {k: data[k] for k in ("title", "quick", "smoke", "seeds", "seconds", "tables", "figures", "notes",
                                   "source_hash") if k in data}
        return cls(method=data["method"], claims=claims, **kw)

    def to_markdown(self) -> str:
        self.resolve_gates()
        lines = [f"# {self.method}: reproduction" + (" (quick)" if self.quick else "") + (" (smoke)" if self.smoke else "")]
        if self.title:
            lines += ["", f"*{self.title}*"]
        claims = [c.to_dict() for c in self.claims]
        lines += ["", verdict_summary(claims) + ".", "", claims_table(claims)]
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


def verdict_cell(c: dict[str, Any]) -> str:
    """``✅`` / ``≈`` / ``❌`` with the p-value (or the test) that decided it; ``⊘ untested`` with the measured
    verdict and the gates it waits on."""
    v = _verdict_of(c)
    mark = MARKS[v]
    if v == "untested":
        measured = MARKS.get(c.get("measured_verdict") or "", "?")
        return f"⊘ untested (measured {measured}; gate not met)"
    if c.get("p_value") is not None:
        return f"{mark} p={c['p_value']:.2g}"
    test = c.get("test") or ""
    return f"{mark} ({test})" if test and test not in ("measured",) else mark


def claims_table(claims: Sequence[dict[str, Any]], *, method_column: str | None = None) -> str:
    """One markdown row per claim: claim, kind, metric, ours ± sd, baseline ± sd (name), verdict, paper."""
    cols = (["method"] if method_column else []) + ["claim", "kind", "metric", "ours", "baseline", "verdict", "paper"]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for c in claims:
        row = ([fmt(c.get(method_column, ""))] if method_column else []) + [
            fmt(c["claim"]), c.get("kind", "paper"), fmt(c["metric"]), fmt(c["ours"], c.get("ours_sd")),
            (fmt(c["baseline"], c.get("baseline_sd")) + (f" ({fmt(c['baseline_name'])})" if c.get("baseline_name") else "")),
            verdict_cell(c), fmt(c["paper"]),
        ]
        out.append("| " + " | ".join(row) + " |")
    return "\n".join(out)


_REQUIRED = {
    "claim": str, "metric": str, "ours": (int, float), "baseline": (int, float, type(None)),
    "baseline_name": str, "holds": bool, "paper": str,
}
_OPTIONAL = {
    "higher_is_better": bool, "ours_sd": (int, float, type(None)), "baseline_sd": (int, float, type(None)),
    "seeds": (int, type(None)), "note": str, "kind": str, "verdict": str, "test": str,
    "p_value": (int, float, type(None)), "ci": (list, type(None)), "margin": (int, float),
    "ours_values": (list, type(None)), "baseline_values": (list, type(None)),
    "gates": (list, type(None)), "measured_verdict": str, "controls": (dict, type(None)),
    "plateau": (dict, type(None)),
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
        if c.get("kind", "paper") not in KINDS:
            raise ResultsError(f"results.claims[{i}].kind must be one of {KINDS}, got {c['kind']!r}")
        if "verdict" in c:
            if c["verdict"] not in MARKS:
                raise ResultsError(f"results.claims[{i}].verdict must be one of {tuple(MARKS)}, got {c['verdict']!r}")
            if c["holds"] != (c["verdict"] == "holds"):
                raise ResultsError(f"results.claims[{i}].holds disagrees with its verdict {c['verdict']!r}")
            if c["verdict"] == "untested" and c.get("measured_verdict") not in MEASURED:
                raise ResultsError(f"results.claims[{i}] is untested but has no measured_verdict in {MEASURED}")
        for key in ("ours_values", "baseline_values", "ci"):
            vals = c.get(key) or []
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in vals):
                raise ResultsError(f"results.claims[{i}].{key} must be a list of finite numbers")
        unknown = set(c) - set(_REQUIRED) - set(_OPTIONAL)
        if unknown:
            raise ResultsError(f"results.claims[{i}] has unknown fields {sorted(unknown)}")
    gates = {c["claim"]: c for c in claims if c.get("kind") == "gate"}
    for i, c in enumerate(claims):
        for g in c.get("gates") or []:
            if g not in gates:
                raise ResultsError(f"results.claims[{i}].gates names {g!r}, which is not a gate claim of this run")
            if gates[g].get("verdict", "holds" if gates[g]["holds"] else "fails") != "holds" and \
                    c.get("verdict") != "untested":
                raise ResultsError(f"results.claims[{i}] depends on the gate {g!r}, which does not hold, so its "
                                   f"verdict must be 'untested', got {c.get('verdict')!r}")
    if "source_hash" in data and not (isinstance(data["source_hash"], str) and len(data["source_hash"]) == 64):
        raise ResultsError("results.source_hash must be a sha256 hex string (64 characters)")
    for key, typ in (("tables", dict), ("figures", list), ("notes", list)):
        if key in data and not isinstance(data[key], typ):
            raise ResultsError(f"results.{key} must be a {typ.__name__}")
    for name, tab in data.get("tables", {}).items():
        if not isinstance(tab, dict) or not isinstance(tab.get("columns"), list) or not isinstance(tab.get("rows"), list):
            raise ResultsError(f"results.tables[{name!r}] must have 'columns' and 'rows' lists")
