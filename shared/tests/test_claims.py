import json
import math

import pytest
from icml25.claims import Claim, Report, ResultsError, mean_sd, validate_results
from icml25.rundir import RunDir


def test_mean_sd_closed_form():
    m, s = mean_sd([1.0, 2.0, 3.0])
    assert m == 2.0 and s == pytest.approx(1.0)
    assert mean_sd([5.0]) == (5.0, 0.0)


def test_compare_direction_and_margin():
    c = Claim.compare(claim="x", metric="acc", ours=[0.9, 0.8, 0.85], baseline=[0.5, 0.6, 0.55],
                      baseline_name="b", paper="p")
    assert c.holds and c.ours == pytest.approx(0.85) and c.seeds == 3
    two = Claim.compare(claim="x", metric="acc", ours=[0.9, 0.8], baseline=[0.5, 0.6], baseline_name="b", paper="p")
    assert two.verdict == "inconclusive" and not two.holds  # two seeds cannot decide
    lower = Claim.compare(claim="x", metric="err", ours=[0.9], baseline=[0.5], baseline_name="b", paper="p",
                          higher_is_better=False, deterministic=True)
    assert lower.verdict == "fails"
    comparable = Claim.compare(claim="x", metric="acc", ours=0.79, baseline=0.8, baseline_name="b", paper="p",
                               margin=-0.02, deterministic=True)
    assert comparable.holds
    assert not Claim.compare(claim="x", metric="acc", ours=0.7, baseline=0.8, baseline_name="b", paper="p",
                             margin=-0.02, deterministic=True).holds


def _report():
    r = Report(method="demo", seeds=[0, 1])
    r.add(Claim.compare(claim="beats", metric="acc", ours=[0.9, 0.8, 0.85], baseline=[0.5, 0.6, 0.55],
                        baseline_name="b", paper="p"))
    r.add(Claim(claim="fast", metric="Hz", ours=900.0, baseline=None, baseline_name="", holds=True, paper="800+ Hz"))
    r.add_table("t", ["a", "b"], [[1, 2.5]])
    return r


def test_report_roundtrip_and_markdown(tmp_path):
    r = _report()
    rd = RunDir(tmp_path / "r")
    rd.write_results(r)
    data = json.loads((tmp_path / "r" / "results.json").read_text())
    validate_results(data)
    back = Report.from_dict(data)
    assert back.claims[0].ours == pytest.approx(0.85) and back.claims[1].baseline is None
    md = (tmp_path / "r" / "results.md").read_text()
    assert "| beats | paper | acc |" in md and "✅" in md and "## t" in md


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d["claims"][0].pop("holds"), "holds"),
        (lambda d: d["claims"][0].__setitem__("ours", "high"), "ours"),
        (lambda d: d["claims"][0].__setitem__("holds", 1), "holds"),
        (lambda d: d["claims"][0].__setitem__("ours", True), "ours"),
        (lambda d: d["claims"][0].__setitem__("extra", 1), "unknown"),
        (lambda d: d.__setitem__("claims", {}), "claims"),
        (lambda d: d.__setitem__("method", ""), "method"),
    ],
)
def test_validate_rejects_malformed(mutate, field):
    d = _report().to_dict()
    mutate(d)
    with pytest.raises(ResultsError, match=field):
        validate_results(d)


def test_nonfinite_claim_rejected(tmp_path):
    r = Report(method="demo")
    r.add(Claim(claim="x", metric="m", ours=math.nan, baseline=1.0, baseline_name="b", holds=False, paper=""))
    with pytest.raises(ResultsError, match="ours"):
        RunDir(tmp_path / "r").write_results(r)


def test_fmt_seeds_cell():
    from icml25.claims import fmt_seeds

    assert fmt_seeds([1.0, 2.0, 3.0], ".3f", ".3f") == "2.000 ± 1.000"  # sample sd (ddof=1)
    assert fmt_seeds([0.5]) == "0.5"  # one seed: the value alone
    assert fmt_seeds([None, float("nan")]) == "—"
    assert fmt_seeds([1.0, None, float("nan"), 3.0], ".1f", ".1f") == "2.0 ± 1.4"  # missing values dropped
    assert fmt_seeds([1.0, 3.0], ".1f", ".1f") != "2.0 ± 1.0"  # negative control: population sd would give 1.0
