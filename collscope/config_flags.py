"""A command's config dataclass as the one source of each flag: name, default, help, type.

A field declared with ``flag(default, "-n", "--iters", help=...)`` carries its command-line
spelling in its metadata; the CLI builds its parser from the fields (``add_flags``), builds the
config back from the parsed flags (``config_from``), and a validation error raised with
``invalid(config, field, detail)`` names the field (``ConfigError.field``) and is shown to the
user under the field's flag ("-n/--iters: 0 must be >= 1"). Pure: no torch, no argparse state.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from collscope.errors import UsageError
from collscope.units import format_size, parse_size

_KEY = "collscope.flag"
REQUIRED: Any = dataclasses.MISSING     # flag(REQUIRED, "--nodes", ...): the user must give it

# Flags every command that runs ranks shares (bench, train, overlap, links).
NPROC_HELP = "spawn N local ranks (default: visible GPUs, else 2); not under a launcher"
BACKEND_HELP = "auto (nccl/rccl with GPUs, else gloo), nccl, gloo, mpi, ucc"
# Pipeline chunk of the hierarchical all-reduce (collscope.hooks.hierarchical), shared by bench
# and train. Chosen by benchmarks/hierarchical_vs_flat.py --chunks (docs/bench.md).
HIER_CHUNK_DEFAULT = 1024**2


@dataclass(frozen=True)
class Flag:
    names: tuple[str, ...]
    help: str
    metavar: str | None = None
    type: Callable[[str], Any] | None = None     # argparse's conversion of the text
    parse: Callable[[str, str], Any] | None = None  # (text, flag label) -> value; UsageError
    to_field: Callable[[Any], Any] | None = None    # flag value -> field value (e.g. % -> 0..1)
    shown: str | None = None                      # the default as written on the command line
    show_default: bool = True
    negate: bool = False                          # "--no-X": a boolean field that is True
    choices: tuple[Any, ...] | None = None
    nargs: str | None = None                      # "+" for a list field
    # With nargs "?": the value of the flag given bare, a deprecated form (--help shows the
    # value as required, the one spelling documented).
    const: Any = None
    action: str | None = None                     # e.g. "extend" (repeatable list flag)
    hidden: bool = False                          # internal: parsed, never shown in --help
    deprecated: tuple[str, ...] = ()              # old spellings: still parsed, said once

    @property
    def label(self) -> str:
        return "/".join(self.names)


def flag(default: Any, *names: str, help: str = "", **options: Any) -> Any:
    """A dataclass field whose flag is ``names`` (options: the other ``Flag`` attributes);
    ``default`` dataclasses.MISSING (``REQUIRED``) makes the flag required; a list default
    or dict default is copied for each instance. A name without a leading "-" is a positional
    argument, named as the field."""
    metadata = {_KEY: Flag(names=names, help=help, **options)}
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: type(default)(default),
                                 metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def list_flag(*names: str, help: str, **options: Any) -> Any:
    """A list field (default empty) whose flag is ``names``, e.g. nargs="+", action="extend"."""
    return dataclasses.field(default_factory=list,
                             metadata={_KEY: Flag(names=names, help=help, **options)})


def backend_flag(help: str = BACKEND_HELP) -> Any:
    """The --backend field of a command that runs ranks (JobSettings: bench, train, overlap,
    links, doctor --all-ranks, tune's trials)."""
    return flag("auto", "--backend", show_default=False, help=help)


def timeout_flag(waits: str, default: float = 300.0) -> Any:
    """The --timeout S field of a command that runs ranks: ``waits`` is what may wait that
    long ("a collective", "a step"), before every rank exits."""
    return flag(default, "--timeout", type=float, metavar="S",
                help=f"seconds {waits} may wait before every rank exits")


def json_flag(help: str) -> Any:
    """The --json FILE field of a command that writes JSON Lines records (``help``: which)."""
    return flag(None, "--json", metavar="FILE", help=help)


def output_flag(metavar: str, help: str) -> Any:
    """The required -o/--output field: the file a command writes its result to."""
    return flag(REQUIRED, "-o", "--output", metavar=metavar, help=help)


def prometheus_flag(what: str) -> Any:
    """The --prometheus [HOST:]PORT field of a command that serves ``what`` to Prometheus
    (collscope.monitor.prometheus.parse_listen reads it)."""
    return flag(None, "--prometheus", metavar="[HOST:]PORT",
                help=f"serve {what} on http://HOST:PORT/metrics (host 127.0.0.1 unless given)")


def command_flag(metavar: str, help: str) -> Any:
    """The field of a wrapped command: every argument after the flags (``-- CMD ARGS``), as
    a list; ``without_separator`` drops the "--" argparse keeps in front of it."""
    return flag([], "command", nargs=argparse.REMAINDER, metavar=metavar, help=help)


def without_separator(command: list[str]) -> list[str]:
    """A command_flag's arguments without their leading "--" (when given)."""
    return command[1:] if command[:1] == ["--"] else command


def hier_chunk_flag() -> Any:
    """The --hier-chunk field of a config that runs the hierarchical all-reduce."""
    return flag(HIER_CHUNK_DEFAULT, "--hier-chunk", parse=parse_size, metavar="SIZE",
                shown=format_size(HIER_CHUNK_DEFAULT),
                help="hierarchical all-reduce: bytes per pipeline chunk (the intra-node steps "
                     "of neighbouring chunks overlap the inter-node step of this one)")


def command_line(config: type, values: dict[str, Any]) -> list[str]:
    """The inverse of ``config_from``: the flags of ``config`` that give its fields ``values``
    (each by its long name; lists comma-joined; a boolean field as its flag when it differs
    from the default). How one command hands another its own flags (tune -> bench)."""
    fields = {item.name: item for item in dataclasses.fields(config)}
    words: list[str] = []
    for name, value in values.items():
        spec: Flag = fields[name].metadata[_KEY]
        if spec.to_field is not None:     # e.g. a percent flag of a fraction field
            raise ValueError(f"{name}: its flag {spec.label} is in other units than the field")
        if isinstance(_default(fields[name]), bool) and spec.type is None:
            if value != _default(fields[name]):
                words.append(spec.names[-1])
            continue
        if value is None:
            continue
        text = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else \
            f"{value:g}" if isinstance(value, float) else str(value)
        words += [spec.names[-1], text]
    return words


def usage_of(command: str, config: type, tail: str) -> str:
    """The usage line of a command whose flags are all ``config``'s, in field order, ending in
    ``tail`` (its positional part, e.g. "-- COMMAND [ARGS...]"), for a parser whose usage
    argparse would write badly (a REMAINDER positional)."""
    parts = [f"collscope {command}"]
    for item in dataclasses.fields(config):
        spec = item.metadata.get(_KEY)
        if spec is None or spec.hidden or not spec.names[0].startswith("-"):
            continue
        name = spec.names[-1]
        if isinstance(_default(item), bool) and spec.type is None:
            parts.append(f"[{name}]")
        else:
            shown = spec.metavar or ("|".join(map(str, spec.choices)) if spec.choices
                                     else _metavar(spec.names))
            parts.append(f"[{name} {shown}]")
    return " ".join([*parts, tail])


def flag_of(config: Any, name: str) -> Flag | None:
    """The flag of field ``name`` of a config class or instance (None when it has none)."""
    for item in dataclasses.fields(config):
        if item.name == name:
            return item.metadata.get(_KEY)
    return None


class ConfigError(UsageError):
    """A config field holds a value it does not accept; shown under the field's flag."""

    def __init__(self, field: str, detail: str, flag: str | None = None) -> None:
        self.field, self.detail, self.flag = field, detail, flag
        super().__init__(f"{flag or field}: {detail}")


def invalid(config: Any, field: str, detail: str) -> ConfigError:
    """The error for field ``field`` of ``config`` (raise it)."""
    spec = flag_of(config, field)
    return ConfigError(field, detail, spec.label if spec else None)


def check_choice(config: Any, field: str, accepted: Collection[str]) -> None:
    """ConfigError on field ``field`` of ``config`` unless its value is one of ``accepted``
    (the one wording of every command: "--algo: 'x' is not accepted; use ring, tree")."""
    value = getattr(config, field)
    if value not in accepted:
        raise invalid(config, field, f"'{value}' is not accepted; use {', '.join(accepted)}")


def stdout_once(config: Any, first: str, second: str) -> None:
    """'-' (stdout) can be one output only: ConfigError on field ``second`` when field
    ``first`` already writes to stdout (e.g. "--json: '-' (stdout) is taken by -o -")."""
    if getattr(config, first) == "-" and getattr(config, second) == "-":
        taken, spec = flag_of(config, first), flag_of(config, second)
        raise invalid(config, second, f"'-' (stdout) is taken by "
                                      f"{taken.names[0] if taken else first} -; give "
                                      f"{spec.label if spec else second} a file name")


def _default(item: dataclasses.Field[Any]) -> Any:
    if item.default is not dataclasses.MISSING:
        return item.default
    if item.default_factory is not dataclasses.MISSING:
        return item.default_factory()
    return None


def _shown(spec: Flag, default: Any) -> str:
    if spec.shown is not None:
        return spec.shown
    return f"{default:g}" if isinstance(default, float) else str(default)


def _metavar(names: tuple[str, ...]) -> str:
    """argparse's own metavar for these names (the flag's, not the field's, e.g. SIZE)."""
    long = [n for n in names if n.startswith("--")]
    return (long or list(names))[0].lstrip("-").replace("-", "_").upper()


def add_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup, config: type,
              names: Iterable[str] | None = None) -> None:
    """One argument per flagged field of ``config`` (all, or ``names`` in that order); help
    ends with "(default X)" from the field's default unless ``show_default`` is off; a
    ``hidden`` flag has no help at all."""
    fields = {item.name: item for item in dataclasses.fields(config) if _KEY in item.metadata}
    for name in fields if names is None else names:
        item = fields[name]
        spec: Flag = item.metadata[_KEY]
        default = _default(item)
        help_text = spec.help
        if spec.show_default and default is not None and not isinstance(default, bool) \
                and (spec.shown is not None or not isinstance(default, (list, dict))):
            help_text += f" (default {_shown(spec, default)})"
        kwargs: dict[str, Any] = {
            "dest": name,
            "help": argparse.SUPPRESS if spec.hidden else help_text.replace("%", "%%") or None}
        if item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
            kwargs["required"] = True
        if isinstance(default, bool) and spec.type is None:
            kwargs["action"] = "store_false" if spec.negate else "store_true"
            # A flag in other units than its field (to_field) leaves the field's default alone.
            kwargs["default"] = argparse.SUPPRESS if spec.to_field else default
        else:
            # A flag in other units than its field (to_field) leaves the field's default alone.
            kwargs["default"] = argparse.SUPPRESS if spec.to_field else default
            if spec.metavar or not spec.choices:      # argparse shows choices as {a,b}
                kwargs["metavar"] = spec.metavar or _metavar(spec.names)
            if spec.type:
                kwargs["type"] = spec.type
            if spec.choices:
                kwargs["choices"] = spec.choices
            if spec.nargs:
                kwargs["nargs"] = spec.nargs
            if spec.const is not None:
                kwargs["const"] = spec.const
            if spec.action:
                kwargs["action"] = spec.action
        if not spec.names[0].startswith("-"):
            # A positional argument: argparse takes its dest from the name (the field's own)
            # and requires it unless nargs says otherwise.
            kwargs.pop("dest")
            kwargs.pop("required", None)
        action = parser.add_argument(*spec.names, **kwargs)
        if spec.nargs == "?" and spec.const is not None:
            action.bare_deprecated = True      # type: ignore[attr-defined]
        if spec.deprecated:
            _add_deprecated(parser, spec, kwargs)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every command's --help: descriptions and epilogs as written; a flag whose bare form is
    deprecated (``const``) shown with its value required (``--json FILE``, not
    ``--json [FILE]``), as every other command writes it."""

    def _format_args(self, action: argparse.Action, default_metavar: str) -> str:
        if getattr(action, "bare_deprecated", False):
            return super()._format_args(
                argparse.Action(action.option_strings, action.dest, metavar=action.metavar),
                default_metavar)
        return super()._format_args(action, default_metavar)


class _DeprecatedSpelling(argparse.Action):
    """An old spelling of a flag: stores as the new one does and says, once per process and
    on stderr only (stdout may carry JSON), which spelling replaces it."""

    def __init__(self, option_strings: Sequence[str], dest: str, replacement: str,
                 store: Any, **kwargs: Any) -> None:
        self.replacement, self.store = replacement, store
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        say_deprecated(option_string or self.option_strings[0], self.replacement)
        setattr(namespace, self.dest, self.store if self.nargs == 0 else values)


_SAID: set[str] = set()


def say_deprecated(old: str, new: str) -> None:
    """'collscope: OLD is deprecated, use NEW (OLD still works)' once per spelling, on the
    process that reads the command line first (not again in each local rank it starts)."""
    import os
    import sys

    from collscope.console import SPAWNED_ENV

    if old in _SAID or os.environ.get(SPAWNED_ENV) or os.environ.get("RANK", "0") != "0":
        return
    _SAID.add(old)
    sys.stderr.write(f"collscope: {old} is deprecated, use {new} ({old} still works)\n")


def _add_deprecated(parser: argparse.ArgumentParser | argparse._ArgumentGroup, spec: Flag,
                    kwargs: dict[str, Any]) -> None:
    """The old spellings of ``spec``: hidden from --help, parsed into the same field."""
    taking_value = kwargs.get("action") not in ("store_true", "store_false")
    options: dict[str, Any] = {"dest": kwargs["dest"], "help": argparse.SUPPRESS,
                               "default": argparse.SUPPRESS,
                               "replacement": spec.names[-1],
                               "store": kwargs.get("action") == "store_true"}
    if taking_value:
        for key in ("type", "choices", "nargs", "metavar"):
            if key in kwargs:
                options[key] = kwargs[key]
    else:
        options["nargs"] = 0
    parser.add_argument(*spec.deprecated, action=_DeprecatedSpelling, **options)


def values(config: type, args: argparse.Namespace) -> dict[str, Any]:
    """The field values the flags of ``config`` hold in ``args`` (texts parsed, converted)."""
    found: dict[str, Any] = {}
    for item in dataclasses.fields(config):
        spec = item.metadata.get(_KEY)
        if spec is None or not hasattr(args, item.name):
            continue
        value = getattr(args, item.name)
        if spec.parse is not None and isinstance(value, str):
            value = spec.parse(value, spec.label)
        if spec.to_field is not None and value is not None:
            value = spec.to_field(value)
        found[item.name] = value
    return found


def config_from(config: type, args: argparse.Namespace, **others: Any) -> Any:
    """``config`` built from its flags in ``args`` plus ``others`` (fields without flags)."""
    return config(**{**values(config, args), **others})
