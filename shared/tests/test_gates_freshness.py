"""Competence before comparison: plateau detection, gate claims, untested propagation, floor ties, source hashes,
sub-run counting and stale marking in the generated README blocks."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
from icml25.claims import Claim, Report, ResultsError, count_verdicts, validate_results, verdict_summary
from icml25.freshness import FRESH, STALE, UNKNOWN, freshness, module_source_hash, source_hash
from icml25.report import load_package, package_block, package_results, summary_block
from icml25.train import Curve, plateau_check, train_until_plateau


# ------------------------------------------------------------------------------------------------ plateau helper
def _train(curve_fn, *, max_steps, patience=3, min_delta=1e-3, eval_every=10, higher_is_better=True):
    state = {"t": 0}

    def step(i):
        state["t"] = i + 1

    return train_until_plateau(step, lambda: curve_fn(state["t"]), max_steps=max_steps, eval_every=eval_every,
                               patience=patience, min_delta=min_delta, higher_is_better=higher_is_better)


def test_plateaued_curve_stops_on_patience_and_passes():
    c = _train(lambda t: 1.0 - math.exp(-t / 20.0), max_steps=10_000)
    assert c.stopped_by == "plateau" and c.steps[-1] < 10_000
    assert len(c.values) == len(c.steps) and c.values == sorted(c.values)
    assert plateau_check([c]).plateaued


def test_rising_curve_cut_by_the_budget_fails_the_plateau_check():
    """Negative control: a curve that is still rising steeply when the budget ends has not plateaued."""
    curves = [_train(lambda t, s=s: 0.01 * t + 0.001 * s, max_steps=100) for s in range(3)]
    assert all(c.stopped_by == "budget" for c in curves)
    pc = plateau_check(curves)
    assert not pc.plateaued and pc.improving == [0, 1, 2]
    assert "still improving" in pc.describe()


def test_budget_stop_on_a_flat_tail_counts_as_plateaued():
    """A curve the budget cut but whose last-window gain is inside the seed noise has plateaued."""
    flat = [Curve(steps=[10, 20, 30, 40, 50], values=[v + 0.01 * s for v in (0.5, 0.7, 0.8, 0.801, 0.802)],
                  patience=2, min_delta=1e-3, stopped_by="budget") for s in range(4)]
    pc = plateau_check(flat)  # seed noise (sd of the bests) ~ 0.013 > gains of ~0.002
    assert pc.plateaued, pc
    assert not plateau_check(flat, noise=0.0).plateaued  # without the noise allowance the tail gain counts


def test_a_curve_that_reaches_its_ceiling_inside_the_window_has_plateaued():
    """An accuracy that reaches 1.0 in the last window cannot improve further: with ``ceiling=1`` it counts as
    plateaued (at the ceiling). Negative controls: the same curve without a ceiling, and a curve that stops short of
    the ceiling by more than the threshold, are still improving."""
    late = [0.2, 0.4, 0.6, 0.7, 0.98, 1.0]
    steps = [10, 20, 30, 40, 50, 60]
    at = [Curve(steps=steps, values=late, min_delta=0.02, ceiling=1.0) for _ in range(3)]
    pc = plateau_check(at)
    assert pc.plateaued and pc.at_ceiling == [0, 1, 2] and pc.improving == []
    assert "ceiling" in pc.describe() and pc.to_dict()["at_ceiling"] == [0, 1, 2]
    assert not plateau_check([Curve(steps=steps, values=late, min_delta=0.02) for _ in range(3)]).plateaued
    short = [Curve(steps=steps, values=[0.2, 0.4, 0.6, 0.7, 0.85, 0.9], min_delta=0.02, ceiling=1.0)
             for _ in range(3)]
    pc = plateau_check(short)
    assert not pc.plateaued and pc.improving == [0, 1, 2] and pc.at_ceiling == []
    # lower is better: a loss that reaches its floor 0 late is at its ceiling too
    loss = [Curve(steps=steps, values=[1.0, 0.8, 0.5, 0.3, 0.05, 0.0], higher_is_better=False, min_delta=0.02,
                  ceiling=0.0) for _ in range(2)]
    assert plateau_check(loss).plateaued
    assert Curve.from_dict(at[0].to_dict()).ceiling == 1.0
    with pytest.raises(ValueError, match="ceiling"):
        Curve(steps=[1], values=[0.5], ceiling=float("nan"))


def test_lower_is_better_curve_and_best_value():
    c = _train(lambda t: 1.0 / (1 + t), max_steps=50, higher_is_better=False)
    assert c.stopped_by == "budget" and c.best == min(c.values) and c.best_step == c.steps[-1]
    assert c.tail_gain() > 0  # improving (falling) at the end
    assert not plateau_check([c]).plateaued


def test_on_improve_sees_each_new_best_and_curve_round_trips():
    seen = []
    vals = iter([0.1, 0.3, 0.2, 0.3, 0.25, 0.2])
    c = train_until_plateau(lambda i: None, lambda: next(vals), max_steps=6, eval_every=1, patience=3,
                            on_improve=lambda s, v: seen.append((s, v)))
    assert seen == [(1, 0.1), (2, 0.3)] and c.stopped_by == "plateau" and c.steps == [1, 2, 3, 4, 5]
    assert Curve.from_dict(json.loads(json.dumps(c.to_dict()))) == c


def test_train_until_plateau_rejects_bad_arguments():
    with pytest.raises(ValueError, match="max_steps"):
        train_until_plateau(lambda i: None, lambda: 0.0, max_steps=0, eval_every=1)
    with pytest.raises(ValueError, match="eval_every"):
        train_until_plateau(lambda i: None, lambda: 0.0, max_steps=1, eval_every=0)
    with pytest.raises(FloatingPointError, match="validation metric"):
        train_until_plateau(lambda i: None, lambda: math.nan, max_steps=2, eval_every=1)


# ------------------------------------------------------------------------------------------------ gate claims
def _flat_curves(n=5):
    return [Curve(steps=[1, 2, 3, 4], values=[0.5, 0.8, 0.8, 0.8], patience=2, stopped_by="plateau")
            for _ in range(n)]


def _rising_curves(n=5):
    return [Curve(steps=[1, 2, 3, 4], values=[0.2, 0.4, 0.6, 0.8 + 0.01 * i], patience=2, stopped_by="budget")
            for i in range(n)]


ACC = [0.80, 0.82, 0.81, 0.83, 0.79]


def test_gate_holds_when_plateaued_and_beating_every_control():
    g = Claim.gate(claim="method learned", metric="acc", ours=ACC, curves=_flat_curves(),
                   controls={"chance": 0.25, "majority": [0.4, 0.41, 0.39, 0.4, 0.42]})
    assert g.kind == "gate" and g.verdict == "holds" and g.holds
    assert set(g.controls) == {"chance", "majority"}
    assert g.baseline_name == "control: majority"  # the hardest control is shown
    assert g.plateau["plateaued"]


def test_gate_fails_when_the_budget_cut_a_rising_curve():
    g = Claim.gate(claim="g", metric="acc", ours=ACC, curves=_rising_curves(), controls={"chance": 0.25})
    assert g.verdict == "fails" and "still improving" in g.note


def test_gate_fails_or_is_inconclusive_against_a_control_it_does_not_beat():
    g = Claim.gate(claim="g", metric="acc", ours=ACC, controls={"chance": 0.25, "copy": [0.9] * 5})
    assert g.verdict == "fails" and g.baseline_name == "control: copy"
    g = Claim.gate(claim="g", metric="acc", ours=ACC, controls={"copy": [0.78, 0.84, 0.80, 0.82, 0.81]})
    assert g.verdict == "inconclusive"
    with pytest.raises(ValueError, match="control"):
        Claim.gate(claim="g", metric="acc", ours=ACC, controls={})


def _report(gate_ok: bool) -> Report:
    r = Report(method="demo", seeds=[0, 1, 2, 3, 4])
    r.add(Claim.gate(claim="ours learned", metric="acc", ours=ACC, curves=_flat_curves(),
                     controls={"chance": 0.25}))
    r.add(Claim.gate(claim="baseline learned", metric="acc", ours=[0.6, 0.61, 0.62, 0.6, 0.59],
                     curves=_flat_curves() if gate_ok else _rising_curves(), controls={"chance": 0.25}))
    r.add(Claim.compare(claim="ours beats baseline", metric="acc", ours=ACC, baseline=[0.6, 0.61, 0.62, 0.6, 0.59],
                        baseline_name="baseline", paper="Table 1", gates=["ours learned", "baseline learned"]))
    r.add(Claim.compare(claim="ungated", metric="acc", ours=ACC, baseline=[0.6] * 5, baseline_name="b", paper="p"))
    return r


def test_untested_propagates_from_a_failed_gate_and_keeps_the_measured_verdict():
    d = _report(gate_ok=False).to_dict()
    validate_results(d)
    c = {x["claim"]: x for x in d["claims"]}
    assert c["ours beats baseline"]["verdict"] == "untested" and not c["ours beats baseline"]["holds"]
    assert c["ours beats baseline"]["measured_verdict"] == "holds"
    assert "'baseline learned' (fails)" in c["ours beats baseline"]["note"]
    assert c["ungated"]["verdict"] == "holds"  # a claim without gates is untouched
    assert count_verdicts(d["claims"]) == {"holds": 1, "inconclusive": 0, "fails": 0, "untested": 1}
    assert verdict_summary(d["claims"]).startswith("paper claims: 1 hold, 0 inconclusive, 0 fail, 1 untested")
    assert "gate claims: 1 hold, 0 inconclusive, 1 fail" in verdict_summary(d["claims"])
    assert "⊘ untested" in _report(gate_ok=False).to_markdown()
    # round trip: reading the results back and writing them again keeps the same verdicts
    again = Report.from_dict(d).to_dict()
    assert again["claims"] == d["claims"]


def test_gates_that_hold_leave_the_measured_verdict():
    """Negative control of the propagation: with both gates holding, the paper claim keeps its test's verdict."""
    d = _report(gate_ok=True).to_dict()
    c = {x["claim"]: x for x in d["claims"]}
    assert c["ours beats baseline"]["verdict"] == "holds" and c["ours beats baseline"]["holds"]


def test_gate_names_are_checked():
    r = _report(gate_ok=True)
    r.claims[2].gates = ["no such gate"]
    with pytest.raises(ResultsError, match="no such gate"):
        r.to_dict()
    d = _report(gate_ok=False).to_dict()
    d["claims"][2].update(verdict="holds", holds=True)  # an edited file that ignores its failed gate
    with pytest.raises(ResultsError, match="must be 'untested'"):
        validate_results(d)
    with pytest.raises(ValueError, match="measured_verdict"):
        Claim(claim="x", metric="m", ours=1.0, baseline=0.0, baseline_name="b", holds=False, paper="p",
              verdict="untested")


def test_floor_ties_are_inconclusive_in_claims():
    c = Claim.compare(claim="tie at 0", metric="success", ours=[0.0] * 5, baseline=[0.0] * 5, baseline_name="b",
                      paper="p", paired=True)
    assert c.verdict == "inconclusive"
    c = Claim.compare(claim="tie at 1", metric="acc", ours=[1.0] * 5, baseline=[1.0] * 5, baseline_name="b",
                      paper="p")
    assert c.verdict == "inconclusive"
    c = Claim.compare(claim="below", metric="acc", ours=[0.0] * 5, baseline=[1.0] * 5, baseline_name="b", paper="p")
    assert c.verdict == "fails"  # control: an exact, unequal comparison still decides


# ------------------------------------------------------------------------------------------------ source hash
def _tree(root: Path) -> Path:
    src = root / "src"
    (src / "demo" / "sub").mkdir(parents=True)
    (src / "demo" / "__init__.py").write_text("x = 1\n")
    (src / "demo" / "sub" / "b.py").write_text("y = 2\n")
    (src / "demo" / "data.json").write_text("{}")  # not a .py file: not hashed
    return src


def test_source_hash_matches_the_definition(tmp_path):
    src = _tree(tmp_path)
    h = hashlib.sha256()
    for rel, content in (("demo/__init__.py", b"x = 1\n"), ("demo/sub/b.py", b"y = 2\n")):
        h.update(rel.encode() + b"\0" + content + b"\0")
    assert source_hash(src) == h.hexdigest()
    (src / "demo" / "data.json").write_text('{"changed": 1}')
    assert source_hash(src) == h.hexdigest()


def test_source_hash_changes_with_one_byte_and_with_a_rename(tmp_path):
    src = _tree(tmp_path)
    before = source_hash(src)
    (src / "demo" / "sub" / "b.py").write_text("y = 3\n")
    assert source_hash(src) != before
    (src / "demo" / "sub" / "b.py").write_text("y = 2\n")
    assert source_hash(src) == before
    (src / "demo" / "sub" / "b.py").rename(src / "demo" / "sub" / "c.py")
    assert source_hash(src) != before


def test_installed_module_hash_equals_the_checkout_hash():
    import icml25

    src = Path(icml25.__file__).parent.parent
    assert module_source_hash("icml25") == source_hash(src)
    assert module_source_hash("no_such_module_xyz") is None


# ------------------------------------------------------------------------------------------------ report
def _write(path: Path, report: Report) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "results.json").write_text(json.dumps(report.to_dict()))


def _package(tmp_path: Path, *, with_sub: bool = True) -> Path:
    pkg = tmp_path / "packages" / "demo"
    src = _tree(pkg)
    main = _report(gate_ok=True)
    main.source_hash = source_hash(src)
    _write(pkg / "results" / "full", main)
    if with_sub:
        sub = _report(gate_ok=False)
        sub.source_hash = source_hash(src)
        _write(pkg / "results" / "full" / "long", sub)
    return pkg


def test_report_counts_sub_runs(tmp_path):
    pkg = _package(tmp_path)
    runs = load_package(pkg)
    assert list(runs.subs) == ["long"] and len(runs.claims()) == 8
    block = package_block(runs)
    assert "[long](results/full/long/results.md)" in block
    assert "All runs together — paper claims: 3 hold, 0 inconclusive, 0 fail, 1 untested" in block
    summary = summary_block(package_results(tmp_path / "packages"))
    assert "paper claims: 3 hold, 0 inconclusive, 0 fail, 1 untested" in summary
    assert "| [demo](packages/demo) | 3 ✅ / 0 ≈ / 0 ❌ / 1 ⊘ | 3 ✅ / 0 ≈ / 1 ❌ |" in summary
    # control: without the sub-run, only the main run's claims are counted
    pkg2 = _package(tmp_path / "other", with_sub=False)
    assert "2 hold, 0 inconclusive, 0 fail, 0 untested" in summary_block(package_results(pkg2.parent))


def test_a_stale_run_is_marked(tmp_path):
    pkg = _package(tmp_path)
    runs = load_package(pkg)
    assert runs.freshness(runs.main) == FRESH and "Code: fresh" in package_block(runs)
    assert "| fresh |" in summary_block(package_results(tmp_path / "packages"))
    (pkg / "src" / "demo" / "__init__.py").write_text("x = 2\n")  # the code changed after the run
    runs = load_package(pkg)
    assert runs.freshness(runs.main) == STALE and runs.worst_freshness() == STALE
    assert "⚠ stale" in package_block(runs)
    assert "| ⚠ stale; 1 of 1 sub-runs stale |" in summary_block(package_results(tmp_path / "packages"))
    assert freshness(None, pkg) == UNKNOWN


def test_results_writer_records_the_source_hash(tmp_path):
    from icml25.rundir import RunDir

    r = Report(method="icml25", seeds=[0])
    r.add(Claim.compare(claim="c", metric="m", ours=1.0, baseline=0.0, baseline_name="b", paper="p",
                        deterministic=True))
    with RunDir(tmp_path / "run") as rd:
        rd.write_results(r)
    data = json.loads((tmp_path / "run" / "results.json").read_text())
    assert data["source_hash"] == module_source_hash("icml25")
    validate_results(data)
    data["source_hash"] = "abc"
    with pytest.raises(ResultsError, match="source_hash"):
        validate_results(data)
