"""``--preset cpu|paper`` on every package's training command (issue #53: the paper's scale, one flag away).

The ``cpu`` preset is the command's own defaults (so a run without ``--preset`` is the CPU-scale one), ``paper``
differs from it, and for three packages the real command line is parsed: ``--preset paper`` gives the paper's
values, an explicit flag still wins, and no ``--preset`` gives ``cpu()``.
"""

from __future__ import annotations

import dataclasses
import importlib

import pytest
from icml25.cli_helpers import preset_options

# package: (cli module, training command, options class, its function in the cli module)
TRAINING = {
    "attn-consensus": ("attn_consensus.cli", "gpt2", "Gpt2Options", "gpt2_command"),
    "earl-bo": ("earl_bo.cli", "optimize", "OptimizeOptions", "optimize_command"),
    "focoop": ("focoop.cli", "run", "RunOptions", "run"),
    "habi": ("habi.cli", "habitize", "HabitizeCliConfig", "habitize_cmd"),
    "habi:train-planner": ("habi.cli", "train-planner", "TrainPlannerConfig", "train_planner_cmd"),
    "k2ie": ("k2ie.cli", "fit", "FitOptions", "fit_command"),
    "kea": ("kea.cli", "train", "TrainConfig", "train"),
    "lcia": ("lcia.cli", "train", "TrainOptions", "train_command"),
    "lift": ("lift.cli", "train", "TrainConfig", "train"),
    "pes": ("pes.cli", "train", "TrainOptions", "train_command"),
    "pipa": ("pipa.cli", "train", "TrainConfig", "train"),
    "private-robust-align": ("private_robust_align.cli", "fit", "FitOptions", "fit"),
    "relgnn": ("relgnn.cli", "train", "TrainConfig", "train"),
    "richardson-tc": ("richardson_tc.cli", "complete", "CompleteOptions", "complete_command"),
    "safediffcon": ("safediffcon.cli", "pretrain", "PretrainOptions", "pretrain"),
    "select-augment": ("select_augment.cli", "train", "TrainOptions", "train_command"),
    "sggm": ("sggm.cli", "train", "TrainOptions", "train_command"),
    "sold": ("sold.cli", "train", "TrainOptions", "train_command"),
    "string-pe": ("string_pe.cli", "train", "TrainConfig", "train"),
    "suica": ("suica.cli", "fit", "FitConfig", "fit"),
}
# the paper's setting is not in the note, so there is nothing larger to scale to (config docstring says so)
PAPER_IS_CPU = {"private-robust-align"}


def _options(name):
    module, _, cls, _ = TRAINING[name]
    return getattr(importlib.import_module(module), cls)


@pytest.mark.parametrize("name", sorted(TRAINING))
def test_cpu_preset_is_the_default_and_paper_differs(name):
    cls = _options(name)
    assert set(cls.PRESETS) >= {"cpu", "paper"}, f"{name}: PRESETS must offer cpu and paper"
    assert preset_options(cls, "cpu") == cls(), f"{name}: the cpu preset must equal the command's defaults"
    paper = preset_options(cls, "paper")
    assert type(paper) is cls
    if name not in PAPER_IS_CPU:
        assert paper != cls(), f"{name}: the paper preset changes nothing"


def test_torch_training_commands_take_a_device():
    """Every training command of a torch package offers --device (the NumPy methods say they run on the CPU)."""
    numpy_methods = {"k2ie", "pes", "private-robust-align", "richardson-tc"}
    for name in TRAINING:
        fields = {f.name for f in dataclasses.fields(_options(name))}
        assert ("device" in fields) == (name.split(":")[0] not in numpy_methods), name


def _parsed(monkeypatch, name, *argv):
    module, command, _, fn = TRAINING[name]
    cli = importlib.import_module(module)
    seen = []
    monkeypatch.setattr(cli, fn, lambda opts: seen.append(opts) or 0)
    assert cli.main([command, *argv]) == 0
    return seen[0]


def test_relgnn_preset_paper_sets_the_nested_fit_config_and_flags_override(monkeypatch):
    from relgnn.config import FitConfig

    assert _parsed(monkeypatch, "relgnn").fit.resolve() == FitConfig.cpu()  # negative control: no --preset
    got = _parsed(monkeypatch, "relgnn", "--preset", "paper", "--device", "cpu")
    assert got.fit.resolve() == FitConfig.paper() and got.fit.channels == 128 and got.device == "cpu"
    got = _parsed(monkeypatch, "relgnn", "--preset", "paper", "--epochs", "3")
    assert got.fit.epochs == 3 and got.fit.channels == 128  # the flag wins, the rest stays the paper's


def test_kea_preset_paper_sets_the_commands_own_fields_and_flags_override(monkeypatch):
    from kea.config import cpu, paper

    assert _parsed(monkeypatch, "kea").steps == 4000 and cpu() == {}  # negative control: the flags' defaults
    got = _parsed(monkeypatch, "kea", "--preset", "paper")
    assert (got.steps, got.size, got.train_freq, got.gradient_steps) == (paper()["steps"], 10, 16, 8)
    got = _parsed(monkeypatch, "kea", "--preset", "paper", "--size", "6")
    assert got.size == 6 and got.steps == 1_000_000


def test_suica_preset_paper_sets_the_model_and_flags_override(monkeypatch):
    from suica.config import SUICAConfig

    assert _parsed(monkeypatch, "suica").model == SUICAConfig.cpu()  # negative control
    got = _parsed(monkeypatch, "suica", "--preset", "paper", "--model.inr-epochs", "5")
    assert got.model == SUICAConfig.paper(inr_epochs=5) and got.model.inr_width == 2048


@pytest.mark.parametrize("argv", [["--preset", "huge"], ["--preset"]])
def test_a_bad_preset_is_one_error_line(argv, capsys):
    from relgnn.cli import main

    assert main(["train", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--preset" in err and "cpu, paper" in err
