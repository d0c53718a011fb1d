"""Config dataclasses as the one source of their flags (collscope.config_flags)."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

import pytest

from collscope.config_flags import (
    REQUIRED,
    ConfigError,
    add_flags,
    command_flag,
    command_line,
    config_from,
    flag,
    flag_of,
    invalid,
    json_flag,
    stdout_once,
    without_separator,
)
from collscope.errors import UsageError
from collscope.units import parse_size


@dataclass
class Sample:
    size_bytes: int = flag(1024, "-b", "--size", parse=parse_size, shown="1K",
                           help="message size")
    iters: int = flag(5, "-n", "--iters", type=int, help="timed iterations")
    gain: float = flag(0.02, "--gain", type=float, to_field=lambda pct: pct / 100, shown="2",
                       metavar="PCT", help="minimum gain in %")
    check: bool = flag(True, "--no-check", negate=True, help="skip the check")
    name: str = "fixed"

    def __post_init__(self) -> None:
        if self.iters < 1:
            raise invalid(self, "iters", f"{self.iters} must be >= 1")
        if self.name == "":
            raise invalid(self, "name", "must not be empty")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="x")
    add_flags(parser, Sample)
    return parser


@pytest.mark.parametrize("argv, expected", [
    ([], Sample()),
    (["-b", "4M", "-n", "3"], Sample(size_bytes=4 << 20, iters=3)),
    (["--gain", "5", "--no-check"], Sample(gain=0.05, check=False)),
])
def test_flags_build_the_config(argv, expected):
    assert config_from(Sample, _parser().parse_args(argv)) == expected


def test_help_shows_the_dataclass_default():
    # Python 3.13's argparse names the metavar once ("-b, --size SIZE"), earlier ones twice.
    text = re.sub(r"(-\w) [A-Z]+, ", r"\1, ", " ".join(_parser().format_help().split()))
    assert "-b, --size SIZE message size (default 1K)" in text
    assert "--gain PCT minimum gain in % (default 2)" in text
    assert "-n, --iters ITERS timed iterations (default 5)" in text
    assert "--no-check skip the check" in text and "(default True)" not in text


def test_errors_name_the_field_and_show_its_flag():
    with pytest.raises(ConfigError) as error:
        config_from(Sample, _parser().parse_args(["-n", "0"]))
    assert (error.value.field, error.value.flag) == ("iters", "-n/--iters")
    assert str(error.value) == "-n/--iters: 0 must be >= 1"
    with pytest.raises(ConfigError, match="^name: must not be empty$"):
        Sample(name="")                                    # a field without a flag
    assert flag_of(Sample, "name") is None


def test_a_bad_size_names_the_flag():
    with pytest.raises(UsageError, match="^-b/--size: '1Q'"):
        config_from(Sample, _parser().parse_args(["-b", "1Q"]))


@dataclass(kw_only=True)
class WithPositionals:
    model: str = flag(REQUIRED, "model", metavar="MODEL.json", help="a model file")
    inputs: list[str] = flag(REQUIRED, "inputs", nargs="+", metavar="INPUT", help="inputs")
    json: str | None = flag(None, "--json", metavar="FILE", help="records")


def test_a_field_without_a_dash_is_a_positional_argument(
        capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="x")
    add_flags(parser, WithPositionals)
    config = config_from(WithPositionals, parser.parse_args(["m.json", "a.log", "b.log"]))
    assert config == WithPositionals(model="m.json", inputs=["a.log", "b.log"])
    with pytest.raises(SystemExit):
        parser.parse_args(["m.json"])            # INPUT is required (nargs "+")
    assert "INPUT" in capsys.readouterr().err


def _grid(texts: list[str]) -> dict[str, int]:
    return {name: int(value) for name, _, value in (t.partition("=") for t in texts)}


@dataclass
class Outputs:
    output: str = flag(REQUIRED, "-o", "--output", metavar="OUT", help="the result")
    json: str | None = json_flag("write the records")
    grid: dict[str, int] = flag({}, "--set", action="append", to_field=_grid,
                                show_default=False, help="NAME=N (repeatable)")
    rank: str | None = flag(None, "--rank-file", metavar="FILE", hidden=True)
    command: list[str] = command_flag("-- CMD ARGS", "the command to run")

    def __post_init__(self) -> None:
        stdout_once(self, "output", "json")


def _outputs_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="x")
    add_flags(parser, Outputs)
    return parser


def test_a_dict_field_is_built_from_its_repeated_flag_and_defaults_empty_per_instance():
    parser = _outputs_parser()
    given = config_from(Outputs, parser.parse_args(["-o", "r", "--set", "a=1", "--set", "b=2"]))
    assert given.grid == {"a": 1, "b": 2}
    first, second = (config_from(Outputs, parser.parse_args(["-o", "r"])) for _ in range(2))
    assert first.grid == {} and first.grid is not second.grid
    assert "NAME=N (repeatable)\n" in parser.format_help() + "\n"     # no "(default {})"


def test_a_hidden_flag_parses_but_is_not_in_help():
    parser = _outputs_parser()
    assert config_from(Outputs, parser.parse_args(["-o", "r", "--rank-file", "f"])).rank == "f"
    assert "--rank-file" not in parser.format_help()


def test_json_flag_and_one_stdout():
    parser = _outputs_parser()
    assert "--json FILE write the records" in " ".join(parser.format_help().split())
    assert config_from(Outputs, parser.parse_args(["-o", "-", "--json", "j"])).json == "j"
    with pytest.raises(ConfigError) as error:
        config_from(Outputs, parser.parse_args(["-o", "-", "--json", "-"]))
    assert str(error.value) == "--json: '-' (stdout) is taken by -o -; give --json a file name"


@pytest.mark.parametrize("argv, command", [
    (["-o", "r"], []),
    (["-o", "r", "--", "python", "-c", "1"], ["python", "-c", "1"]),
    (["-o", "r", "python", "--json", "x"], ["python", "--json", "x"]),   # its own flags
])
def test_a_command_field_takes_everything_after_the_flags(argv, command):
    config = config_from(Outputs, _outputs_parser().parse_args(argv))
    assert without_separator(config.command) == command
    assert config.json is None


@pytest.mark.parametrize("values", [
    {"size_bytes": 4096, "iters": 7, "check": False},
    {"size_bytes": 8, "check": True},
    {"iters": 1},
])
def test_command_line_is_the_inverse_of_config_from(values):
    parser = argparse.ArgumentParser()
    add_flags(parser, Sample)
    words = command_line(Sample, values)
    assert all(not w.startswith("-") or w.startswith("--") for w in words)   # long names
    config = config_from(Sample, parser.parse_args(words))
    assert {name: getattr(config, name) for name in values} == values


def test_command_line_leaves_out_none_and_defaults_of_switches():
    assert command_line(Sample, {"check": True}) == []
    assert command_line(Sample, {"check": False}) == ["--no-check"]
    with pytest.raises(ValueError, match="gain: its flag --gain is in other units"):
        command_line(Sample, {"gain": 0.05})
