"""icml25.cli_helpers presets: ``--preset NAME`` chooses a command's defaults from a named preset (issue #53)."""

from dataclasses import dataclass

import pytest
from icml25.cli_helpers import CommonOptions, method_main, nested_config, preset_options


@dataclass(frozen=True)
class Fit:
    """Fit settings."""

    width: int = 64
    """Hidden width."""
    lr: float = 1e-3
    """Learning rate."""
    seed: int = 0
    """Model seed."""

    @classmethod
    def cpu(cls):
        return cls(width=8)

    @classmethod
    def paper(cls):
        return cls(width=512, lr=3e-4)


_FIT, _FIT_DEFAULT = nested_config(Fit, Fit.cpu(), hide=("seed",))


@dataclass(frozen=True)
class Train(CommonOptions):
    """Train."""

    PRESETS = {"cpu": Fit.cpu, "paper": Fit.paper}
    PRESET_FIELD = "fit"
    steps: int = 3
    """Steps."""
    fit: _FIT = _FIT_DEFAULT


@dataclass(frozen=True)
class Flat(CommonOptions):
    """A command whose presets give its own fields (one of them a nested config)."""

    PRESETS = {"cpu": lambda: {"steps": 3}, "paper": lambda: {"steps": 1000, "fit": Fit.paper()}}
    steps: int = 3
    """Steps."""
    fit: _FIT = _FIT_DEFAULT


@dataclass(frozen=True)
class Plain(CommonOptions):
    """A command without presets."""

    steps: int = 3
    """Steps."""


class _M:
    name = title = venue = url = cli = "m"


def _run(*argv):
    got = []
    rc = method_main(_M, {"train": (Train, got.append), "flat": (Flat, got.append), "plain": (Plain, got.append)},
                     argv=list(argv))
    return rc, (got[0] if got else None)


def test_preset_sets_the_nested_defaults_and_flags_override():
    rc, cfg = _run("train")  # negative control: no --preset gives the class's own (cpu) defaults
    assert rc == 0 and type(cfg) is Train and cfg.fit.resolve() == Fit.cpu()
    rc, cfg = _run("train", "--preset", "paper")
    assert rc == 0 and type(cfg) is Train and cfg.fit.resolve() == Fit.paper()
    rc, cfg = _run("train", "--preset=paper", "--width", "3", "--device", "cuda")
    assert cfg.fit.resolve() == Fit(width=3, lr=3e-4) and cfg.device == "cuda"
    rc, cfg = _run("train", "--width", "5", "--preset", "paper")  # order does not matter
    assert cfg.fit.width == 5 and cfg.fit.lr == 3e-4
    assert _run("train", "--preset", "cpu")[1] == _run("train")[1]
    assert preset_options(Train, "paper").fit.resolve() == Fit.paper()
    assert preset_options(Train, "paper", steps=9).steps == 9


def test_flat_presets_give_own_fields_and_plain_configs_become_the_nested_view():
    rc, cfg = _run("flat", "--preset", "paper")
    assert rc == 0 and type(cfg) is Flat and cfg.steps == 1000 and cfg.fit.resolve() == Fit.paper()
    assert type(cfg.fit) is type(_FIT_DEFAULT)  # still the CLI view: .resolve() works
    assert _run("flat", "--preset", "paper", "--steps", "4")[1].steps == 4
    assert _run("flat")[1].steps == 3


@pytest.mark.parametrize("argv, needle", [
    (("train", "--preset", "huge"), "--preset: 'huge' is not one of cpu, paper"),
    (("train", "--preset"), "--preset needs a value (one of cpu, paper)"),
    (("train", "--preset", "paper", "--preset", "cpu"), "--preset given more than once"),
    (("plain", "--preset", "paper"), "unrecognized option --preset"),  # a command without presets
    (("train", "--prest", "paper"), "did you mean --preset?"),
])
def test_bad_preset_is_one_error_line(argv, needle, capsys):
    rc, cfg = _run(*argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and cfg is None and needle in err and len(err.splitlines()) == 1 and err.startswith("m: error:")


def test_help_names_the_presets_and_shows_the_chosen_defaults(capsys):
    with pytest.raises(SystemExit):
        _run("train", "--preset", "paper", "--help")
    out = capsys.readouterr().out
    assert "--preset NAME (cpu, paper; here: paper)" in out and "512" in out
