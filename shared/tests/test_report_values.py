"""Inline values in README prose (``<!-- value ... -->x<!-- /value -->``): rendered from the committed results,
checked by ``icml25 report --check``, refreshed by ``--update-readme``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from icml25.claims import Claim, Report
from icml25.report import (
    ReportError,
    load_package,
    package_block,
    render_values,
    replace_block,
    stale_values,
    value_of,
)


def _pkg(tmp_path, ours=(0.91, 0.9, 0.92)):
    r = Report(method="demo", seeds=[0, 1, 2])
    r.add(Claim.compare(claim="Ours beats the baseline on task A", metric="acc", ours=list(ours),
                        baseline=[0.5, 0.51, 0.52], baseline_name="b", paper="p"))
    r.add(Claim.compare(claim="Ours beats the baseline on task B", metric="acc", ours=[0.5, 0.6, 0.4],
                        baseline=[0.5, 0.51, 0.52], baseline_name="b", paper="p"))
    data = r.to_dict()
    data["seconds"] = 123.4
    full = tmp_path / "results" / "full"
    (full / "sub").mkdir(parents=True, exist_ok=True)
    (full / "results.json").write_text(json.dumps(data))
    sub = dict(data, seconds=7.0)
    (full / "sub" / "results.json").write_text(json.dumps(sub))
    return load_package(tmp_path)


def test_values_render_from_the_named_claim_and_run(tmp_path):
    runs = _pkg(tmp_path)
    assert value_of(runs, 'claim="Ours beats the baseline on task A" field=ours fmt=.3f') == "0.910"
    assert value_of(runs, 'claim="Ours beats the baseline on task A" field=baseline fmt=.2f') == "0.51"
    assert value_of(runs, 'claim="Ours beats the baseline on task A" field=verdict fmt=mark') == "✅"
    assert value_of(runs, 'claim="Ours beats the baseline on task B" field=verdict') == "inconclusive"
    assert value_of(runs, "field=seconds fmt=.0f") == "123"
    assert value_of(runs, "run=sub field=seconds fmt=.0f") == "7"
    assert value_of(runs, 'claim="Ours beats the baseline on task A" field=ours_values.2') == "0.92"


@pytest.mark.parametrize("spec, msg", [
    ('claim="Ours beats" field=ours', "start of 2 claims"),  # ambiguous prefix
    ('claim="Nobody" field=ours', "start of 0 claims"),
    ('claim="Ours beats the baseline on task A" field=nope', "no 'nope'"),
    ("run=missing field=seconds", "no run 'missing'"),
    ("field=seconds colour=red", "'colour=red' is not one of"),
    ('claim="Ours beats the baseline on task A"', "needs field="),
    ('claim="Ours beats the baseline on task A" field=ours fmt=mark', "fmt=mark needs a verdict"),
])
def test_bad_specs_name_what_is_wrong(tmp_path, spec, msg):
    with pytest.raises(ReportError, match=msg):
        value_of(_pkg(tmp_path), spec)


def test_a_typed_or_outdated_number_is_caught_and_refreshed(tmp_path):
    runs = _pkg(tmp_path)
    spec = 'claim="Ours beats the baseline on task A" field=ours fmt=.3f'
    good = f"We measured <!-- value {spec} -->0.910<!-- /value --> in <!-- value field=seconds fmt=.0f -->123<!-- /value --> s."
    assert stale_values(good, runs) == [] and render_values(good, runs) == good
    typed = good.replace("0.910", "0.950")  # negative control: a number edited by hand
    assert stale_values(typed, runs) == [f"{spec}: '0.950' != '0.910'"]
    assert render_values(typed, runs) == good
    # a new run with other numbers makes the old prose stale
    runs2 = _pkg(tmp_path, ours=(0.81, 0.8, 0.82))
    assert len(stale_values(good, runs2)) == 1 and "0.810" in render_values(good, runs2)


def test_cli_check_and_update_cover_inline_values(tmp_path):
    runs = _pkg(tmp_path)
    spec = 'claim="Ours beats the baseline on task A" field=ours fmt=.3f'
    readme = replace_block("# demo\n<!-- icml25-report:start -->\n<!-- icml25-report:end -->\n", package_block(runs))
    readme += f"\nOurs: <!-- value {spec} -->0.999<!-- /value -->.\n"
    path = tmp_path / "README.md"
    path.write_text(readme)
    cmd = [sys.executable, "-m", "icml25", "report", "--package", str(tmp_path), "--update-readme", str(path)]
    out = subprocess.run(cmd + ["--check"], capture_output=True, text=True)
    assert out.returncode == 1 and "inline value" in out.stderr and "0.999" in out.stderr
    assert subprocess.run(cmd, capture_output=True, text=True).returncode == 0
    assert "-->0.910<!--" in path.read_text()
    assert subprocess.run(cmd + ["--check"], capture_output=True, text=True).returncode == 0


def test_a_whole_claim_text_is_exact_even_when_it_prefixes_another(tmp_path):
    r = Report(method="demo", seeds=[0, 1])
    for claim, ours in (("Ours wins at horizon 1", [0.1, 0.2]), ("Ours wins at horizon 10", [0.7, 0.8])):
        r.add(Claim.compare(claim=claim, metric="m", ours=ours, baseline=[0.5, 0.5], baseline_name="b", paper="p"))
    full = tmp_path / "results" / "full"
    full.mkdir(parents=True)
    (full / "results.json").write_text(json.dumps(dict(r.to_dict(), seconds=1.0)))
    runs = load_package(tmp_path)
    assert value_of(runs, 'claim="Ours wins at horizon 1" field=ours fmt=.2f') == "0.15"
    assert value_of(runs, 'claim="Ours wins at horizon 10" field=ours fmt=.2f') == "0.75"
    with pytest.raises(ReportError, match="start of 2 claims"):  # a prefix of both, and neither's whole text
        value_of(runs, 'claim="Ours wins at" field=ours')
