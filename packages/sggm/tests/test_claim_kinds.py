"""Which reproduce rows count as reproductions (issue 65 / 53 "relabel"): rows true by construction are ``property``;
the topology Spearman ρ is never n copies of one number."""

import pytest
from sggm.config import BUDGETS
from sggm.reproduce import SPEARMAN_CLAIM, horizon, learned, normalisation, spearman_claim, steps, topology


def test_identical_per_seed_rho_is_one_deterministic_value_not_n_samples():
    c = spearman_claim([0.74] * 5, threshold=0.5, paper="p")
    assert c.seeds == 1 and c.ours_values == [0.74] and c.test == "deterministic" and c.verdict == "holds"
    assert c.kind == "paper" and c.claim == SPEARMAN_CLAIM and "one value, not 5 samples" in c.note
    assert spearman_claim([0.3] * 5, threshold=0.5, paper="p").verdict == "fails"


def test_varying_per_seed_rho_is_tested_over_the_seeds():
    # control: seeds that differ keep their n values and get a t-test, not the deterministic shortcut
    c = spearman_claim([0.70, 0.74, 0.78, 0.72, 0.76], threshold=0.5, paper="p")
    assert c.seeds == 5 and len(c.ours_values) == 5 and c.test != "deterministic" and c.verdict == "holds"
    assert spearman_claim([0.2, 0.9, 0.4, 0.8, 0.3], threshold=0.5, paper="p").verdict == "inconclusive"


PROPERTY = (
    "A score error leaves a term that more steps do not remove",
    "The initialisation term (prior N(0, I) instead of the exact p_T) decays with T",
    "Normalisation lowers the error",
    "A learned score adds a score-estimation error: learned vs exact score",
    "Exact-score Euler–Maruyama on a Gaussian converges like h²",  # a property before this change too
)


@pytest.fixture(scope="module")
def claims(tmp_path_factory):
    """The closed-form sections at the smoke budget (one seed; three for the topology ρ)."""
    cfg, out = BUDGETS.smoke, tmp_path_factory.mktemp("sggm")
    return [c for f, seeds in ((steps, [0]), (horizon, [0]), (topology, [0, 1, 2]), (normalisation, [0]))
            for c in f(cfg, seeds, out).claims]


@pytest.mark.slow
def test_learned_vs_exact_score_rows_are_property(tmp_path):
    """The learned section trains networks (slow): learned vs exact score is a property, the family rows stay paper."""
    for c in learned(BUDGETS.smoke, [0], tmp_path).claims:
        want = "property" if c.claim.startswith("A learned score adds a score-estimation error") else "paper"
        assert c.kind == want, c.claim
        assert ("property:" in c.note) == (want == "property"), c.claim


def test_construction_rows_are_property_with_a_reason(claims):
    for c in claims:
        if c.claim.startswith(PROPERTY):
            assert c.kind == "property", c.claim
            assert "property:" in c.note or c.claim.startswith("Exact-score"), c.claim
        else:  # negative control: the rows that can fail stay paper
            assert c.kind == "paper", c.claim
    texts = [c.claim for c in claims]
    assert sum(t.startswith("Normalisation lowers the error") for t in texts) == 2
    for kept in ("The score-error term grows with T", "Feature standardisation lowers", "KL vs T is U-shaped",
                 "Power-law graphs have a larger error", SPEARMAN_CLAIM):
        assert any(t.startswith(kept) for t in texts), kept


def test_topology_rho_is_per_seed_or_one_value(claims):
    rho = next(c for c in claims if c.claim == SPEARMAN_CLAIM)
    vals = rho.ours_values
    assert rho.seeds == len(vals)
    assert len(vals) == 1 or len(set(vals)) > 1  # never n copies of one number
    if rho.test == "deterministic":
        assert "one value, not 3 samples" in rho.note


def test_standard_sets_gate_the_paper_rows(tmp_path):
    """The trained joint model on a standard set: one gate per (model, metric) against the Erdős–Rényi control, with
    the validation curve; the paper row (N) names the joint model's three gates."""
    from icml25.claims import Report

    from sggm.reproduce import STD_METRICS, STD_MODELS, standard_sets

    sec = standard_sets(BUDGETS.smoke, [0, 1], tmp_path)
    gates = [c for c in sec.claims if c.kind == "gate"]
    assert len(gates) == len(STD_MODELS) * len(STD_METRICS) * len(BUDGETS.smoke.std_sets)
    assert all(c.plateau is not None and "Erdős–Rényi" in c.baseline_name for c in gates)
    paper = [c for c in sec.claims if c.kind == "paper"]
    assert len(paper) == len(BUDGETS.smoke.std_sets)
    names = {c.claim for c in gates}
    assert all(len(c.gates) == 3 and set(c.gates) <= names and all("joint" in g for g in c.gates) for c in paper)
    # a 4-step model has not learned anything: its gates cannot hold, so the paper rows become untested
    rep = Report(method="sggm", claims=sec.claims)
    rep.resolve_gates()
    assert all(c.verdict == "untested" for c in rep.claims if c.kind == "paper") or all(
        g.verdict == "holds" for g in gates)
