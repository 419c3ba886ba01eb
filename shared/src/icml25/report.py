"""README blocks generated from committed full runs, never typed.

Each package commits its full run under ``packages/<name>/results/full/`` (``results.json``, ``results.md``, small
PNGs). Its README carries a block between :data:`START` and :data:`END` that :func:`package_block` renders from that
``results.json``; the root README carries the summary that :func:`summary_block` renders from all of them. A
contract test re-renders every block and compares it with the README text, so a number typed by hand (or a stale
table after a new full run) fails CI. Refresh with::

    uv run icml25 report --package packages/<name> --update-readme packages/<name>/README.md
    uv run icml25 report --packages packages --update-readme README.md

Numbers quoted in a README's prose are generated too: write them as inline values that name where they come from,
``<!-- value claim="RelGNN beats GraphSAGE" field=ours fmt=.3f -->0.574<!-- /value -->`` (:func:`render_values`;
``run=<sub>`` for a sub-run, no ``claim`` for a run-level field such as ``seconds``). ``--update-readme`` rewrites
the text between the markers from the committed results, and the contract test fails when it differs.

Every run counts: sub-runs committed as ``results/full/<sub>/results.json`` (a long task, an ablation) are tabled in
the package block and counted in the package row and the root summary. Every run is checked against the code: a run
whose ``source_hash`` differs from the package's ``src/`` now is marked *stale*, one without a hash *unknown*
(:mod:`icml25.freshness`).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icml25.claims import KINDS, MARKS, claims_table, count_verdicts, fmt, validate_results, verdict_summary
from icml25.freshness import FRESH, STALE, UNKNOWN, freshness

START, END = "<!-- icml25-report:start -->", "<!-- icml25-report:end -->"
FULL = Path("results") / "full" / "results.json"

VERDICTS_EXPLAINED = (
    "Verdicts: ✅ holds (a one-sided test at 5 % says ours beats the baseline by more than the margin), ≈ inconclusive "
    "(the difference is inside the seed-to-seed noise, fewer than 3 seeds, or an exact tie such as 0 vs 0 at a "
    "floor), ❌ fails (the test says the claim is false at our scale), ⊘ untested (a gate it depends on did not "
    "hold: the method or its baseline has not learned the task, so the comparison says nothing about the paper; the "
    "measured verdict is kept beside it). Kinds: `paper` claims are the paper's, measured against a baseline, and "
    "are the only ones that count as reproductions; `gate` claims say that a method has learned the task (its "
    "validation curve plateaued and it beats the trivial controls: chance, the prior, copy-last-frame, zero action, "
    "box centre); `property` claims hold by construction or test the mathematics; `target` claims are engineering "
    "goals (speed, memory, time). Code: *fresh* when the run's `source_hash` matches the package's `src/` now, "
    "*stale* when the code changed after the run, *unknown* when the run predates source hashes."
)

FRESHNESS_MARK = {FRESH: "fresh", STALE: "⚠ stale", UNKNOWN: "unknown"}


@dataclass
class PackageRuns:
    """A package's committed runs: the main full run and its sub-runs (``results/full/<sub>/results.json``)."""

    name: str
    path: Path
    """The package folder (``packages/<name>``)."""
    main: dict[str, Any]
    subs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def runs(self) -> list[tuple[str, dict[str, Any]]]:
        return [("main", self.main)] + list(self.subs.items())

    def claims(self) -> list[dict[str, Any]]:
        """Every claim of every run (the main run's first)."""
        return [c for _, d in self.runs() for c in d["claims"]]

    def freshness(self, data: Mapping[str, Any]) -> str:
        src = self.path / "src"
        return freshness(data.get("source_hash"), self.path) if src.is_dir() else UNKNOWN

    def worst_freshness(self) -> str:
        states = {self.freshness(d) for _, d in self.runs()}
        return STALE if STALE in states else UNKNOWN if UNKNOWN in states else FRESH


def load_package(pkg: str | Path) -> PackageRuns:
    """The committed full run of ``pkg`` (``results/full/results.json``) and every sub-run below it."""
    pkg = Path(pkg)
    main = load_results(pkg / FULL)
    subs = {}
    for f in sorted((pkg / FULL).parent.glob("*/results.json")):
        subs[f.parent.name] = load_results(f)
    return PackageRuns(name=pkg.name, path=pkg, main=main, subs=subs)


class ReportError(ValueError):
    """A README or results file cannot be used for the generated block."""


def load_results(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ReportError(f"{path}: no such results file (run `<pkg> reproduce --out` first)") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not valid JSON ({exc})") from None
    validate_results(data)
    return data


def package_results(packages: Path) -> dict[str, PackageRuns]:
    """``name -> PackageRuns`` for every package with a ``results/full/results.json``, sorted by name."""
    return {d.name: load_package(d) for d in sorted(Path(packages).iterdir()) if (d / FULL).is_file()}


def _seconds(data: Mapping[str, Any]) -> str:
    s = data.get("seconds")
    if s is None:
        return "—"
    return f"{s / 60:.1f} min" if s >= 120 else f"{s:.0f} s"


def _counts_cell(n: Mapping[str, int]) -> str:
    cell = f"{n['holds']} ✅ / {n['inconclusive']} ≈ / {n['fails']} ❌"
    return cell + (f" / {n['untested']} ⊘" if n.get("untested") else "")


def _freshness_line(state: str, data: Mapping[str, Any]) -> str:
    h = (data.get("source_hash") or "")[:12]
    if state == FRESH:
        return f"Code: fresh (source hash `{h}` matches `src/`)."
    if state == STALE:
        return (f"Code: **⚠ stale**: `src/` changed after this run (run's source hash `{h}`); its numbers come from "
                "older code: re-run the command above.")
    return "Code: unknown (this run predates source hashes)."


def package_block(data: Mapping[str, Any] | PackageRuns) -> str:
    """The generated README block of one package: verdict counts, the run's size and freshness, the claims table,
    and, where the package has sub-runs, a table of each with its counts (and every claim counted in the total)."""
    runs = data if isinstance(data, PackageRuns) else None
    main = runs.main if runs is not None else data
    claims = main["claims"]
    seeds = main.get("seeds") or []
    lines = [
        f"Generated by `icml25 report` from [`results/full/results.json`](results/full/results.json) "
        f"({'quick' if main.get('quick') else 'full'} run, {len(seeds)} seed(s) {seeds}, {_seconds(main)}).",
    ]
    if runs is not None:
        lines.append(_freshness_line(runs.freshness(main), main))
    lines += ["", f"**{verdict_summary(claims)}.**", "", claims_table(claims)]
    if runs is not None and runs.subs:
        lines += ["", "Sub-runs (each committed under `results/full/<sub>/`, its claims in its own `results.md`):",
                  "", "| sub-run | paper claims | gates | properties | targets | seeds | time | code |",
                  "|---|---|---|---|---|---|---|---|"]
        for sub, d in runs.subs.items():
            cells = [f"[{sub}](results/full/{sub}/results.md)"]
            cells += [_counts_cell(count_verdicts(d["claims"], kind=k)) for k in ("paper", "gate", "property", "target")]
            cells += [str(len(d.get("seeds") or [])), _seconds(d), FRESHNESS_MARK[runs.freshness(d)]]
            lines.append("| " + " | ".join(cells) + " |")
        lines += ["", f"**All runs together — {verdict_summary(runs.claims())}.**"]
    lines += ["", VERDICTS_EXPLAINED]
    return "\n".join(lines)


def _code_cell(runs: PackageRuns) -> str:
    """The main run's freshness, and how many sub-runs are not fresh (``fresh; 2 of 5 sub-runs stale``)."""
    cell = FRESHNESS_MARK[runs.freshness(runs.main)]
    subs = [runs.freshness(d) for d in runs.subs.values()]
    for state in (STALE, UNKNOWN):
        k = subs.count(state)
        if k:
            cell += f"; {k} of {len(subs)} sub-runs {FRESHNESS_MARK[state].replace('⚠ ', '')}"
    return cell


def summary_block(found: Mapping[str, PackageRuns]) -> str:
    """The root README block: per package the counts by kind and verdict over all its runs (main and sub-runs),
    how many runs, the main run's seeds and time, and whether the main run's code is fresh (and how many sub-runs
    are not); the total of paper claims."""
    rows = []
    total = {v: 0 for v in MARKS}
    for name, runs in found.items():
        claims = runs.claims()
        cells = [f"[{name}](packages/{name})"]
        for kind in ("paper", "gate", "property", "target"):
            n = count_verdicts(claims, kind=kind)
            if kind == "paper":
                for k in total:
                    total[k] += n[k]
            cells.append(_counts_cell(n))
        cells += [str(len(runs.runs())), str(len(runs.main.get("seeds") or [])), _seconds(runs.main),
                  _code_cell(runs)]
        rows.append("| " + " | ".join(cells) + " |")
    head = ["| package | paper claims | gates | properties | targets | runs | seeds | full run | code |",
            "|---|---|---|---|---|---|---|---|---|"]
    lines = [
        f"**All packages, all runs — paper claims: {total['holds']} hold, {total['inconclusive']} inconclusive, "
        f"{total['fails']} fail, {total['untested']} untested.**",
        "",
        *head, *rows,
        "",
        VERDICTS_EXPLAINED,
    ]
    return "\n".join(lines)


def replace_block(text: str, block: str, *, where: str = "README") -> str:
    if START not in text or END not in text:
        raise ReportError(f"{where} has no {START} … {END} markers")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return head + START + "\n" + block + "\n" + END + tail


def current_block(text: str, *, where: str = "README") -> str:
    if START not in text or END not in text:
        raise ReportError(f"{where} has no {START} … {END} markers")
    return text.split(START, 1)[1].split(END, 1)[0].strip("\n")


VALUE_RE = re.compile(r"<!-- value (?P<spec>.*?) -->(?P<text>.*?)<!-- /value -->", re.S)
"""An inline value in README prose: its spec (``key=value`` pairs, shell-quoted) and the rendered text."""
VALUE_KEYS = ("run", "claim", "field", "fmt")


def _parse_spec(spec: str, where: str) -> dict[str, str]:
    try:
        parts = shlex.split(spec)
    except ValueError as exc:
        raise ReportError(f"{where}: inline value <!-- value {spec} -->: {exc}") from None
    out: dict[str, str] = {}
    for part in parts:
        key, eq, val = part.partition("=")
        if not eq or key not in VALUE_KEYS:
            raise ReportError(f"{where}: inline value <!-- value {spec} -->: {part!r} is not one of "
                              f"{', '.join(k + '=...' for k in VALUE_KEYS)}")
        out[key] = val
    if "field" not in out:
        raise ReportError(f"{where}: inline value <!-- value {spec} --> needs field=... (e.g. ours, baseline, "
                          f"p_value, verdict, seconds)")
    return out


def _lookup(obj: Any, path: str, what: str) -> Any:
    for part in path.split("."):
        if isinstance(obj, Mapping) and part in obj:
            obj = obj[part]
        elif isinstance(obj, list) and part.lstrip("-").isdigit() and -len(obj) <= int(part) < len(obj):
            obj = obj[int(part)]
        else:
            keys = sorted(obj) if isinstance(obj, Mapping) else f"indices 0..{len(obj) - 1}" \
                if isinstance(obj, list) else "nothing (a scalar)"
            raise ReportError(f"{what}: no {part!r} in field path {path!r} (has {keys})")
    return obj


def value_of(runs: PackageRuns, spec: str, *, where: str = "README") -> str:
    """The text an inline value with ``spec`` renders to from ``runs``.

    ``run`` is ``main`` (default) or a sub-run's folder name; ``claim`` a claim's whole text, or a prefix of exactly
    one claim's text of that run (omit it for a run-level field like ``seconds``); ``field`` a dotted path into the
    claim (``ours``, ``baseline``, ``p_value``, ``ci.0``, ``controls.chance.mean``) or the run; ``fmt`` a format
    spec (``.3f``, ``.2g``, ``.0f``), ``mark`` for a verdict's symbol, or omitted for :func:`icml25.claims.fmt`.
    """
    from icml25.claims import MARKS

    kv = _parse_spec(spec, where)
    what = f"{where}: <!-- value {spec} -->"
    run = kv.get("run", "main")
    data = dict(runs.runs()).get(run)
    if data is None:
        raise ReportError(f"{what}: no run {run!r} (runs: {[r for r, _ in runs.runs()]})")
    obj: Any = data
    if "claim" in kv:
        hits = [c for c in data["claims"] if c["claim"] == kv["claim"]] or \
            [c for c in data["claims"] if c["claim"].startswith(kv["claim"])]  # exact text wins over prefixes
        if len(hits) != 1:
            raise ReportError(f"{what}: claim={kv['claim']!r} is the start of {len(hits)} claims of run {run!r}, "
                              f"needs exactly 1")
        obj = hits[0]
    val = _lookup(obj, kv["field"], what)
    f = kv.get("fmt")
    if f == "mark":
        if val not in MARKS:
            raise ReportError(f"{what}: fmt=mark needs a verdict, got {val!r}")
        return MARKS[val]
    if f is None or val is None or isinstance(val, (str, bool)):
        return fmt(val) if not isinstance(val, str) else val
    try:
        return format(val, f)
    except (TypeError, ValueError) as exc:
        raise ReportError(f"{what}: fmt={f!r} cannot format {val!r} ({exc})") from None


def render_values(text: str, runs: PackageRuns, *, where: str = "README") -> str:
    """``text`` with every inline value's text re-rendered from ``runs`` (see :func:`value_of`)."""
    return VALUE_RE.sub(lambda m: f"<!-- value {m['spec']} -->{value_of(runs, m['spec'], where=where)}"
                                  f"<!-- /value -->", text)


def stale_values(text: str, runs: PackageRuns, *, where: str = "README") -> list[str]:
    """The inline values whose text differs from the committed results: ``"spec: 'typed' != 'rendered'"``."""
    out = []
    for m in VALUE_RE.finditer(text):
        want = value_of(runs, m["spec"], where=where)
        if m["text"] != want:
            out.append(f"{m['spec']}: {m['text']!r} != {want!r}")
    return out


def flat_claims(found: Mapping[str, PackageRuns]) -> list[dict[str, Any]]:
    return [{"method": name, **c} for name, runs in found.items() for c in runs.claims()]


__all__ = ["START", "END", "FULL", "ReportError", "PackageRuns", "load_package", "load_results", "package_results",
           "package_block", "summary_block", "replace_block", "current_block", "flat_claims", "fmt", "KINDS",
           "VALUE_RE", "value_of", "render_values", "stale_values"]
