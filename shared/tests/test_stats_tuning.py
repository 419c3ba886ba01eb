"""Verdicts from per-seed numbers (icml25.stats, Claim.compare/threshold) and the tune-alike helper."""

import math

import numpy as np
import pytest
from icml25.claims import Claim, Report, count_verdicts, validate_results, verdict_summary
from icml25.stats import threshold_verdict, verdict
from icml25.tuning import arithmetic_step, integer_step, select, selections_table, tune_alike

WIN = ([0.90, 0.91, 0.89, 0.92, 0.90], [0.50, 0.52, 0.49, 0.51, 0.50])


def test_clear_win_holds_and_clear_loss_fails():
    v = verdict(*WIN)
    assert v.verdict == "holds" and v.p_value < 1e-6 and v.ci[0] > 0
    loss = verdict(WIN[1], WIN[0])
    assert loss.verdict == "fails" and loss.ci[1] < 0 and loss.p_value > 0.99


def test_tie_inside_noise_is_inconclusive():
    rng = np.random.default_rng(0)
    a, b = 0.8 + 0.05 * rng.standard_normal(5), 0.8 + 0.05 * rng.standard_normal(5)
    v = verdict(a, b)
    assert v.verdict == "inconclusive" and v.ci[0] < 0 < v.ci[1]


def test_welch_matches_scipy_one_sided():
    from scipy import stats

    a, b = [1.0, 1.3, 0.9, 1.2], [0.8, 0.95, 0.7, 1.0, 0.85]
    v = verdict(a, b)
    ref = stats.ttest_ind(a, b, equal_var=False, alternative="greater")
    assert v.p_value == pytest.approx(ref.pvalue, rel=1e-10)
    # the margin shifts the null hypothesis: the same as subtracting it from ours
    vm = verdict(a, b, margin=0.1)
    ref_m = stats.ttest_ind(np.array(a) - 0.1, b, equal_var=False, alternative="greater")
    assert vm.p_value == pytest.approx(ref_m.pvalue, rel=1e-10)


def test_paired_uses_differences_and_beats_unpaired_on_shared_seed_noise():
    from scipy import stats

    seed_effect = np.array([0.0, 0.3, -0.2, 0.5, 0.1])
    a, b = 0.62 + seed_effect, 0.60 + seed_effect + np.array([0.001, -0.002, 0.0, 0.002, -0.001])
    unpaired, paired = verdict(a, b), verdict(a, b, paired=True)
    assert unpaired.verdict == "inconclusive" and paired.verdict == "holds"
    ref = stats.ttest_rel(a, b, alternative="greater")
    assert paired.p_value == pytest.approx(ref.pvalue, rel=1e-10)
    with pytest.raises(ValueError, match="paired"):
        verdict([1, 2, 3], [1, 2], paired=True)


@pytest.mark.parametrize("n", [1, 2])
def test_fewer_than_three_values_is_inconclusive_unless_deterministic(n):
    a, b = [0.9] * n, [0.1] * n
    assert verdict(a, b).verdict == "inconclusive"
    assert verdict(a, b, deterministic=True).verdict == "holds"
    assert verdict(b, a, deterministic=True).verdict == "fails"


def test_zero_variance_both_sides_is_exact():
    assert verdict([2.0] * 3, [1.0] * 3).verdict == "holds"
    assert verdict([1.0] * 3, [2.0] * 3).verdict == "fails"
    # an exact tie at a floor or ceiling says nothing either way: inconclusive, never "fails"
    assert verdict([1.0] * 3, [1.0] * 3).verdict == "inconclusive"
    assert verdict([0.0] * 5, [0.0] * 5, paired=True).verdict == "inconclusive"
    assert verdict([0.0] * 2, [0.0] * 2, deterministic=True).verdict == "inconclusive"
    assert verdict([1.0] * 3, [1.0] * 3, margin=-0.01).verdict == "holds"  # but it is "not worse"


def test_nan_and_inf_rejected():
    with pytest.raises(ValueError, match="ours contains NaN"):
        verdict([1.0, math.nan, 2.0], [1, 2, 3])
    with pytest.raises(ValueError, match="baseline contains NaN"):
        verdict([1, 2, 3], [1.0, math.inf, 2.0])
    with pytest.raises(ValueError, match="test must be"):
        verdict([1, 2, 3], [1, 2, 3], test="magic")


def test_not_worse_than_with_margin():
    ours = [0.795, 0.80, 0.79, 0.801, 0.797]
    base = [0.80, 0.805, 0.799, 0.802, 0.80]
    assert verdict(ours, base, margin=-0.02).verdict == "holds"
    assert verdict(ours, base, margin=0.0).verdict == "fails"
    # lower is better flips the sign
    assert verdict(base, ours, higher_is_better=False, margin=-0.02).verdict == "holds"


def test_bootstrap_is_seeded_and_agrees_with_t_on_clear_cases():
    a = verdict(*WIN, test="bootstrap", seed=3)
    b = verdict(*WIN, test="bootstrap", seed=3)
    assert a == b and a.verdict == "holds"
    rng = np.random.default_rng(1)
    x, y = rng.normal(1, 1, 7), rng.normal(0, 1, 7)
    assert verdict(x, y, test="bootstrap", seed=4).ci != verdict(x, y, test="bootstrap", seed=5).ci
    assert verdict(WIN[1], WIN[0], test="bootstrap").verdict == "fails"
    assert verdict(*WIN, test="bootstrap", paired=True).test == "paired-bootstrap"


def test_threshold_one_sample():
    v = threshold_verdict([900, 950, 920], 800)
    assert v.verdict == "holds"
    assert threshold_verdict([790, 810, 805], 800).verdict == "inconclusive"
    assert threshold_verdict([100, 110, 90], 800).verdict == "fails"
    assert threshold_verdict([0.5, 0.4, 0.6], 1.0, higher_is_better=False).verdict == "holds"


def test_claim_compare_carries_verdict_and_values():
    c = Claim.compare(claim="x", metric="acc", ours=WIN[0], baseline=WIN[1], baseline_name="b", paper="p")
    assert c.verdict == "holds" and c.holds and c.test == "welch" and c.ours_values == WIN[0]
    tie = Claim.compare(claim="x", metric="acc", ours=[0.8, 0.82, 0.79], baseline=[0.81, 0.8, 0.8],
                        baseline_name="b", paper="p")
    assert tie.verdict == "inconclusive" and not tie.holds
    t = Claim.threshold(claim="fast", metric="Hz", ours=[900, 950, 920], threshold=800, paper="p")
    assert t.kind == "target" and t.holds and "800" in t.baseline_name
    with pytest.raises(ValueError, match="kind"):
        Claim.compare(claim="x", metric="m", ours=1, baseline=0, baseline_name="b", paper="p", kind="wish")


def test_report_counts_paper_claims_apart():
    r = Report(method="demo")
    r.add(Claim.compare(claim="a", metric="m", ours=WIN[0], baseline=WIN[1], baseline_name="b", paper="p"))
    r.add(Claim.compare(claim="b", metric="m", ours=WIN[1], baseline=WIN[0], baseline_name="b", paper="p"))
    r.add(Claim.compare(claim="c", metric="m", ours=[1.0], baseline=[0.0], baseline_name="b", paper="p"))
    r.add(Claim.compare(claim="d", metric="m", ours=2, baseline=1, baseline_name="b", paper="p", kind="property",
                        deterministic=True))
    d = r.to_dict()
    validate_results(d)
    assert count_verdicts(d["claims"]) == {"holds": 1, "inconclusive": 1, "fails": 1, "untested": 0}
    assert verdict_summary(d["claims"]).startswith("paper claims: 1 hold, 1 inconclusive, 1 fail, 0 untested")
    md = r.to_markdown()
    assert "✅" in md and "≈" in md and "❌" in md
    d["claims"][0]["holds"] = False
    with pytest.raises(ValueError, match="disagrees"):
        validate_results(d)


def test_select_interior_optimum_of_quadratic_and_flags_edge():
    f = lambda p: -(math.log10(p["lr"]) + 3.0) ** 2  # best at lr = 1e-3
    sel = select(f, {"lr": [1e-4, 1e-3, 1e-2]})
    assert sel.params == {"lr": 1e-3} and sel.at_edge == []
    edge = select(f, {"lr": [1e-6, 1e-5, 1e-4]})
    assert edge.params == {"lr": 1e-4} and edge.at_edge and "highest" in edge.at_edge[0]
    assert "edge" in edge.note()
    ext = select(f, {"lr": [1e-6, 1e-5, 1e-4]}, extend=3)
    assert ext.params["lr"] == pytest.approx(1e-3) and ext.at_edge == []
    assert len(ext.trials) == 5 and ext.grid_size == 3  # 1e-3 then 1e-2 (worse) stop the extension


def test_step_rules_keep_integer_knobs_integer_and_apply_per_knob():
    assert [integer_step([15, 31], u) for u in (False, True)] == [7, 64]
    assert [integer_step([100, 300], u) for u in (False, True)] == [33, 900]
    assert integer_step([1, 2], True) == 4 and integer_step([2, 3], True) == 4  # 4.5 -> 4; 3 would repeat -> 4
    assert all(isinstance(integer_step(v, u), int) for v in ([15, 31], [1, 2], [2, 3]) for u in (False, True))
    assert [arithmetic_step([1, 2], u) for u in (False, True)] == [0, 3]
    # depth best at 3, width best at 64: the default geometric step would propose 4 layers and 33.3 leaves
    f = lambda p: -abs(p["depth"] - 3) - abs(math.log2(p["width"]) - 6)
    grid = {"depth": [1, 2], "width": [16, 32]}
    sel = select(f, grid, extend=1, steps={"depth": arithmetic_step, "width": integer_step})
    assert sel.params == {"depth": 3, "width": 64} and [t["params"] for t in sel.trials[4:]] == [
        {"depth": 3, "width": 32}, {"depth": 3, "width": 64}]
    # negative control: without the rule depth jumps to 4 and misses the optimum at 3
    plain = select(f, grid, extend=1)
    assert plain.params["depth"] != 3 and {"depth": 4, "width": 32} in [t["params"] for t in plain.trials]
    with pytest.raises(ValueError, match="not in the grid"):
        select(f, grid, extend=1, steps={"heads": arithmetic_step})
    # tune_alike gives each competitor only the rules of its own knobs
    both = tune_alike({"a": (f, grid), "b": (lambda p: -abs(p["lr"] - 1), {"lr": [0.25, 0.5, 1.0, 2.0]})},
                      extend=1, steps={"depth": arithmetic_step})
    assert both["a"].params["depth"] == 3 and both["b"].params == {"lr": 1.0}


def test_select_lower_is_better_two_knobs_and_divergence():
    f = lambda p: (p["a"] - 2) ** 2 + (p["b"] - 0.5) ** 2 if p["a"] < 4 else math.nan
    sel = select(f, {"a": [1, 2, 3, 4], "b": [0.0, 0.5, 1.0]}, higher_is_better=False)
    assert sel.params == {"a": 2, "b": 0.5} and sel.at_edge == []
    assert sum(t["score"] is None for t in sel.trials) == 3
    with pytest.raises(ValueError, match="diverged"):
        select(lambda p: math.nan, {"a": [1, 2]})


def test_tune_alike_refuses_unequal_grids_and_tabulates():
    f = lambda p: -abs(p.get("lr", 0) - 1) - abs(p.get("beta", 0) - 1)
    with pytest.raises(ValueError, match="not alike"):
        tune_alike({"ours": (f, {"lr": [0.5, 1, 2]}), "dpo": (f, {"lr": [0.5, 1], "beta": [0.5, 1]})})
    sel = tune_alike({"ours": (f, {"lr": [0.5, 1, 2, 4]}), "dpo": (f, {"lr": [0.5, 1], "beta": [0.5, 1]})})
    assert sel["ours"].params == {"lr": 1} and sel["dpo"].params == {"lr": 1, "beta": 1}
    assert sel["dpo"].at_edge  # beta=1 is the top of its grid
    cols, rows = selections_table(sel)
    assert len(rows) == 2 and len(rows[0]) == len(cols)


def test_thread_policy_passive_by_default_and_explicit_threads():
    from icml25.device import thread_policy

    env: dict[str, str] = {}
    assert thread_policy(environ=env) == {"OMP_WAIT_POLICY": "PASSIVE"} and "OMP_NUM_THREADS" not in env
    user = {"OMP_WAIT_POLICY": "ACTIVE", "ICML25_THREADS": "3"}
    thread_policy(environ=user)
    assert user["OMP_WAIT_POLICY"] == "ACTIVE" and user["OMP_NUM_THREADS"] == "3"
    with pytest.raises(ValueError, match="ICML25_THREADS"):
        thread_policy(environ={"ICML25_THREADS": "many"})
    with pytest.raises(ValueError, match="positive"):
        thread_policy(0, environ={})
