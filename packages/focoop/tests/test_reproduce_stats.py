"""The reproduce helpers that decide verdicts: Bonferroni over splits and the OOD-change gate's two-sided test."""

from focoop.reproduce import ALPHA, _bonferroni
from icml25.claims import Claim


def _claim(ours, base):
    return Claim.compare(claim="c", metric="m", ours=ours, baseline=base, baseline_name="b", paper="p", paired=True)


def test_bonferroni_turns_a_marginal_win_inconclusive_and_keeps_a_clear_one():
    base = [0.0, 0.0, 0.0, 0.0, 0.0]
    marginal = _claim([0.02, 0.05, -0.005, 0.04, 0.01], base)  # one-sided p between 0.05/3 and 0.05
    clear = _claim([0.5, 0.52, 0.49, 0.51, 0.5], base)
    assert ALPHA / 3 < marginal.p_value < ALPHA and marginal.verdict == "holds"  # raw level: holds
    _bonferroni([marginal, clear], 3, "fam")
    assert marginal.verdict == "inconclusive" and not marginal.holds
    assert clear.verdict == "holds" and "Bonferroni ×3" in clear.test and "fam" in clear.note
    single = _claim([0.02, 0.05, -0.005, 0.04, 0.01], base)
    _bonferroni([single], 1, "fam")  # a family of one is not corrected
    assert single.verdict == "holds"
