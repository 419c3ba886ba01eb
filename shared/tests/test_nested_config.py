"""icml25.cli_helpers.nested_config: a method's config nested in a command's options, its fields as flat flags."""

import pickle
from dataclasses import dataclass, fields
from typing import Literal

import pytest
import tyro
from icml25.cli_helpers import BaseOptions, nested_config


@dataclass(frozen=True)
class FitCfg:
    """Fit settings."""

    width: int = 64
    """Hidden width."""
    n_clients: int = 10
    """Number of clients."""
    mode: Literal["a", "b"] = "a"
    """Mode."""
    seed: int = 0
    """Model seed."""

    @classmethod
    def cpu(cls):
        return cls(width=8)


_FIT, _FIT_DEFAULT = nested_config(FitCfg, FitCfg.cpu(), hide=("seed",), aliases={"n_clients": ("--clients",)})


@dataclass(frozen=True)
class Train(BaseOptions):
    task: str = "t"
    """Task."""
    fit: _FIT = _FIT_DEFAULT


def _parse(*args):
    return tyro.cli(Train, args=list(args))


def test_defaults_come_from_the_preset_and_flags_are_flat():
    o = _parse()
    assert o.fit.resolve() == FitCfg.cpu()  # the preset, not the class defaults
    o = _parse("--width", "5", "--mode", "b", "--clients", "3", "--seed", "7")
    assert o.seed == 7 and o.fit.width == 5 and o.fit.mode == "b" and o.fit.n_clients == 3
    assert _parse("--n-clients", "4").fit.n_clients == 4  # the field's own name still works beside the alias


def test_resolve_returns_the_plain_config_with_overrides():
    o = _parse("--width", "5", "--seed", "7")
    plain = o.fit.resolve(seed=o.seed)
    assert type(plain) is FitCfg and plain == FitCfg(width=5, seed=7)
    assert pickle.loads(pickle.dumps(plain)) == plain
    # negative control: the parsed view itself is a CLI-only subclass, not the plain class
    assert type(o.fit) is not FitCfg and isinstance(o.fit, FitCfg)


def test_hidden_field_is_not_a_flag_and_bad_choices_are_refused():
    with pytest.raises(SystemExit):
        _parse("--fit.seed", "3")
    with pytest.raises(SystemExit):
        _parse("--mode", "c")
    assert {f.name for f in fields(FitCfg)} == {f.name for f in fields(type(_FIT_DEFAULT))}


def test_rename_gives_a_field_another_flag():
    ann, dflt = nested_config(FitCfg, FitCfg(), hide=("seed",), rename={"width": "model_width"})

    @dataclass(frozen=True)
    class Cmd(BaseOptions):
        fit: ann = dflt

    assert tyro.cli(Cmd, args=["--model-width", "3"]).fit.width == 3
    with pytest.raises(SystemExit):  # negative control: the old flag is gone
        tyro.cli(Cmd, args=["--width", "3"])


def test_bad_arguments():
    with pytest.raises(TypeError, match="no field"):
        nested_config(FitCfg, FitCfg(), hide=("nope",))
    with pytest.raises(TypeError, match="no field"):
        nested_config(FitCfg, FitCfg(), rename={"nope": "x"})
    with pytest.raises(TypeError, match="default must be"):
        nested_config(FitCfg, object())
