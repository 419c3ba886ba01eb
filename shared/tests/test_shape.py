"""The house shape: Budgets + experiment runner, lazy exports, training helpers, mlp."""

import math
import sys
import types
from dataclasses import dataclass

import pytest
from icml25.claims import Claim
from icml25.experiment import Budgets, Section, run_experiments, seeds_for
from icml25.lazy import lazy_exports
from icml25.train import TrainingDivergedError, check_finite, minibatches


@dataclass(frozen=True)
class Cfg:
    seeds: int = 5
    scale: float = 1.0


BUDGETS = Budgets(smoke=Cfg(seeds=1, scale=0.1), quick=Cfg(seeds=3), full=Cfg())


def test_budgets_pick_and_seeds():
    assert BUDGETS.pick(smoke=True).scale == 0.1 and BUDGETS.pick(quick=True).seeds == 3
    assert BUDGETS.pick() == Cfg() and Budgets.mode(quick=True) == "quick"
    assert seeds_for(Cfg(seeds=3), 10) == [10, 11, 12]
    with pytest.raises(ValueError, match="seeds"):
        seeds_for(Cfg(seeds=0), 0)


def test_run_experiments_merges_sections_in_order(tmp_path):
    seen = []

    def first(cfg, seeds, out):
        seen.append(("first", tuple(seeds)))
        s = Section("first")
        s.add(Claim.compare(claim="a", metric="m", ours=[1.0 + 0.01 * i for i in seeds],
                            baseline=[0.0] * len(seeds), baseline_name="b", paper="p"))
        s.table("t1", ["x"], [[1]])
        return s

    def second(cfg, seeds, out):
        seen.append(("second", tuple(seeds)))
        s = Section("second", figures=["f.png"], notes=["n"])
        s.add(Claim.threshold(claim="fast", metric="Hz", ours=[10.0, 11.0, 12.0], threshold=1.0, paper="p"))
        return s

    r = run_experiments("demo", [first, second], BUDGETS, quick=True, smoke=False, out=tmp_path, seed=4,
                        progress=False)
    assert seen == [("first", (4, 5, 6)), ("second", (4, 5, 6))]
    assert [c.claim for c in r.claims] == ["a", "fast"] and r.seeds == [4, 5, 6]
    assert "t1" in r.tables and r.figures == ["f.png"] and r.notes[0] == "first: " + r.notes[0].split(": ")[1]
    with pytest.raises(TypeError, match="Section"):
        run_experiments("demo", [lambda c, s, o: None], BUDGETS, quick=True, smoke=False, out=tmp_path, seed=0,
                        progress=False)


def test_lazy_exports_resolve_on_first_use():
    mod = types.ModuleType("lazy_demo_pkg")
    sys.modules["lazy_demo_pkg"] = mod
    try:
        mod.__getattr__, mod.__dir__, mod.__all__ = lazy_exports("lazy_demo_pkg", {"sqrt": "math"})
        assert "sqrt" not in vars(mod)
        assert mod.sqrt is math.sqrt and "sqrt" in vars(mod)  # cached after the first access
        with pytest.raises(AttributeError, match="nothing"):
            mod.nothing  # noqa: B018
        assert mod.__dir__() == ["sqrt", "__version__"]
    finally:
        del sys.modules["lazy_demo_pkg"]


def test_lazy_exports_submodules_import_on_first_use():
    import json

    pkg = types.ModuleType("json")  # a stand-in package object whose submodule json.decoder exists
    getattr_, dir_, public = lazy_exports("json", {"dumps": "json"}, submodules=("decoder",))
    saved = sys.modules["json"]
    sys.modules["json"] = pkg
    try:
        assert getattr_("decoder").__name__ == "json.decoder" and "decoder" in vars(pkg)
        with pytest.raises(AttributeError):  # negative control: a name that is neither
            getattr_("encoderx")
        assert public == ["dumps", "decoder", "__version__"]
    finally:
        sys.modules["json"] = saved
    assert json is saved
    with pytest.raises(ValueError, match="both"):
        lazy_exports("x", {"a": "m"}, submodules=("a",))


def test_minibatches_cover_every_index_once_and_are_seeded():
    torch = pytest.importorskip("torch")
    a = list(minibatches(10, 4, seed=1))
    assert [len(b) for b in a] == [4, 4, 2]
    assert sorted(torch.cat(a).tolist()) == list(range(10))
    assert all(torch.equal(x, y) for x, y in zip(a, minibatches(10, 4, seed=1)))
    assert not all(torch.equal(x, y) for x, y in zip(a, minibatches(10, 4, seed=2)))
    assert [len(b) for b in minibatches(10, 4, seed=1, drop_last=True)] == [4, 4]
    with pytest.raises(ValueError, match="batch_size"):
        list(minibatches(10, 0))


def test_check_finite_names_the_step():
    assert check_finite(1.5) == 1.5
    with pytest.raises(TrainingDivergedError, match="step 7"):
        check_finite(float("nan"), step=7)
    assert issubclass(TrainingDivergedError, ValueError)


def test_mlp_shapes_and_validation():
    torch = pytest.importorskip("torch")
    from icml25.nn import mlp

    net = mlp(3, 16, 2, depth=3, layer_norm=True)
    assert net(torch.zeros(5, 3)).shape == (5, 2)
    assert sum(isinstance(m, torch.nn.Linear) for m in net) == 4
    assert [m.out_features for m in mlp(3, [8, 4], 1) if isinstance(m, torch.nn.Linear)] == [8, 4, 1]
    with pytest.raises(ValueError, match="hidden"):
        mlp(3, 0, 1)


def test_batch_stream_epochs_without_replacement():
    import torch
    from icml25.train import TrainingDivergedError, batch_stream, check_finite

    out = list(batch_stream(10, 4, generator=torch.Generator().manual_seed(0), steps=5))
    assert [new for new, _ in out] == [True, False, True, False, True]  # 2 full batches per epoch, rest dropped
    assert all(len(idx) == 4 for _, idx in out)
    for e in (0, 2):  # within an epoch: no row twice (negative control: with replacement would repeat)
        rows = torch.cat([out[e][1], out[e + 1][1]]).tolist()
        assert len(set(rows)) == 8
    # the same generator seed gives the same stream; another seed another one
    again = [idx.tolist() for _, idx in batch_stream(10, 4, generator=torch.Generator().manual_seed(0), steps=5)]
    assert again == [idx.tolist() for _, idx in out]
    other = [idx.tolist() for _, idx in batch_stream(10, 4, generator=torch.Generator().manual_seed(1), steps=5)]
    assert other != again
    # a diverged loss is both a user error and a FloatingPointError (tuning loops skip it)
    with pytest.raises(FloatingPointError, match="step 7"):
        check_finite(float("nan"), step=7)
    assert issubclass(TrainingDivergedError, ValueError)
