"""The reproduction's protocol: validation and test prompts are disjoint and held out, grids are alike."""

import dataclasses

import pytest
from icml25.testbeds import lm
from icml25.tuning import grid_size
from pipa.data import heldout_part, heldout_prompts
from pipa.losses import PIPAError
from pipa.reproduce import METHODS, budget, grids
from pipa.reproduce.common import REUSE, reuse, tuned_methods


def test_validation_and_test_prompts_are_disjoint_and_never_trained_on():
    val = heldout_prompts(300, part="validation", seed=40_000)
    test = heldout_prompts(300, part="test", seed=20_000)
    assert len(val) == len(test) == 300
    assert not set(val) & set(test)
    assert {heldout_part(p) for p in val} == {"validation"} and {heldout_part(p) for p in test} == {"test"}
    train = {e.prompt for e in lm.make_examples("add_scratchpad", 2000, seed=10_000, split="train")}
    assert not train & (set(val) | set(test))
    assert heldout_prompts(20, part="test", seed=1) == heldout_prompts(20, part="test", seed=1)
    with pytest.raises(PIPAError, match="part"):
        heldout_prompts(3, part="train", seed=0)


@pytest.mark.parametrize("quick,smoke", [(False, False), (True, False), (False, True)])
def test_every_method_gets_a_grid_of_the_same_size(quick, smoke):
    b = budget(quick=quick, smoke=smoke)
    g = grids(b)
    assert set(g) == {m[0] for m in METHODS}
    sizes = {name: grid_size(gr) for name, gr in g.items()}
    assert len(set(sizes.values())) == 1, sizes
    for name, _, kind in METHODS:
        assert ("beta" in g[name]) == (not kind.startswith("pipa"))
    assert b.seeds >= (5 if not (quick or smoke) else 1)


def test_full_run_tunes_every_step_level_method_on_its_own_grid():
    full = budget(quick=False, smoke=False)
    assert full.tune_step_levels and reuse(full) == {}
    assert [m[0] for m in tuned_methods(full)] == [m[0] for m in METHODS]
    # negative control: without the flag the six step-level methods take their answer-level counterpart's choice
    off = dataclasses.replace(full, tune_step_levels=False)
    assert reuse(off) == REUSE and len(REUSE) == 6
    tuned = {m[0] for m in tuned_methods(off)}
    assert not tuned & set(REUSE) and set(REUSE.values()) <= tuned
    assert all(m[1].startswith("step") for m in METHODS if m[0] in REUSE)
