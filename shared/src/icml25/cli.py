"""The umbrella CLI: ``icml25 list | reproduce | report | new``.

``list`` reads entry-point metadata only (no torch import). ``reproduce`` runs each method in its own subprocess
(isolating memory, threads and crashes), validates each ``results.json``, and writes one summary; a failing method
is reported and the others go on.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def _cmd_list(args: argparse.Namespace) -> int:
    from icml25.registry import discover

    methods = discover()
    if args.json:
        print(json.dumps([m.__dict__ for m in methods], indent=2))
        return 0
    if not methods:
        print("no icml25 methods installed")
        return 0
    width = max(len(m.name) for m in methods)
    for m in methods:
        print(f"{m.name:<{width}}  {m.version:<8}  {m.title}")
    return 0


def _run_one(args: argparse.Namespace) -> int:
    """Internal: run one method's reproduce in this process (used by ``reproduce`` through a subprocess)."""
    from icml25.cli_helpers import run_reproduce
    from icml25.registry import load

    method = load(args.name)
    run_reproduce(method, quick=args.quick, smoke=args.smoke, out=Path(args.out), seed=args.seed,
                  overwrite=args.overwrite, quiet=True)
    return 0


def _summary_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for name, res in results.items():
        if res["status"] != "ok":
            rows.append({"method": name, "claim": f"FAILED: {res['error']}", "metric": "", "ours": None,
                         "baseline": None, "baseline_name": "", "holds": False, "verdict": "fails",
                         "kind": "target", "paper": ""})
            continue
        for c in res["claims"]:
            rows.append({"method": name, **c})
    return rows


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from icml25.claims import ResultsError, claims_table, validate_results, verdict_summary
    from icml25.io import atomic_write_json, atomic_write_text
    from icml25.registry import names
    from icml25.rundir import RunDir, RunDirError

    known = names()
    selected = args.names or known
    unknown = [n for n in selected if n not in known]
    if unknown:
        print(f"icml25: error: unknown method(s) {unknown}; installed methods: {', '.join(known) or '(none)'}",
              file=sys.stderr)
        return 2
    if not selected:
        print("icml25: no methods installed; nothing to reproduce", file=sys.stderr)
        return 0
    root = Path(args.out) if args.out else Path("runs") / "icml25" / _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    try:
        rd = RunDir(root, overwrite=args.overwrite)
    except RunDirError as exc:
        print(f"icml25: error: {exc}", file=sys.stderr)
        return 2
    results: dict[str, Any] = {}
    bar = tqdm(selected, desc="reproduce", unit="method", disable=args.quiet or None)
    for name in bar:
        bar.set_postfix_str(name)
        out = rd.path / name
        cmd = [sys.executable, "-m", "icml25", "_run-one", name, "--out", str(out), "--seed", str(args.seed)]
        cmd += ["--quick"] if args.quick else []
        cmd += ["--smoke"] if args.smoke else []
        t0 = time.perf_counter()
        log = rd.path / f"{name}.log"
        with open(log, "w") as fh:
            try:
                proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, timeout=args.timeout)
                rc = proc.returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
        secs = round(time.perf_counter() - t0, 1)
        entry: dict[str, Any] = {"seconds": secs, "log": str(log)}
        if rc != 0:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] or [""]
            entry.update(status="failed", error=f"exit {rc}: {tail[0][:200]}")
        else:
            try:
                data = json.loads((out / "results.json").read_text())
                validate_results(data)
                entry.update(status="ok", claims=data["claims"], run_dir=str(out))
            except (OSError, json.JSONDecodeError, ResultsError) as exc:
                entry.update(status="failed", error=f"malformed results.json: {exc}")
        results[name] = entry
        if not args.quiet:
            tqdm.write(f"{name}: {entry['status']} in {secs}s" + (f" ({entry['error']})" if entry["status"] != "ok" else ""))
    rows = _summary_rows(results)
    ok_rows = [r for r in rows if r.get("ours") is not None]
    md = ("# icml25 reproduce" + (" --quick" if args.quick else "") + "\n\n" + verdict_summary(ok_rows) + ".\n\n"
          + claims_table(rows, method_column="method") + "\n")
    atomic_write_text(rd.path / "summary.md", md)
    atomic_write_json(rd.path / "summary.json", {"quick": args.quick, "smoke": args.smoke, "seed": args.seed, "methods": results})
    if not args.quiet:
        print(md)
        print(f"summary written to {rd.path / 'summary.md'}")
    failed = [n for n, r in results.items() if r["status"] != "ok"]
    return 1 if failed else 0


def latest_results(runs: Path) -> dict[str, tuple[Path, dict[str, Any]]]:
    """The newest valid results.json for each method under ``runs`` (any depth)."""
    from icml25.claims import ResultsError, validate_results

    best: dict[str, tuple[float, Path, dict[str, Any]]] = {}
    if not runs.exists():
        return {}
    for path in runs.rglob("results.json"):
        try:
            data = json.loads(path.read_text())
            validate_results(data)
        except (OSError, json.JSONDecodeError, ResultsError):
            continue
        if data.get("smoke"):
            continue
        name, mtime = data["method"], path.stat().st_mtime
        if name not in best or mtime > best[name][0]:
            best[name] = (mtime, path, data)
    return {k: (v[1], v[2]) for k, v in sorted(best.items())}


def _cmd_report(args: argparse.Namespace) -> int:
    from icml25.claims import claims_table, verdict_summary
    from icml25.io import atomic_write_text
    from icml25.report import (
        current_block,
        load_package,
        package_block,
        package_results,
        render_values,
        replace_block,
        stale_values,
        summary_block,
    )

    runs = None
    if args.package:
        pkg = Path(args.package)
        runs = load_package(pkg)
        block = package_block(runs)
    elif args.packages:
        found = package_results(Path(args.packages))
        block = summary_block(found) if found else "_no committed full runs yet_"
    else:
        found = latest_results(Path(args.runs))
        rows = [{**c, "method": name + (" (quick)" if data.get("quick") else "")}
                for name, (_, data) in found.items() for c in data["claims"]]
        block = (verdict_summary(rows) + ".\n\n" + claims_table(rows, method_column="method")) if rows else \
            "_no results yet: run `icml25 reproduce`_"
    if args.update_readme:
        readme = Path(args.update_readme)
        text = readme.read_text()
        if args.check:
            if current_block(text, where=str(readme)) != block.strip("\n"):
                print(f"icml25: {readme}: the generated block is out of date with the committed results; run "
                      f"`icml25 report` with --update-readme", file=sys.stderr)
                return 1
            stale = stale_values(text, runs, where=str(readme)) if runs is not None else []
            if stale:
                print(f"icml25: {readme}: {len(stale)} inline value(s) differ from the committed results "
                      f"({'; '.join(stale[:3])}); run `icml25 report` with --update-readme", file=sys.stderr)
                return 1
            return 0
        text = replace_block(text, block, where=str(readme))
        if runs is not None:
            text = render_values(text, runs, where=str(readme))
        atomic_write_text(readme, text)
    if args.output:
        atomic_write_text(args.output, block + "\n")
    if not args.update_readme:
        print(block)
    return 0


def _cmd_new(args: argparse.Namespace) -> int:
    from icml25.scaffold import create_package

    path = create_package(args.name, root=Path(args.root), title=args.title, url=args.url)
    print(f"created {path}")
    # The new member is not in uv.lock yet: `uv run NAME` cannot find it (and `--locked` CI fails) until it is.
    print(f"next: uv lock && uv sync --all-packages   (adds {args.name} to uv.lock and the venv; "
          f"then `uv run {args.name} --help` and `uv run pytest {path}`)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="icml25", description="ICML 2025 papers as software: list, reproduce, report.")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("list", help="installed methods and their papers (no imports)")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=_cmd_list)

    s = sub.add_parser("reproduce", help="run each method's reproduction and summarise every claim")
    s.add_argument("names", nargs="*", help="methods to run (default: all installed)")
    s.add_argument("--quick", action="store_true", help="about a minute per method on 2 CPU cores")
    s.add_argument("--smoke", action="store_true", help="tiny sizes: checks that everything runs")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", help="root folder (default runs/icml25/<timestamp>)")
    s.add_argument("--overwrite", action="store_true", help="allow an existing, non-empty --out")
    s.add_argument("--timeout", type=float, default=None, help="seconds per method before it counts as failed")
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(func=_cmd_reproduce)

    s = sub.add_parser("_run-one", help=argparse.SUPPRESS)
    s.add_argument("name")
    s.add_argument("--out", required=True)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--quick", action="store_true")
    s.add_argument("--smoke", action="store_true")
    s.add_argument("--overwrite", action="store_true")
    s.set_defaults(func=_run_one)

    s = sub.add_parser("report", help="README blocks generated from committed full runs (or the latest runs)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--package", metavar="DIR", help="one package: its results/full/results.json")
    g.add_argument("--packages", metavar="DIR", help="the summary of every DIR/<name>/results/full/results.json")
    g.add_argument("--runs", default="runs", help="otherwise: the newest results.json of each method under this folder")
    s.add_argument("--check", action="store_true", help="with --update-readme: exit 1 if the block is out of date")
    s.add_argument("--output", help="also write the table to this file")
    s.add_argument("--update-readme", metavar="README", help="replace the table between the report markers")
    s.set_defaults(func=_cmd_report)

    s = sub.add_parser("new", help="scaffold packages/NAME for a new method")
    s.add_argument("name", help="distribution name, lowercase with dashes (e.g. string-pe)")
    s.add_argument("--title", default="TODO: paper title", help="the paper's title")
    s.add_argument("--url", default="https://icml.cc/virtual/2025", help="the paper's URL")
    s.add_argument("--root", default="packages", help="folder that holds the packages")
    s.set_defaults(func=_cmd_new)
    return p


def main(argv: list[str] | None = None) -> int:
    from icml25.device import thread_policy

    try:
        thread_policy()
    except ValueError as exc:  # a bad ICML25_THREADS: one line, exit 2, even for --help
        print(f"icml25: error: {exc}", file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError) as exc:
        print(f"icml25: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("icml25: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
