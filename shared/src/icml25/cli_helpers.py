"""CLI helpers every package reuses: shared options, the standard ``reproduce`` command, and ``method_main``.

A package's ``cli.py``::

    from dataclasses import dataclass
    from icml25.cli_helpers import CommonOptions, ReproduceOptions, method_main, reproduce_command
    from mypkg.registry import METHOD

    @dataclass(frozen=True)
    class TrainConfig(CommonOptions):
        lr: float = 1e-3
        \"\"\"Learning rate.\"\"\"

    def train(cfg: TrainConfig) -> int: ...

    def main(argv=None) -> int:
        return method_main(METHOD, {"train": (TrainConfig, train),
                                    "reproduce": (ReproduceOptions, reproduce_command(METHOD))}, argv=argv)

tyro builds the parser from the frozen dataclasses (field docstrings become the help text).

Presets (``--preset NAME``): a command's options class may declare named presets of its defaults, e.g. the paper's
setting and the CPU-scale one::

    _FIT, _FIT_DEFAULT = nested_config(FitConfig, FitConfig.cpu(), hide=("seed",))

    @dataclass(frozen=True)
    class TrainConfig(CommonOptions):
        PRESETS = {"cpu": FitConfig.cpu, "paper": FitConfig.paper}  # name -> zero-argument callable
        PRESET_FIELD = "fit"  # the nested config the presets give (omit it: a preset gives the options' own fields)
        fit: _FIT = _FIT_DEFAULT

``train --preset paper`` then parses with ``fit``'s default built from ``FitConfig.paper()``; flags given on the
command line still override single values (``train --preset paper --epochs 2``). Without ``PRESET_FIELD`` a preset
returns a mapping (or a dataclass) of the options' own field values, a nested config given as a plain config
instance (``{"steps": 10**6, "fit": FitConfig(...)}``). Without ``--preset`` the class's own defaults apply (by
convention the ``cpu`` preset). :func:`method_main` takes ``--preset NAME`` (or ``--preset=NAME``) out of the command
line before tyro parses it; an unknown name is one ``error:`` line naming ``--preset`` and the allowed names (exit
2). :func:`preset_options` gives the same defaults in Python.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from icml25.device import env_threads, thread_policy
from icml25.errors import user_message

# Before any package imports torch: passive OpenMP waiting (and $ICML25_THREADS) for every package CLI. A bad
# $ICML25_THREADS must not raise here (a traceback at import, even for --help): method_main reports it as one line.
try:
    thread_policy()
except ValueError:
    pass


@dataclass(frozen=True)
class BaseOptions:
    """Options shared by every command (no ``--device``: for commands that run on the CPU only)."""

    seed: int = 0
    """Random seed (python, numpy, torch)."""
    out: Path | None = None
    """Run directory; default runs/<method>/<timestamp>. Must not exist or be empty unless --overwrite."""
    overwrite: bool = False
    """Allow writing into an existing, non-empty --out."""
    quiet: bool = False
    """No progress bars or tables on stdout."""
    threads: int | None = None
    """torch/OpenMP threads (default: $ICML25_THREADS, else torch's default); waiting is passive either way."""


@dataclass(frozen=True)
class CommonOptions(BaseOptions):
    """:class:`BaseOptions` plus ``--device``, for commands that pass the device to torch
    (``icml25.device.resolve_device(cfg.device)``). A command that ignores the device derives from
    :class:`BaseOptions` instead, so ``--device`` is never accepted and then silently ignored."""

    device: Literal["auto", "cpu", "cuda", "mps"] = "auto"
    """Device: auto picks cuda, then mps, then cpu."""


@dataclass(frozen=True)
class ReproduceOptions(BaseOptions):
    """Run the method and its baselines side by side and measure the paper's claims (a fixed CPU-scale protocol,
    so there is no ``--device``)."""

    quick: bool = False
    """Small budget (about a minute on 2 CPU cores)."""
    smoke: bool = False
    """Tiny sizes (seconds): checks that everything runs, measures nothing meaningful."""


_OPEN_RUNS: list[Any] = []  # run folders a command opened with open_run_dir; method_main commits or aborts them


def nested_config(config_type: type, default: Any, *, hide: Sequence[str] = (),
                  aliases: Mapping[str, Sequence[str]] | None = None,
                  rename: Mapping[str, str] | None = None) -> tuple[Any, Any]:
    """Nest a method's frozen config dataclass in a command's options, its fields as top-level flags.

    Returns ``(annotation, default)`` for one field of the command's options::

        _FIT, _FIT_DEFAULT = nested_config(FitConfig, FitConfig.cpu(), hide=("seed",))

        @dataclass(frozen=True)
        class TrainConfig(BaseOptions):
            fit: _FIT = _FIT_DEFAULT

    so that ``--lr``, ``--channels`` ... are the config's own fields, help texts and defaults (no copy of them in
    the CLI). ``hide`` drops fields the command's options already carry (``seed``: the command's ``--seed`` is
    passed on with ``.resolve(seed=cfg.seed)``); ``aliases`` keeps older flag names (``{"n_clients": ("--clients",)}``);
    ``rename`` gives a field another flag where two nested configs share a name (``{"steps": "diffusion_steps"}``).
    The parsed value is an instance of a CLI-only subclass; ``.resolve(**overrides)`` returns the plain config
    (picklable, ``type(x) is config_type``).
    """
    from dataclasses import MISSING, field, fields, make_dataclass
    from typing import Annotated, get_type_hints

    import tyro

    if not isinstance(default, config_type):
        raise TypeError(f"default must be a {config_type.__name__}, got {type(default).__name__}")
    names = {f.name for f in fields(config_type)}
    aliases = dict(aliases or {})
    rename = dict(rename or {})
    unknown = (set(hide) | set(aliases) | set(rename)) - names
    if unknown:
        raise TypeError(f"{config_type.__name__} has no field(s) {sorted(unknown)}")
    hints = get_type_hints(config_type, include_extras=True)
    spec = []
    for f in fields(config_type):
        if f.name in hide or f.name in aliases or f.name in rename:
            if f.name in hide:
                marker = tyro.conf.Suppress
            else:
                marker = tyro.conf.arg(name=rename.get(f.name), aliases=tuple(aliases.get(f.name, ())) or None)
            dflt = f.default if f.default is not MISSING else getattr(default, f.name)
            spec.append((f.name, Annotated[hints[f.name], marker], field(default=dflt)))

    def resolve(self, **overrides):
        return config_type(**({f.name: getattr(self, f.name) for f in fields(config_type)} | overrides))

    view = make_dataclass(config_type.__name__, spec, bases=(config_type,), frozen=True,
                          namespace={"resolve": resolve})
    view.__doc__ = config_type.__doc__
    view.__module__ = config_type.__module__
    view.__qualname__ = f"{config_type.__qualname__}.<cli>"
    inst = view(**{f.name: getattr(default, f.name) for f in fields(config_type)})
    return Annotated[view, tyro.conf.OmitArgPrefixes], inst


def _presets_of(cls: type) -> Mapping[str, Callable[[], Any]]:
    """The ``PRESETS`` a command's options class declares (empty if none)."""
    presets = getattr(cls, "PRESETS", None)
    return dict(presets) if presets else {}


def _as_field_default(cls: type, name: str, value: Any) -> Any:
    """``value`` as the default of ``cls``'s field ``name``: a nested config given as a plain config instance is
    rebuilt as the field's own (CLI view) type, so its fields stay flat flags."""
    import dataclasses

    current = next((f for f in dataclasses.fields(cls) if f.name == name), None)
    if current is None:
        raise TypeError(f"preset of {cls.__name__}: {cls.__name__} has no field {name!r}")
    dflt = current.default
    if dflt is dataclasses.MISSING and current.default_factory is not dataclasses.MISSING:
        dflt = current.default_factory()
    if (dataclasses.is_dataclass(dflt) and not isinstance(dflt, type) and dataclasses.is_dataclass(value)
            and type(value) is not type(dflt)):
        target = type(dflt)
        missing = [f.name for f in dataclasses.fields(target) if f.init and not hasattr(value, f.name)]
        if missing:
            raise TypeError(f"preset of {cls.__name__}.{name}: {type(value).__name__} lacks field(s) {missing}")
        return target(**{f.name: getattr(value, f.name) for f in dataclasses.fields(target) if f.init})
    return value


def _preset_values(cls: type, name: str) -> dict[str, Any]:
    """The field defaults preset ``name`` of ``cls`` gives (``{PRESET_FIELD: preset()}`` or the preset's mapping)."""
    import dataclasses

    value = _presets_of(cls)[name]()
    field_name = getattr(cls, "PRESET_FIELD", None)
    if field_name:
        values = {field_name: value}
    elif isinstance(value, Mapping):
        values = dict(value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        values = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    else:
        raise TypeError(f"preset {name!r} of {cls.__name__} must return a mapping or a dataclass instance (or set "
                        f"PRESET_FIELD), got {type(value).__name__}")
    return {k: _as_field_default(cls, k, v) for k, v in values.items()}


def _preset_class(cls: type, name: str | None) -> type:
    """A subclass of ``cls`` whose field defaults are preset ``name``'s (``None``: the class's own defaults), with a
    line about ``--preset`` in its description. :func:`method_main` parses into it and converts back to ``cls``."""
    import dataclasses
    from typing import get_type_hints

    values = _preset_values(cls, name) if name is not None else {}
    hints = get_type_hints(cls, include_extras=True)
    spec = []
    for key, value in values.items():
        try:
            hash(value)
            fld = dataclasses.field(default=value)
        except TypeError:  # a list/dict default: a factory per instance
            fld = dataclasses.field(default_factory=lambda v=value: v)
        spec.append((key, hints[key], fld))
    sub = dataclasses.make_dataclass(cls.__name__, spec, bases=(cls,), frozen=True)
    names = ", ".join(_presets_of(cls))
    chosen = f"here: {name}" if name is not None else "none given: the defaults below"
    sub.__doc__ = ((cls.__doc__ or "").rstrip() + f" --preset NAME ({names}; {chosen}) sets the defaults to a "
                   "named preset (the paper's setting, the CPU scale ...); flags given still override them.")
    sub.__module__ = cls.__module__
    sub.__qualname__ = cls.__qualname__
    return sub


def preset_options(cls: type, name: str, **overrides: Any) -> Any:
    """The options ``cls`` parses to with ``--preset name`` and no other flag (``overrides``: field values, as flags
    would give them)."""
    import dataclasses

    if name not in _presets_of(cls):
        raise ValueError(f"--preset: {name!r} is not one of {', '.join(_presets_of(cls)) or '(no presets)'}")
    values = _preset_values(cls, name) | overrides
    return dataclasses.replace(cls(), **values)


def _take_preset(args: list[str], commands: Mapping[str, tuple[type, Any]]) -> tuple[list[str], str | None]:
    """Take ``--preset NAME`` / ``--preset=NAME`` out of a command line whose command declares ``PRESETS``; returns
    the remaining arguments and the name (``None``: not given). A name the command does not know is refused."""
    if not args or args[0] not in commands:
        return args, None
    presets = _presets_of(commands[args[0]][0])
    if not presets:
        return args, None
    allowed = ", ".join(presets)
    rest, name = [], None
    i = 0
    while i < len(args):
        tok = args[i]
        if tok == "--":
            rest.extend(args[i:])
            break
        flag, eq, val = tok.partition("=")
        if flag == "--preset":
            if not eq:
                if i + 1 >= len(args) or args[i + 1].startswith("-"):
                    raise _ConfigRefused(f"--preset needs a value (one of {allowed})")
                val = args[i + 1]
                i += 1
            if val not in presets:
                raise _ConfigRefused(f"--preset: {val!r} is not one of {allowed}")
            name = val
        else:
            rest.append(tok)
        i += 1
    return rest, name


def open_run_dir(name: str, opts: BaseOptions, *, resume: bool = False):
    """The command's run folder (``--out``, default ``runs/<name>/<timestamp>``), staged unless ``resume``.

    A staged folder is written as a hidden sibling of ``--out``; :func:`method_main` moves it into place when the
    command returns and removes it when the command fails or is interrupted, so a refused or interrupted command
    leaves nothing behind and ``--overwrite`` replaces an old run whole. Print ``rd.target`` (not ``rd.path``) to
    tell the user where the run is.
    """
    from icml25.registry import default_out
    from icml25.rundir import RunDir

    out = opts.out if opts.out is not None else default_out(name)
    rd = RunDir(out, overwrite=opts.overwrite, resume=resume, staged=not resume)
    _OPEN_RUNS.append(rd)
    return rd


def check_out(cfg: Any) -> None:
    """Refuse a bad ``--out`` (a file; a non-empty folder without ``--overwrite``) before any work is done."""
    from icml25.rundir import RunDirError

    out = getattr(cfg, "out", None)
    if out is None:
        return
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise RunDirError(f"--out {str(out)!r} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not getattr(cfg, "overwrite", False):
        raise RunDirError(f"--out {str(out)!r} exists and is not empty; choose a new folder or pass --overwrite")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise RunDirError(f"--out {str(out)!r}: {str(parent)!r} is a file, not a folder")
            break


def run_reproduce(method: Any, *, quick: bool, smoke: bool, out: Path, seed: int, overwrite: bool = False,
                  quiet: bool = False, device: str = "cpu", keep: tuple[str, ...] | None = None) -> Any:
    """Run ``method.reproduce`` into a fresh run directory and write config, env, results.md and results.json.

    The run is staged in a hidden sibling of ``out`` and moved into place when it finishes, so ``--overwrite``
    replaces an old run whole and an interrupted run leaves the old one intact. ``keep``: names of sub-runs committed
    inside ``out`` by separate commands (``out/NAME/results.json``, e.g. ``reproduce --task NAME --out out/NAME``);
    they are carried into the new run unchanged (:meth:`RunDir.carry`) and a note in the results says so. ``None``
    (default): every finished sub-run found there; ``()``: none.
    """
    from icml25.rundir import RunDir

    rd = RunDir(out, overwrite=overwrite, staged=True)
    with rd:
        rd.write_config({"method": method.name, "quick": quick, "smoke": smoke, "seed": seed, "device": device})
        t0 = time.perf_counter()
        report = method.reproduce(quick=quick, smoke=smoke, out=rd.path, seed=seed)
        report.seconds = round(time.perf_counter() - t0, 2)
        report.quick, report.smoke = quick, smoke
        carried = rd.carry(keep)
        if carried:
            report.notes.append("sub-runs carried over unchanged from the run this one replaced (not rerun here; "
                                "their own config.json / env.json / results.json): "
                                + ", ".join(f"{n}/" for n in carried))
        if not report.title:
            report.title = method.title
        rd.write_env(device=device)
        rd.write_results(report)  # results.md, then results.json last
    if not quiet:
        print(report.to_markdown())
        print(f"results written to {rd.target}")
    return report


def reproduce_command(method: Any, *, by_task: Callable[..., Any] | str | None = None
                      ) -> Callable[[ReproduceOptions], int]:
    """The ``reproduce`` command of ``method``.

    ``by_task``: for a package whose reproduce options add a ``task`` field (``reproduce --task NAME``), the function
    run as ``by_task(task=opts.task, quick=, smoke=, out=, seed=)`` instead of ``method.reproduce``; a callable, or
    ``"module:function"`` imported only when the command runs (so the CLI stays light to import).
    """

    def _cmd(opts: ReproduceOptions) -> int:
        from icml25.registry import default_out

        run = method
        task = getattr(opts, "task", None)
        if by_task is not None and task is not None:
            import dataclasses
            import functools
            import importlib

            fn = by_task
            if isinstance(fn, str):
                module, _, name = fn.partition(":")
                fn = getattr(importlib.import_module(module), name)
            bound = functools.partial(fn, task=task)
            if dataclasses.is_dataclass(method):
                run = dataclasses.replace(method, reproduce=bound)
            else:
                import copy

                run = copy.copy(method)
                run.reproduce = bound
        out = opts.out if opts.out is not None else default_out(method.name)
        run_reproduce(run, quick=opts.quick, smoke=opts.smoke, out=out, seed=opts.seed,
                      overwrite=opts.overwrite, quiet=opts.quiet)
        return 0

    return _cmd


class _ConfigRefused(Exception):
    """tyro rejected the command line (or a config's ``__post_init__`` refused a value); the message is one line."""


def _one_line(text: Any) -> str:
    return re.sub(r"\s*\n\s*", " ", str(text)).strip()


def _type_phrase(tp: Any) -> str | None:
    """``int`` -> "an integer", ``float | None`` -> "a number (or None)"; ``None`` for other types."""
    import types
    from typing import Annotated, Union, get_args, get_origin

    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    optional = False
    if get_origin(tp) in (Union, types.UnionType):
        rest = [a for a in get_args(tp) if a is not type(None)]
        optional = len(rest) < len(get_args(tp))
        if len(rest) != 1:
            return None
        tp = rest[0]
    phrase = {int: "an integer", float: "a number", bool: "true or false"}.get(tp)
    if phrase is None:
        return None
    return phrase + (" (or None)" if optional else "")


def _given_values(argv: Sequence[str], flags: Sequence[str]) -> str | None:
    """The value(s) the user gave ``flags`` on the command line (the last occurrence), as typed."""
    norm = {f.replace("_", "-") for f in flags}
    found = None
    for i, tok in enumerate(argv):
        name, eq, val = tok.partition("=")
        if name.replace("_", "-") not in norm:
            continue
        if eq:
            found = val
        else:
            vals = []
            for nxt in argv[i + 1:]:
                if nxt.startswith("--"):
                    break
                vals.append(nxt)
            found = " ".join(vals)
    return found


def _known_flags(cls: type | None) -> list[str]:
    """Every flag of the command ``cls`` (for a "did you mean"); empty where tyro cannot say."""
    if cls is None:
        return []
    try:
        import warnings

        import tyro

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parser = tyro.extras.get_parser(cls)
        return [s for a in parser._actions for s in a.option_strings if s.startswith("--")]
    except Exception:  # pragma: no cover - a tyro without get_parser: no suggestion
        return []


def _did_you_mean(token: str, candidates: Sequence[str]) -> str:
    import difflib

    token = token.partition("=")[0]
    close = difflib.get_close_matches(token, [c for c in candidates if c != token], n=1, cutoff=0.75)
    return f"; did you mean {close[0]}?" if close else ""


def _parse_error_line(event: Any, argv: Sequence[str], commands: Mapping[str, Any]) -> str | None:
    """One line for a tyro parse failure, naming the flag and what it accepts (``None``: an event we don't know)."""
    from tyro import _errors as te

    names = list(commands)
    command = argv[0] if argv and argv[0] in commands else None
    where = f"{event.prog} {command}" if command and not event.prog.endswith(f" {command}") else event.prog
    if isinstance(event, te.InstantiationFailure):
        arg = event.argument
        if arg is None:  # a config's own validation (__post_init__): its message names the field
            return _one_line(event.message)
        flag = "/".join(arg.lowered.name_or_flags) if not arg.is_positional() else str(arg.lowered.metavar)
        given = _given_values(argv, arg.lowered.name_or_flags)
        shown = repr(given) if given is not None else "the value"
        phrase = _type_phrase(arg.field.type) if arg.lowered.nargs in (1, "?") else None
        if phrase is not None:
            return f"{flag}: {shown} is not {phrase}"
        why = _one_line(event.message)
        generic = why.startswith(("Could not", "no type matching"))  # tyro's own wording adds nothing
        return f"{flag}: {shown} does not match {arg.lowered.metavar}" + ("" if generic else f" ({why})")
    if isinstance(event, te.InvalidChoice):
        flag = event.argument.display_name()
        return f"{flag}: {event.value!r} is not one of {', '.join(map(str, event.choices))}"
    if isinstance(event, te.BadValue):
        arg = event.argument
        flag = arg.display_name()
        if event.reason == "too_few_values":
            phrase = _type_phrase(arg.field.type)
            n = arg.lowered.nargs
            want = (f"a value ({phrase})" if phrase else f"a value ({arg.lowered.metavar})") if n in (1, "?") \
                else f"{n} values ({arg.lowered.metavar})" if isinstance(n, int) else f"values ({arg.lowered.metavar})"
            return f"{flag} needs {want}"
        return f"{flag} is fixed and cannot be given a value (got {event.offending_value!r})"
    if isinstance(event, te.UnrecognizedArgs):
        tokens = list(event.tokens)
        if argv and not argv[0].startswith("-") and argv[0] not in commands and tokens and tokens[0] == argv[0]:
            import difflib

            close = difflib.get_close_matches(argv[0], names, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            return f"unknown command {argv[0]!r}: expected one of {', '.join(names)}{hint}"
        if command is None:
            return f"expected a command first, one of {', '.join(names)} (got {tokens[0]!r})"
        flags = [t for t in tokens if t.startswith("-")]
        if flags:
            known = _known_flags(commands[command][0] if command else None)
            known += ["--preset"] if command and _presets_of(commands[command][0]) else []
            hint = _did_you_mean(flags[0], known) if len(flags) == 1 else ""
            return (f"unrecognized option{'s' if len(flags) > 1 else ''} {', '.join(flags)} for {where!r}{hint} "
                    f"(see {where} --help)")
        tok = tokens[0]
        i = list(argv).index(tok) if tok in argv else -1
        after = f" after {argv[i - 1]}" if i > 0 and argv[i - 1].startswith("--") else ""
        return f"unexpected argument {tok!r}{after} (see {where} --help)"
    if isinstance(event, te.MissingSubcommand):
        choices = list(event.subcommand_spec.parser_from_name)
        return f"missing command: expected one of {', '.join(choices)} (see {event.prog} --help)"
    if isinstance(event, te.MissingArgs):
        missing = [a.arg.display_name() for a in event.missing_arguments]
        return f"missing required option{'s' if len(missing) > 1 else ''} {', '.join(missing)} (see {where} --help)"
    if isinstance(event, te.MutexConflict):
        return f"{event.first_token} and {event.second_token} cannot be given together"
    if isinstance(event, te.MissingMutexGroup):
        groups = [" or ".join(a.arg.display_name() for a in g) for g in event.groups]
        return f"missing required option: {'; '.join(groups)}"
    if isinstance(event, te.SubcommandConflict):
        return (f"{event.attempted!r} cannot be selected: {event.already_selected!r} was already selected by "
                f"{event.trigger_flag}")
    return None


def _repeated_flag(argv: Sequence[str]) -> str | None:
    """The first flag given more than once (tyro would silently keep the last value); ``None`` if none is."""
    seen: set[str] = set()
    for tok in argv:
        if tok == "--":
            break
        if not tok.startswith("--") or tok in ("--help",):
            continue
        name = tok.partition("=")[0].replace("_", "-")
        if name in seen:
            return name
        seen.add(name)
    return None


def _config_errors_as_exceptions(argv: Sequence[str] = (), commands: Mapping[str, Any] | None = None):
    """While tyro parses, turn each rejection of the command line into :class:`_ConfigRefused` with one line.

    tyro would otherwise draw a multi-line box ("Unrecognized options", "Invalid choice", "Missing argument" ...),
    and its "Value error" for a flag it could not convert drops the flag's name ("invalid literal for int() with
    base 10: 'nan'"). The one line names the flag and what it accepts (``--epochs: 'nan' is not an integer``). The
    hook API is tyro's internal one (``tyro._errors``): where a tyro version lacks it, the boxes stay and nothing
    else changes; an event this code does not know keeps tyro's box.
    """
    import contextlib

    try:
        from tyro._errors import on_parse_error
    except ImportError:  # pragma: no cover - older/newer tyro without the hook
        return contextlib.nullcontext()

    def _hook(event: Any) -> None:
        try:
            line = _parse_error_line(event, list(argv), commands or {})
        except Exception:  # pragma: no cover - tyro's internal payloads changed: keep its own message
            line = None
        if line is not None:
            raise _ConfigRefused(line)

    return on_parse_error(_hook)


def method_main(
    method: Any,
    commands: Mapping[str, tuple[type, Callable[[Any], int | None]]],
    *,
    argv: Sequence[str] | None = None,
    description: str | None = None,
) -> int:
    """Parse ``argv`` into one of the command dataclasses with tyro and run its function.

    User errors (``ValueError`` and subclasses such as :class:`icml25.errors.UserInputError`, ``OSError`` from a
    user's file, ``SafetensorError``, invalid JSON) print one ``<prog>: error: ...`` line and return 2 instead of a
    traceback (:func:`icml25.errors.user_message`); Ctrl-C prints one line and returns 130.
    """
    import tyro

    types = [cls for cls, _ in commands.values()]
    if len(set(types)) != len(types):
        raise TypeError("each command needs its own config dataclass")
    prog = getattr(method, "cli", "") or method.name
    desc = description or f"{method.title} ({method.venue}). {method.url}"
    args = list(argv) if argv is not None else sys.argv[1:]
    try:
        env_threads()  # a bad $ICML25_THREADS: one line, before anything (even --help)
        repeated = _repeated_flag(args)
        if repeated is not None:
            raise _ConfigRefused(f"{repeated} given more than once; give each option once")
        args, preset = _take_preset(args, commands)
        parse_as = {name: (_preset_class(cls, preset if args and name == args[0] else None)
                           if _presets_of(cls) else cls) for name, (cls, _) in commands.items()}
        with _config_errors_as_exceptions(args, commands):
            cfg = tyro.extras.subcommand_cli_from_dict(parse_as, prog=prog, description=desc, args=args)
        for name, (cls, _) in commands.items():
            if type(cfg) is parse_as[name] and parse_as[name] is not cls:  # a preset's subclass -> the command's class
                import dataclasses

                cfg = cls(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(cls) if f.init})
    except (ValueError, _ConfigRefused) as exc:  # tyro rejected argv, or a config's __post_init__ refused a value
        print(f"{prog}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    for cls, fn in commands.values():
        if type(cfg) is cls:
            _OPEN_RUNS.clear()
            ok = False
            try:
                check_out(cfg)
                threads = getattr(cfg, "threads", None)
                if threads is not None:
                    if threads < 1:
                        raise ValueError(f"--threads: must be a positive integer, got {threads}")
                    thread_policy(threads)
                rc = fn(cfg)
                for rd in _OPEN_RUNS:
                    rd.commit()
                ok = True
            except (ValueError, OSError) as exc:  # incl. UserInputError, JSONDecodeError, h5py's OSError
                msg = user_message(exc)
                if msg is None:  # pragma: no cover - user_message covers both classes
                    raise
                print(f"{prog}: error: {msg}", file=sys.stderr)
                return 2
            except Exception as exc:
                msg = user_message(exc)  # SafetensorError and friends; a genuine bug keeps its traceback
                if msg is None:
                    raise
                print(f"{prog}: error: {msg}", file=sys.stderr)
                return 2
            except KeyboardInterrupt:
                print(f"{prog}: interrupted", file=sys.stderr)
                return 130
            finally:
                if not ok:  # refused, failed or interrupted: nothing half-written is left behind
                    for rd in _OPEN_RUNS:
                        rd.abort()
                _OPEN_RUNS.clear()
            return int(rc or 0)
    raise AssertionError("unreachable: tyro returned an unknown config type")  # pragma: no cover
